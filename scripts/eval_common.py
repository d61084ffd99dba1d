"""What the sections of scripts/eval_processors.py share: ratios, keyword and fact matching,
the episodic record a case describes, the meters that count a model's calls, seconds
and valid JSON replies, and the prompts folder the processors read (--prompts-dir). No section
lives here; importing it has no side effects."""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import openai

from hippocampus.errors import LLMError
from hippocampus.llm import LLMClient, Prompt
from hippocampus.llm import client as _client_module
from hippocampus.models import MemoryRecord

try:  # the facts guard's matching; without it a must_keep item needs its own words
    from hippocampus.processors import facts as _facts
except ImportError:  # pragma: no cover - an older checkout
    _facts = None  # type: ignore[assignment]


_PROMPTS: dict[str, Path | None] = {"dir": None}


def set_prompts_dir(path: Path | None) -> list[str]:
    """Every processor the sections build reads its prompt from `path` where a file of its name is
    there (`prompts_dir`, as Memory does); returns those names, which the report records."""
    if path is not None and not path.is_dir():
        raise ValueError(f"--prompts-dir {path} is not a folder")
    _PROMPTS["dir"] = path
    return sorted(f.stem for f in path.glob("*.yaml")) if path is not None else []


def prompts_dir() -> Path | None:
    """The folder `set_prompts_dir` chose (None: the packaged prompts)."""
    return _PROMPTS["dir"]


def ratio(num: float, den: float) -> float:
    return num / den if den else float("nan")


class Confusion:
    """Binary decisions against labels (None: the model failed), with the groups each case falls in."""

    def __init__(self) -> None:
        self.tp = self.fp = self.fn = self.tn = 0
        self.groups: dict[str, list[int]] = {}

    def add(self, got: bool | None, want: bool, *groups: str) -> bool:
        ok = got is want
        self.tp += ok and want
        self.tn += ok and not want
        self.fp += (got is True) and not want
        self.fn += (got is not True) and want
        for name in groups:
            self.groups.setdefault(name, []).append(int(ok))
        return ok

    def metrics(self, n: int) -> dict[str, float]:
        out = {"accuracy": ratio(self.tp + self.tn, n), "precision": ratio(self.tp, self.tp + self.fp),
               "recall": ratio(self.tp, self.tp + self.fn)}
        out.update({name: ratio(sum(v), len(v)) for name, v in sorted(self.groups.items())})
        return out


def has(text: str, keyword: str) -> bool:
    """`keyword` in `text`, NFKC-normalised and case-folded."""
    norm = lambda s: unicodedata.normalize("NFKC", s).casefold()  # noqa: E731
    return norm(keyword) in norm(text)


# ------------------------------------------------------------------ must_keep items
def keeps(text: str, item: str | Sequence[str]) -> bool:
    """Does `text` state this must_keep fact? An item is a string, or a list of spellings
    (any one will do). A spelling counts when its own words are in the text, or when the facts
    guard finds facts in it (a number with its unit, a date, a time, a name) and the text keeps
    every one of them: "$2,150" is kept by "2150 dollars", "May 12" by "12 May"."""
    spellings = [item] if isinstance(item, str) else list(item)
    return any(_keeps_one(text, spelling) for spelling in spellings)


def _keeps_one(text: str, spelling: str) -> bool:
    if has(text, spelling):
        return True
    if _facts is None:
        return False
    found = _facts.facts(spelling)
    return bool(found) and all(_facts.kept(fact, text) for fact in found)


def lost(text: str, items: Sequence[str | Sequence[str]]) -> list[str]:
    """The must_keep items `text` does not state (a list of spellings shown by its first)."""
    return [item if isinstance(item, str) else item[0] for item in items if not keeps(text, item)]


def record(memory: dict[str, Any], cid: str, memory_id: int | None = None) -> MemoryRecord:
    """The episodic record a case's memory describes (text, context, thing, time, chat, who)."""
    from datetime import datetime

    when = memory.get("time", "")
    try:
        ts = int(datetime.fromisoformat(when.replace("Z", "+00:00")).timestamp()) if when else 0
    except ValueError:
        ts = 0
    chat, who = memory.get("chat_id", "eval"), memory.get("who", "user")
    meta = {"context": memory.get("context", ""), "thing": memory.get("thing", memory["text"]), "time": when, "chatid": chat, "who": who}
    return MemoryRecord(id=memory_id if memory_id is not None else abs(hash(cid)) % 10**9, user_id="eval", memory_type="episodic",
                        ts=ts, chat_id=chat, who=who, text=memory["text"], metadata=meta)


