"""LLMClient: any OpenAI-compatible chat endpoint, with retries and validated JSON."""

from __future__ import annotations

import logging
from typing import Any, Literal, TypeVar
from urllib.parse import urlparse

import openai
from pydantic import BaseModel, ValidationError
from tenacity import RetryError, Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from ..errors import ConfigError, LLMError
from .base import Prompt
from .json_parse import extract_json

log = logging.getLogger(__name__)
T = TypeVar("T", bound=BaseModel)
# json_schema: OpenAI, vLLM, Ollama; json_object_schema: llama-cpp-python's server, which rejects
# json_schema but enforces a schema given inside json_object; json_object / none: plain endpoints.
ResponseFormat = Literal["json_schema", "json_object_schema", "json_object", "none"]

_LOOPBACK = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


def is_transient(exc: BaseException) -> bool:
    """Errors worth retrying: timeouts, connection drops, 429 and 5xx."""
    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return False


class _BadReply(Exception):
    """The model answered, but not with JSON that fits the schema; worth asking again."""


def _retryable(exc: BaseException) -> bool:
    return is_transient(exc) or isinstance(exc, _BadReply)


def require_key(base_url: str | None, key: str, what: str) -> str:
    """A remote endpoint needs an API key; a local one (loopback) may go without."""
    host = (urlparse(base_url or "").hostname or "").lower()
    if not key and host not in _LOOPBACK:
        raise ConfigError(
            f"the {what} endpoint {base_url} is remote but no API key is set: "
            f"export HIPPOCAMPUS_{what.upper()}_API_KEY (or OPENAI_API_KEY)"
        )
    return key


class LLMClient:
    """Chat completions over the `openai` package with any `base_url`.

    `chat_json` asks for a JSON-schema response (`response_format`), parses the
    reply robustly, validates it into the pydantic model, and retries transient
    HTTP errors and unusable replies with exponential backoff; after the last
    attempt it raises LLMError naming the model, the attempts and the last error.
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str = "",
        timeout_s: float = 60.0,
        max_retries: int = 3,
        retry_base_delay_s: float = 1.0,
        response_format: ResponseFormat = "json_schema",
        temperature: float = 0.0,
    ):
        self.model = model
        self.max_retries = max_retries
        self.retry_base_delay_s = retry_base_delay_s
        self.response_format = response_format
        self.temperature = temperature
        self.calls = 0
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=0)

    def chat(self, system: str, user: str) -> str:
        return self._with_retries(lambda: self._complete(system, user, None))

    def chat_json(self, prompt: Prompt, schema: type[T]) -> T:
        fmt = self._format(schema)

        def attempt() -> T:
            reply = self._complete(prompt.system, prompt.user, fmt)
            try:
                return schema.model_validate(extract_json(reply))
            except (ValueError, ValidationError) as exc:
                log.warning("LLM %s gave an unusable reply for %s: %s", self.model, prompt.name, exc)
                raise _BadReply(str(exc)) from exc

        return self._with_retries(attempt)

    # ------------------------------------------------------------------
    def _format(self, schema: type[BaseModel]) -> dict[str, Any] | None:
        if self.response_format == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()}}
        if self.response_format == "json_object_schema":
            return {"type": "json_object", "schema": schema.model_json_schema()}
        if self.response_format == "json_object":
            return {"type": "json_object"}
        return None

    def _complete(self, system: str, user: str, response_format: dict[str, Any] | None) -> str:
        self.calls += 1
        kwargs: dict[str, Any] = {}
        if response_format is not None:
            kwargs["response_format"] = response_format
        resp = self._client.chat.completions.create(
            model=self.model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            temperature=self.temperature,
            **kwargs,
        )
        if not resp.choices:
            raise _BadReply("no choices in reply")
        content = resp.choices[0].message.content
        if not content or not content.strip():
            raise _BadReply("empty reply")
        return content

    def _with_retries(self, fn):
        attempts = 0
        try:
            for attempt in Retrying(
                retry=retry_if_exception(_retryable),
                stop=stop_after_attempt(self.max_retries),
                wait=wait_exponential(multiplier=self.retry_base_delay_s, max=30),
                reraise=True,
            ):
                with attempt:
                    attempts = attempt.retry_state.attempt_number
                    return fn()
        except (openai.OpenAIError, _BadReply, RetryError) as exc:
            raise LLMError(self.model, attempts, exc) from exc
        raise LLMError(self.model, attempts, "no attempt made")  # pragma: no cover
