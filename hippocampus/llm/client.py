"""LLMClient: any OpenAI-compatible chat endpoint, with retries and validated JSON."""

from __future__ import annotations

import logging
from typing import Any, TypeVar
from urllib.parse import urlparse

import openai
from pydantic import BaseModel, ValidationError
from tenacity import RetryError, Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from ..errors import ConfigError, LLMError
from ..observability import tracing
from . import formats
from .base import Prompt
from .formats import Mode, ResponseFormat
from .json_parse import extract_json

log = logging.getLogger(__name__)
T = TypeVar("T", bound=BaseModel)

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


class _CutOff(Exception):
    """The reply stopped at max_tokens: asking again at the same settings gives the same cut, so no retry."""


class _Refused(Exception):
    """The server refused the response_format: not transient, so no retry; `auto` steps down."""

    def __init__(self, error: openai.APIStatusError):
        super().__init__(str(error))
        self.error = error


class _Reply(str):
    """The reply's text; `cut_off` when the server stopped it at max_tokens."""

    cut_off: bool

    def __new__(cls, text: str, cut_off: bool = False) -> _Reply:
        reply = super().__new__(cls, text)
        reply.cut_off = cut_off
        return reply


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

    `chat_json` asks for JSON the way `response_format` says (`auto`: negotiated once per
    server and model, see formats.py), parses the reply robustly, validates it into the
    pydantic model, and retries transient HTTP errors and unusable replies with exponential
    backoff; after the last attempt it raises LLMError naming the model, the attempts and the
    last error.
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str = "",
        timeout_s: float = 60.0,
        max_retries: int = 3,
        retry_base_delay_s: float = 1.0,
        response_format: ResponseFormat = "auto",
        temperature: float = 0.0,
        max_tokens: int | None = 2048,
    ):
        self.model = model
        self.max_tokens = max_tokens
        self.base_url = base_url
        # how errors name it: the offline provider's default name would mislead when llm_model was left unset
        self.label = model if model != "offline-rules" else f"(llm_model not set) at {base_url}"
        self.max_retries = max_retries
        self.retry_base_delay_s = retry_base_delay_s
        self.response_format = response_format
        self.temperature = temperature
        self.calls = 0
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=0)

    def chat(self, system: str, user: str) -> str:
        return str(self._with_retries(lambda: self._complete(system, user, None)))

    def chat_json(self, prompt: Prompt, schema: type[T]) -> T:
        auto = self.response_format == "auto"
        mode: Mode = formats.start_mode(self.base_url, self.model) if auto else self.response_format  # type: ignore[assignment]
        while True:
            try:
                result = self._with_retries(lambda m=mode: self._attempt_json(prompt, schema, m))
            except _Refused as refused:
                lower = formats.step_down(self.base_url, self.model, mode) if auto else None
                if lower is None:
                    raise LLMError(self.model, 1, refused.error, message=(
                        f"LLM {self.model!r} refuses response_format {mode}; set llm_response_format to auto "
                        f"or a mode it accepts: {' '.join(str(refused.error).split())[:300]}")) from refused.error
                mode = lower
                continue
            if auto and formats.confirm(self.base_url, self.model, mode):
                log.warning(formats.describe(self.model, self.base_url, mode))
            return result

    # ------------------------------------------------------------------
    def _attempt_json(self, prompt: Prompt, schema: type[T], mode: Mode) -> T:
        tracing.llm_attempt(mode)  # the LLM span's attempts and negotiated format (tracing.py)
        system = formats.system_text(mode, prompt.system, schema)
        try:
            reply = self._complete(system, prompt.user, formats.request_format(mode, schema))
        except openai.APIStatusError as exc:
            if mode != "none" and formats.is_format_refusal(exc):
                raise _Refused(exc) from exc
            raise
        try:
            return schema.model_validate(extract_json(reply))
        except (ValueError, ValidationError) as exc:
            if reply.cut_off:
                raise _CutOff(f"the reply for {prompt.name} stopped at max_tokens={self.max_tokens} "
                              "before its JSON was complete; raise llm_max_tokens") from exc
            log.warning("LLM %s gave an unusable reply for %s: %s", self.model, prompt.name, exc)
            raise _BadReply(str(exc)) from exc

    def _complete(self, system: str, user: str, response_format: dict[str, Any] | None) -> _Reply:
        self.calls += 1
        kwargs: dict[str, Any] = {}
        if response_format is not None:
            kwargs["response_format"] = response_format
        if self.max_tokens is not None:  # a small local model can repeat itself until its context ends
            kwargs["max_tokens"] = self.max_tokens
        resp = self._client.chat.completions.create(
            model=self.model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            temperature=self.temperature,
            **kwargs,
        )
        tracing.llm_usage(resp)  # tokens in and out, finish reason
        if not resp.choices:
            raise _BadReply("no choices in reply")
        content = resp.choices[0].message.content
        if not content or not content.strip():
            raise _BadReply("empty reply")
        return _Reply(content, cut_off=resp.choices[0].finish_reason == "length")

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
        except (openai.OpenAIError, _BadReply, _CutOff, RetryError) as exc:
            raise LLMError(self.label, attempts, exc) from exc
        raise LLMError(self.model, attempts, "no attempt made")  # pragma: no cover
