"""How chat_json asks for JSON, and the `auto` negotiation that finds a way each server accepts.

Servers disagree on `response_format`: OpenAI, vLLM and Ollama take `json_schema`;
llama-cpp-python's server validates `type` against 'text' | 'json_object' and answers a
`json_schema` request with HTTP 500 (its pydantic error as the message), though it enforces a
schema given inside `json_object`; plain endpoints refuse any response_format with a 400.
`auto` walks down LADDER once per (base_url, model) per process and remembers the first
mode the server accepts, so no turn pays for the refusal twice.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any, Literal

import openai
from pydantic import BaseModel

# json_schema: OpenAI, vLLM, Ollama; json_object_schema: llama-cpp-python's server, which rejects
# json_schema but enforces a schema given inside json_object; json_object / none: plain endpoints.
Mode = Literal["json_schema", "json_object_schema", "json_object", "none"]
ResponseFormat = Literal["auto", "json_schema", "json_object_schema", "json_object", "none"]
LADDER: tuple[Mode, ...] = ("json_schema", "json_object_schema", "json_object", "none")

_REFUSAL_STATUSES = {400, 422, 500}
# what a refusal's error text says about the request; "input should be" alone is too broad
# (any pydantic error says it), so the text must also name the format
_REFUSAL_WORDS = ("response_format", "response format", "json_schema", "json_object", "structured output")


def is_format_refusal(exc: BaseException) -> bool:
    """The server refused the response_format itself, not the request: step down, do not retry.

    Only a 400, 422 or 500 whose error names the format counts, so a bad key (401), an unknown
    model (404), a crash (500 about anything else) or a timeout keep the normal retry path.
    """
    if not isinstance(exc, openai.APIStatusError) or exc.status_code not in _REFUSAL_STATUSES:
        return False
    body = exc.body if isinstance(exc.body, dict) else {}
    if body.get("param") == "response_format":
        return True
    text = f"{exc} {exc.body}".lower()
    return any(word in text for word in _REFUSAL_WORDS)


def next_mode(mode: Mode) -> Mode | None:
    """The next, less demanding way to ask for JSON; None after `none` (nothing left to drop)."""
    i = LADDER.index(mode)
    return LADDER[i + 1] if i + 1 < len(LADDER) else None


def request_format(mode: Mode, schema: type[BaseModel]) -> dict[str, Any] | None:
    """The `response_format` a request in this mode carries (None: send none)."""
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()}}
    if mode == "json_object_schema":
        return {"type": "json_object", "schema": schema.model_json_schema()}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def system_text(mode: Mode, system: str, schema: type[BaseModel]) -> str:
    """The system message: where the server does not enforce the schema, the prompt states it."""
    if mode not in ("json_object", "none"):
        return system
    spec = json.dumps(schema.model_json_schema(), ensure_ascii=False, separators=(",", ":"))
    return f"{system.rstrip()}\n\nAnswer with one JSON object matching this JSON schema: {spec}"


# ------------------------------------------------------------------ the per-process cache
@dataclass
class _Entry:
    mode: Mode
    announced: bool = False


_lock = threading.Lock()
_cache: dict[tuple[str, str], _Entry] = {}


def _key(base_url: str, model: str) -> tuple[str, str]:
    return (base_url.rstrip("/"), model)


def start_mode(base_url: str, model: str) -> Mode:
    """Where an `auto` call starts: the mode negotiated earlier in this process, else json_schema."""
    with _lock:
        entry = _cache.get(_key(base_url, model))
        return entry.mode if entry else LADDER[0]


def step_down(base_url: str, model: str, refused: Mode) -> Mode | None:
    """Record that `refused` was refused; the mode to try next (None: every mode refused).

    Threads negotiating at once may each see a refusal; the cache only ever moves down.
    """
    lower = next_mode(refused)
    if lower is None:
        return None
    with _lock:
        entry = _cache.setdefault(_key(base_url, model), _Entry(lower))
        if LADDER.index(lower) > LADDER.index(entry.mode):
            entry.mode, entry.announced = lower, False
        return entry.mode


def confirm(base_url: str, model: str, mode: Mode) -> bool:
    """A call succeeded in `mode`; True once per negotiated mode, so only one line is logged."""
    with _lock:
        entry = _cache.get(_key(base_url, model))
        if entry is None or entry.mode != mode or entry.announced:
            return False
        entry.announced = True
        return True


def describe(model: str, base_url: str, mode: Mode) -> str:
    """The one log line: which modes the server refused and which one works."""
    refused = ", ".join(LADDER[: LADDER.index(mode)])
    return f"LLM {model} at {base_url} refuses {refused}; using {mode}"


def forget() -> None:
    """Drop every negotiated mode (tests; a server swapped behind the same URL)."""
    with _lock:
        _cache.clear()
