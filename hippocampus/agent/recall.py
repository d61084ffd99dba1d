"""The agent's recall loop: before answering, ask the model whether the conversation and what was
recalled so far are enough, search for what it says it needs, and ask again, a few rounds at most.
The result is a block for the agent's prompt, inside the same <data> delimiters as `Memory.context`
(no recalled text can close them), and a record of every round.

Memory never breaks a turn: a failed search or a failed model gives an empty (or partial) context
and a warning, logged; only a malformed argument (a programming error) raises.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field, PrivateAttr

from .. import validation as V
from ..errors import InvalidInput
from ..lifecycle.prompt_block import render
from ..llm import ChatModel
from ..llm.rules.monitor import used
from ..models import MemoryRecord, now_ts, ts_to_iso
from ..models.base import Model
from ..processors.recall_planner import RecallPlanner
from ._common import describe, log, prompts_dir, resolve_model

RECALL_LIMIT = 5  # memories a round adds at most
MAX_QUERY_CHARS = 2000  # the offline query: the end of the user's last message
MODEL_MODE = "model: the RecallPlanner says what to recall, round by round"
OFFLINE_MODE = "offline: one recall with the user's own words"
SECTION = "Recalled for this conversation"


class RecallRound(Model):
    """One round: what the model said it needs, the query searched, the new memories it found."""

    need: str = ""  # "" when the model could answer, or offline (no model is asked)
    query: str = ""  # what was searched ("" when nothing was)
    hit_ids: list[int] = Field(default_factory=list)  # memories this round added (not seen in an earlier round)
    note: str = ""  # why the loop stopped here, when it did


class RecallResult(Model):
    """What `recall_loop` found: `context` for the agent's prompt ("" when nothing was recalled)."""

    context: str = ""
    rounds: list[RecallRound] = Field(default_factory=list)
    answerable: bool = False  # the model said it can answer (never offline: nobody asked)
    llm_calls: int = 0
    mode: str = MODEL_MODE
    memory_ids: list[int] = Field(default_factory=list)  # every memory in `context`, in its order
    warnings: list[str] = Field(default_factory=list)  # what failed; the turn goes on without it
    _texts: dict[int, str] = PrivateAttr(default_factory=dict)  # id -> text of what `context` holds

    @property
    def texts(self) -> list[str]:
        """The recalled memories' texts, in `memory_ids` order."""
        return [self._texts.get(i, "") for i in self.memory_ids]

    def used_by(self, answer: str) -> list[int]:
        """The recalled memories that `answer` repeats (a name, place or number of one, or two of its
        content words: the offline KnowledgeMonitor's rule), for `mark_used` after the turn. Word
        overlap, not understanding: an answer that paraphrases a memory is missed."""
        return [i for i in self.memory_ids if used(self._texts.get(i, ""), answer)]


def _turns(messages: Any) -> list[dict[str, str]]:
    _text, turns = V.messages_to_text(messages)
    return turns


def _last_user_words(turns: Sequence[dict[str, str]]) -> str:
    said = [t["content"] for t in turns if t.get("role", "user") == "user" and t["content"].strip()]
    text = said[-1] if said else next(t["content"] for t in reversed(turns) if t["content"].strip())
    return " ".join(text[-MAX_QUERY_CHARS:].split())


def _search(memory: Any, query: str, user_id: str, seen: set[int]) -> list[MemoryRecord]:
    """The new memories of this user that `query` recalls, best first (raises what search raises)."""
    hits = memory.search(query, user_id=user_id, limit=RECALL_LIMIT).all[:RECALL_LIMIT]
    out = []
    for hit in hits:
        rec = hit.memory
        if rec.user_id == user_id and rec.id not in seen:  # search is scoped; checked again all the same
            seen.add(rec.id)
            out.append(rec)
    return out


def _warn(result: RecallResult, text: str) -> None:
    log.warning("recall_loop: %s", text)
    result.warnings.append(text)


def recall_loop(memory: Any, messages: str | list[dict[str, str]], user_id: str, max_rounds: int = 3, *,
                llm: ChatModel | None = None, dates: bool = True) -> RecallResult:
    """Recall what the agent needs to answer the last message of `messages` (a string, or
    OpenAI-style {"role", "content"} dicts) from `user_id`'s memories, through `memory` (a Memory,
    or a Client with `llm` given). With a model: each round one RecallPlanner call ("can you answer
    from the conversation and what was recalled so far? if not, what do you need?"); the need is
    searched (up to 5 memories) and what is new is added; the loop stops when the model can answer,
    when a need recalls nothing new (said so in the round), or after `max_rounds`. With the offline
    rules: one recall with the user's last message as the query, no model asked (`mode` says so).

    Raises InvalidInput for malformed messages, user_id or max_rounds only; a failed search or model
    is a warning in the result (logged), with the context recalled before it."""
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or not 1 <= max_rounds <= 10:
        raise InvalidInput(f"max_rounds must be a whole number from 1 to 10, got {max_rounds!r}")
    user_id = V.check_id("user_id", user_id)
    turns = _turns(messages)
    model, offline, warning = resolve_model(memory, llm)
    result = RecallResult(mode=OFFLINE_MODE if offline else MODEL_MODE)
    if warning:
        _warn(result, warning)
    recalled: list[MemoryRecord] = []
    seen: set[int] = set()
    try:
        if offline:
            _offline_round(memory, turns, user_id, result, recalled, seen)
        else:
            _model_rounds(memory, model, turns, user_id, max_rounds, result, recalled, seen)
    except Exception as exc:  # memory never breaks a turn: keep what was recalled before it
        _warn(result, f"recall failed ({describe(exc)}); the answer goes on with {len(recalled)} recalled memories")
    result.memory_ids = [r.id for r in recalled]
    result._texts = {r.id: r.text for r in recalled}
    result.context = render([(SECTION, r) for r in recalled], dates=dates)
    return result


def _offline_round(memory: Any, turns: Sequence[dict[str, str]], user_id: str, result: RecallResult,
                   recalled: list[MemoryRecord], seen: set[int]) -> None:
    query = _last_user_words(turns)
    result.rounds.append(RecallRound(query=query, note="offline: no model to ask what else is needed"))
    found = _search(memory, query, user_id, seen)
    recalled += found
    result.rounds[-1].hit_ids = [r.id for r in found]


def _model_rounds(memory: Any, model: ChatModel, turns: Sequence[dict[str, str]], user_id: str, max_rounds: int,
                  result: RecallResult, recalled: list[MemoryRecord], seen: set[int]) -> None:
    planner = RecallPlanner(model, prompts_dir(memory))
    asked: list[str] = []
    now_iso = ts_to_iso(now_ts())
    for number in range(1, max_rounds + 1):
        result.llm_calls += 1
        plan = planner.plan(turns, recalled, asked, now_iso)  # an LLMError: the caller keeps what was recalled
        if plan.can_answer:
            result.answerable = True
            result.rounds.append(RecallRound(note="the model can answer"))
            return
        if not plan.need:
            result.rounds.append(RecallRound(note="the model cannot answer and needs nothing it can name; stopped"))
            return
        asked.append(plan.need)
        step = RecallRound(need=plan.need, query=plan.need)
        result.rounds.append(step)
        found = _search(memory, plan.need, user_id, seen)
        recalled += found
        step.hit_ids = [r.id for r in found]
        if not found:
            step.note = "this need recalled nothing new; stopped"
            return
        if number == max_rounds:
            step.note = f"stopped after max_rounds ({max_rounds}) without the model saying it can answer"
