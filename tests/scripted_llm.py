"""ScriptedLLM: a test double for the ChatModel interface that answers with scripted raw
strings and parses them exactly as LLMClient does (`extract_json` + `schema.model_validate`).

Each `chat_json` call makes up to `attempts` tries, like LLMClient's retries of unusable
replies: every try takes the next scripted reply (a string, a callable
`(prompt, schema) -> str`, or an exception to raise as a transport failure); when no try
gives a valid object, LLMError(model, attempts, last error) is raised. With the queue
empty, `default` answers (a string or callable); without one, the script is exhausted
and that is an LLMError too (a test asking more than it scripted fails loudly).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, TypeVar, Union

from pydantic import BaseModel, ValidationError

from hippocampus.errors import LLMError
from hippocampus.llm import Prompt, extract_json

T = TypeVar("T", bound=BaseModel)
Reply = Union[str, BaseException, Callable[[Prompt, type], str]]


class ScriptedLLM:
    model = "scripted"

    def __init__(self, replies: list[Reply] | None = None, default: Reply | None = None, attempts: int = 3):
        self.replies: deque[Reply] = deque(replies or [])
        self.default = default
        self.attempts = attempts
        self.calls = 0  # chat_json calls (what a processor sees as one LLM call)
        self.tries = 0  # raw replies consumed, retries included
        self.prompts: list[Prompt] = []

    def queue(self, *replies: Reply) -> "ScriptedLLM":
        self.replies.extend(replies)
        return self

    def chat(self, system: str, user: str) -> str:
        raise LLMError(self.model, 1, "free chat is not scripted")

    def chat_json(self, prompt: Prompt, schema: type[T]) -> T:
        self.calls += 1
        self.prompts.append(prompt)
        last: BaseException | str = "no attempt made"
        for attempt in range(1, self.attempts + 1):
            reply = self._next()
            self.tries += 1
            try:
                if isinstance(reply, BaseException):
                    raise reply
                raw = reply(prompt, schema) if callable(reply) else reply
                return schema.model_validate(extract_json(raw))
            except (ValueError, ValidationError) as exc:  # what LLMClient treats as an unusable reply
                last = exc
            except LLMError:
                raise
            except Exception as exc:  # a scripted transport failure
                last = exc
        raise LLMError(self.model, self.attempts, last)

    def _next(self) -> Reply:
        if self.replies:
            return self.replies.popleft()
        if self.default is not None:
            return self.default
        return LLMError(self.model, self.tries, "the script is exhausted")


def inputs_of(prompt: Prompt) -> dict[str, Any]:
    """The structured inputs a prompt was rendered from (what a responder may look at)."""
    return prompt.inputs
