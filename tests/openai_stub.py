"""A local OpenAI-compatible server on 127.0.0.1 for tests: chat completions, embeddings, faults.

It is a real HTTP server, so the real `openai` client, its timeouts and our retry logic
are exercised end to end; only the model's answers are scripted.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Fault:
    """One injected misbehaviour, consumed by the next request."""

    status: int | None = None
    body: Any = None
    delay_s: float = 0.0
    content: str | None = None
    drop: bool = False
    finish_reason: str = "stop"  # "length": the reply was cut at max_tokens


def hash_embedding(text: str, dim: int = 8) -> list[float]:
    """Deterministic unit vector from a text's bytes (equal texts, equal vectors)."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    raw = [(digest[i % len(digest)] - 127.5) / 127.5 for i in range(dim)]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [x / norm for x in raw]


def llama_cpp_refusal(fmt_type: str) -> dict[str, Any]:
    """What llama-cpp-python's server answers (HTTP 500) to a response_format type other than
    'text' / 'json_object': its request model's pydantic error, wrapped as an internal error."""
    message = (
        "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n"
        f"  Input should be 'text' or 'json_object' [type=literal_error, input_value='{fmt_type}', input_type=str]\n"
        "    For further information visit https://errors.pydantic.dev/2.9/v/literal_error"
    )
    return {"error": {"message": message, "type": "internal_server_error", "param": None, "code": None}}


PLAIN_REFUSAL = {"error": {"message": "Unrecognized request argument supplied: response_format",
                           "type": "invalid_request_error", "param": None, "code": None}}


class OpenAIStub:
    """`refuse_formats`: response_format types refused the llama-cpp-python way (500);
    `refuse_any_format`: any response_format refused the way a plain server does (400)."""

    def __init__(
        self,
        chat: Callable[[dict[str, Any]], str] | None = None,
        embed: Callable[[list[str]], list[list[float]]] | None = None,
        refuse_formats: set[str] | frozenset[str] = frozenset(),
        refuse_any_format: bool = False,
    ):
        self.chat = chat or (lambda body: "{}")
        self.embed = embed or (lambda texts: [hash_embedding(t) for t in texts])
        self.refuse_formats = set(refuse_formats)
        self.refuse_any_format = refuse_any_format
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.faults: list[Fault] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        # a short poll interval: shutdown() waits up to one interval, and tests start many stubs
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> OpenAIStub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next_fault(self) -> Fault | None:
        with self._lock:
            return self.faults.pop(0) if self.faults else None

    def _refusal(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        fmt = body.get("response_format")
        if not isinstance(fmt, dict):
            return None
        if self.refuse_any_format:
            return 400, PLAIN_REFUSAL
        if fmt.get("type") in self.refuse_formats:
            return 500, llama_cpp_refusal(str(fmt.get("type")))
        return None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    self.close_connection = True

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "stub-model", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "invalid JSON body", "type": "invalid_request_error"}})
                    return
                path = self.path.split("?")[0].rstrip("/")
                with stub._lock:
                    stub.requests.append((path, body))
                fault = stub._next_fault()
                if fault is not None:
                    if fault.delay_s:
                        time.sleep(fault.delay_s)
                    if fault.drop:
                        self.close_connection = True
                        try:
                            self.connection.shutdown(2)
                        except OSError:
                            pass
                        return
                    if fault.status is not None:
                        payload = fault.body if fault.body is not None else {
                            "error": {"message": f"injected {fault.status}", "type": "stub_fault", "code": fault.status}
                        }
                        self._send(fault.status, payload)
                        return
                refusal = stub._refusal(body) if path.endswith("/chat/completions") else None
                if refusal is not None:
                    self._send(*refusal)
                    return
                if path.endswith("/chat/completions"):
                    content = fault.content if fault is not None and fault.content is not None else stub.chat(body)
                    self._send(
                        200,
                        {
                            "id": "chatcmpl-stub",
                            "object": "chat.completion",
                            "created": int(time.time()),
                            "model": body.get("model", "stub-model"),
                            "choices": [
                                {"index": 0, "message": {"role": "assistant", "content": content},
                                 "finish_reason": fault.finish_reason if fault is not None else "stop"}
                            ],
                            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
                        },
                    )
                elif path.endswith("/embeddings"):
                    texts = body.get("input")
                    texts = [texts] if isinstance(texts, str) else list(texts or [])
                    vectors = stub.embed(texts)
                    self._send(
                        200,
                        {
                            "object": "list",
                            "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
                            "model": body.get("model", "stub-embed"),
                            "usage": {"prompt_tokens": 0, "total_tokens": 0},
                        },
                    )
                else:
                    self._send(404, {"error": {"message": f"no route {path}"}})

        return Handler