# ------------------------------------------------------------------ meters
class CountingClient(LLMClient):
    """LLMClient that also counts the replies it got and how many of them were valid JSON that
    fit the schema (`valid_json_rate`). A refusal of the response_format or a transport error is
    no reply; an unusable reply (not JSON, or not the schema) is one, and LLMClient asks again."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.replies = 0
        self.valid = 0

    def _attempt_json(self, prompt: Prompt, schema: Any, mode: Any) -> Any:  # LLMClient's one try
        try:
            result = super()._attempt_json(prompt, schema, mode)
        except openai.OpenAIError:
            raise
        except Exception as exc:
            if isinstance(exc, getattr(_client_module, "_BadReply", ())):
                self.replies += 1
            raise
        self.replies += 1
        self.valid += 1
        return result


class Metered:
    """A ChatModel wrapper: processor calls (`asks`), the seconds they took, and failed calls
    (LLMError after the model's own retries); reply counts come from the model when it keeps them."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.model = getattr(inner, "model", "?")
        self.asks = 0
        self.failures = 0
        self.seconds = 0.0

    @property
    def calls(self) -> int:  # HTTP requests for a client (retries included); chat_json calls otherwise
        return int(getattr(self.inner, "calls", self.asks))

    def chat(self, system: str, user: str) -> str:
        return self.inner.chat(system, user)

    def chat_json(self, prompt: Prompt, schema: Any) -> Any:
        self.asks += 1
        start = time.perf_counter()
        try:
            return self.inner.chat_json(prompt, schema)
        except LLMError:
            self.failures += 1
            raise
        finally:
            self.seconds += time.perf_counter() - start

    def snapshot(self) -> dict[str, float]:
        return {"asks": self.asks, "failures": self.failures, "seconds": self.seconds, "calls": self.calls,
                "replies": getattr(self.inner, "replies", float("nan")), "valid": getattr(self.inner, "valid", float("nan"))}

    @staticmethod
    def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
        """The per-section figures: seconds per model call, valid JSON rate, requests."""
        asks = after["asks"] - before["asks"]
        replies = after["replies"] - before["replies"]
        return {"seconds_per_call": ratio(after["seconds"] - before["seconds"], asks),
                "valid_json_rate": ratio(after["valid"] - before["valid"], replies) if replies == replies else float("nan"),
                "model_calls": asks, "llm_requests": after["calls"] - before["calls"]}


def add_model_arguments(p: Any, max_tokens_help: str = "a reply's token cap") -> None:
    """--local / --base-url / --model / --timeout / --max-tokens: the model the behaviour sets are run with
    (scripts/eval_forget.py, scripts/eval_instructions.py); the offline rules without them."""
    p.add_argument("--local", action="store_true", help="the server and model `scripts/local_llm.py serve` recorded")
    p.add_argument("--base-url", help="an OpenAI-compatible endpoint (loopback) instead of the offline rules")
    p.add_argument("--model", help="model name at --base-url (with --local: overrides the recorded one)")
    p.add_argument("--timeout", type=float, default=180.0, help="seconds per model call")
    p.add_argument("--max-tokens", type=int, default=512, help=max_tokens_help)


def model_settings(p: Any, args: Any) -> tuple[dict[str, Any], str]:
    """(MemoryConfig overrides for the chosen model, a line naming it); p.error() on a contradiction."""
    if not (args.local or args.base_url):
        return {}, "offline rules provider"
    if args.local and args.base_url:
        p.error("--local reads the server from scripts/local_llm.py's state; leave out --base-url")
    if args.local:
        from scripts import local_llm

        state = local_llm.recorded_server(p.error)
        url, model = state["url"], args.model or state["model"]
    else:
        if not args.model:
            p.error("--base-url needs --model")
        url, model = args.base_url, args.model
    llm = {"llm_provider": "openai", "llm_base_url": url, "llm_model": model, "llm_timeout_s": args.timeout,
           "llm_max_tokens": args.max_tokens}
    return llm, f"model {model} at {url}"
