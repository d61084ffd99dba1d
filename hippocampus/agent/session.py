"""Session memory for an agent: working memory holds the last `max_messages` messages, and what the
session tells about the user is extracted into long-term memory at the session's end, when the
buffer fills, or on an explicit save; not after every turn.

One extraction is one SessionExtractor call: the messages not yet extracted (the most recent ~8,000
characters of them) and at most 50 of the user's active memories scoring 0.2 or more (shown as
m1..m50, the ones a search for the session's words finds first) in; new memories and corrections of
shown memories out, checked (processors/session_extractor.py). It is applied through the facade:
`add` for each new memory (then `curate` for its category and importance), `update` for each
correction. Every memory it writes carries the session's id and a hash of its text in metadata
(`source_session`, `session_hash`); a memory whose marker is stored already is never written again,
so ending a session twice, or again after a crash half-way, never duplicates a memory.

What a user message says about the memory itself (a forget request, "Please forget that I like jazz",
or a correction, "Actually I don't live in Paris anymore") is not extracted: it goes through
`add(..., infer=True)`, after the extraction's writes, so it is honoured exactly as there (memory/forget.py:
the named memory leaves search and the prompt block, restorable; the request is never stored; a changed
fact supersedes the old one at once), on a Memory or a Client alike.

Memory never breaks a turn: a failed model or store is a warning in the report (logged) and the
messages, or the rest of a half-applied extraction, are kept for the next save or end.
"""

from __future__ import annotations

import hashlib
import unicodedata
import uuid
from collections import deque
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from .. import validation as V
from ..errors import InvalidInput, NotFound
from ..lifecycle.policy import LEVELS, PERMANENT
from ..lifecycle.prompt_block import injectable
from ..llm import ChatModel
from ..memory.forget import says_to_memory
from ..models import MemoryRecord, now_ts, ts_to_iso
from ..models.base import Model
from ..processors.base import data_block
from ..processors.session_extractor import MAX_SHOWN, SessionExtractor, SessionPlan
from ..processors.tool_context import ToolContextCondenser
from ._common import describe, log, prompts_dir, resolve_model, score

SESSION_KEY = "source_session"  # metadata: the session that wrote the memory
HASH_KEY = "session_hash"  # metadata: a hash of the text it wrote, the idempotency marker with the session id
OLD_HASH_KEY = "source_hash"  # its name before imports took "source_hash" (transfer/jsonl.py); still read
MIN_SCORE = 0.2  # memories scoring less are not shown to the extractor
MAX_QUERY_CHARS = 1000
MODEL_MODE = "model: one SessionExtractor call per extraction"
OFFLINE_MODE = "offline: the write rules on each user message; no updates"


def content_hash(text: str) -> str:
    """The idempotency marker of a memory's text: equal for the same words, whatever the spacing or case."""
    norm = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()[:16]


class SessionReport(Model):
    """What one extraction (a full buffer, `save` or `end`) did."""

    session_id: str
    trigger: str  # "buffer full", "save" or "end"
    mode: str = MODEL_MODE
    messages: int = 0  # messages extracted
    left_out: int = 0  # older messages of a long session the model did not see
    added: list[int] = Field(default_factory=list)
    updated: list[int] = Field(default_factory=list)
    refused: list[str] = Field(default_factory=list)  # what the checks refused: ids not shown, core updates, repeats
    skipped_as_duplicate: list[str] = Field(default_factory=list)  # written already by this session (an earlier try)
    honoured: list[str] = Field(default_factory=list)  # what add(infer=True) did with each forget request or correction
    llm_calls: int = 0
    pending: bool = False  # something failed: kept for the next save or end
    warnings: list[str] = Field(default_factory=list)


class Session:
    """One conversation of `user_id` in `chat_id`, through `memory` (a Memory, or a Client with `llm`).

    >>> with Session(memory, "alice", "c1") as session:
    ...     session.add_message("user", "I moved to Lyon last month")
    ...     session.add_message("assistant", "How do you like it?")
    """

    def __init__(self, memory: Any, user_id: str, chat_id: str = "default", max_messages: int = 30,
                 session_id: str | None = None, *, llm: ChatModel | None = None):
        """Raises InvalidInput for a bad user_id, chat_id, session_id or max_messages (2 .. 1000)."""
        if isinstance(max_messages, bool) or not isinstance(max_messages, int) or not 2 <= max_messages <= 1000:
            raise InvalidInput(f"max_messages must be a whole number from 2 to 1000, got {max_messages!r}")
        self.memory = memory
        self.user_id = V.check_id("user_id", user_id)
        self.chat_id = V.check_id("chat_id", chat_id)
        self.session_id = V.check_id("session_id", session_id) if session_id is not None else uuid.uuid4().hex
        self.max_messages = max_messages
        self.closed = False
        self.reports: list[SessionReport] = []
        self._llm = llm
        self._window: deque[dict[str, str]] = deque(maxlen=max_messages)
        self._pending: list[dict[str, str]] = []  # not extracted yet
        self._plan: SessionPlan | None = None  # an extraction whose writes stopped half-way
        self._plan_covers = 0  # how many of _pending that plan came from
        self._due = max_messages  # extract when this many messages are pending
        self._carry_next: list[tuple[str, str]] = []  # condensed tool results for the next turn
        self._carry_now: list[tuple[str, str]] = []  # ... and for this one (dropped at the next user message)

    @property
    def messages(self) -> list[dict[str, str]]:
        """The working memory: the last `max_messages` messages, oldest first."""
        return list(self._window)

    def add_message(self, role: str, content: str) -> SessionReport | None:
        """Buffer one message; when `max_messages` are waiting, extract them and keep working (the
        report of that extraction comes back; None otherwise). A blank message is ignored.

        Raises InvalidInput for a role or content that is not a string, or after `end`."""
        self._check_open("role and content", role, content)
        if not content.strip():
            return None
        message = {"role": role, "content": content}
        if role == "user":  # a new turn: last turn's tool results are its context, older ones go
            self._carry_now, self._carry_next = self._carry_next, []
        self._window.append(message)
        self._pending.append(message)
        if len(self._pending) >= self._due:
            return self._extract("buffer full")
        return None

    def tool_result(self, name: str, text: str) -> str:
        """Condense a tool's raw result into what the next turn needs (one ToolContextCondenser call;
        offline: its sentences that share a word with the user's last message) and carry it to the
        next turn only: `tool_context` gives it while the next user message is answered, then it is
        dropped. It is never stored nor extracted. Returns the condensed text; "" when nothing in it
        helps or the model failed (a warning, logged: memory never breaks a turn).

        Raises InvalidInput for a name or text that is not a string, or after `end`."""
        self._check_open("a tool result's name and text", name, text)
        if not text.strip():
            return ""
        model, _offline, warning = resolve_model(self.memory, self._llm)
        if warning:
            log.warning("session %s: %s", self.session_id, warning)
        try:
            condensed = ToolContextCondenser(model, prompts_dir(self.memory)).condense(self.messages, name.strip() or "tool", text)
        except Exception as exc:  # memory never breaks a turn
            log.warning("session %s: the result of %s was not condensed (%s); nothing carried", self.session_id, name,
                        describe(exc))
            return ""
        if condensed.context:
            self._carry_next.append((name.strip() or "tool", condensed.context))
        return condensed.context

    @property
    def tool_context(self) -> str:
        """For this turn's prompt: what the previous turn's tools found, condensed, inside <data>
        delimiters that no tool output can close; "" when there is none."""
        if not self._carry_now:
            return ""
        lines = "\n".join(f"- [{name}] {context}" for name, context in self._carry_now)
        return f"What the previous turn's tools found (for this turn only):\n{data_block(lines)}"

    def _check_open(self, what: str, *values: object) -> None:
        """Raises InvalidInput after `end`, or when one of `values` is not a string."""
        if self.closed:
            raise InvalidInput(f"session {self.session_id} has ended; start a new Session")
        if not all(isinstance(v, str) for v in values):
            raise InvalidInput(f"{what} must be strings")

    def save(self) -> SessionReport:
        """Extract what is waiting now; the session goes on. Raises nothing."""
        return self._extract("save")

    def end(self) -> SessionReport:
        """Extract what is waiting and close the session; ending it again does nothing. When the
        extraction fails the session stays open (`pending` in the report): call end() again.
        Raises nothing."""
        if self.closed:
            return SessionReport(session_id=self.session_id, trigger="end", warnings=["the session has ended already"])
        report = self._extract("end")
        self.closed = not report.pending
        return report

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        report = self.end()
        if report.pending:
            log.warning("session %s of %s ended with %d messages not extracted: %s", self.session_id, self.user_id,
                        len(self._pending), "; ".join(report.warnings))

    # ------------------------------------------------------------------ extraction
    def _extract(self, trigger: str) -> SessionReport:
        model, offline, warning = resolve_model(self.memory, self._llm)
        report = SessionReport(session_id=self.session_id, trigger=trigger, mode=OFFLINE_MODE if offline else MODEL_MODE)
        if warning:
            self._warn(report, warning)
        try:
            if self._plan is not None:  # finish the half-applied extraction first, without asking again
                report.messages += self._plan_covers
                if not self._apply(self._plan, self._stored(), report) or not self._honour(
                        self._pending[: self._plan_covers], report):
                    return self._failed(report)
                del self._pending[: self._plan_covers]
                self._plan, self._plan_covers = None, 0
            if self._pending:
                chunk = list(self._pending)
                heard = [m for m in chunk if not _to_memory(m)]  # the rest goes through add(infer=True)
                stored = self._stored()
                plan = SessionPlan()
                if any(m["role"] == "user" for m in heard):
                    report.llm_calls += 1
                    plan = SessionExtractor(model, prompts_dir(self.memory)).with_project(getattr(self.memory, "config", None)).extract(
                        heard, self._shown(stored, heard), ts_to_iso(now_ts()), self.chat_id)
                report.messages += len(chunk)
                report.left_out += plan.left_out
                report.refused += plan.refused
                self._plan, self._plan_covers = plan, len(chunk)
                if not self._apply(plan, stored, report) or not self._honour(chunk, report):
                    return self._failed(report)
                del self._pending[: len(chunk)]
                self._plan, self._plan_covers = None, 0
        except Exception as exc:  # a model or a store failure: the messages wait for the next try
            self._warn(report, f"extraction failed ({describe(exc)}); the messages are kept for the next save or end")
            return self._failed(report)
        self._due = self.max_messages
        self.reports.append(report)
        return report

    def _failed(self, report: SessionReport) -> SessionReport:
        report.pending = True
        self._due = len(self._pending) + self.max_messages  # a full buffer retries after as many messages again
        self.reports.append(report)
        return report

    def _warn(self, report: SessionReport, text: str) -> None:
        log.warning("session %s: %s", self.session_id, text)
        report.warnings.append(text)

    def _stored(self) -> list[MemoryRecord]:
        return list(self.memory.get_all(self.user_id))

    def _shown(self, stored: Sequence[MemoryRecord], chunk: Sequence[dict[str, str]]) -> list[MemoryRecord]:
        """At most 50 active memories scoring 0.2 or more: those a search for the session's words
        finds first, then the rest by score."""
        now = now_ts()
        scores = {r.id: score(self.memory, r, now) for r in stored if injectable(r, now)}
        eligible = {r.id: r for r in stored if scores.get(r.id, 0.0) >= MIN_SCORE}
        said = " ".join(m["content"] for m in chunk if m["role"] == "user") or " ".join(m["content"] for m in chunk)
        query = " ".join(said[-MAX_QUERY_CHARS:].split())
        try:
            found = [h.id for h in self.memory.search(query, user_id=self.user_id, limit=MAX_SHOWN).all] if query else []
        except Exception as exc:  # the ranking only: the rest by score still shows something
            log.warning("session %s: the search for shown memories failed (%s)", self.session_id, describe(exc))
            found = []
        first = [eligible[i] for i in dict.fromkeys(found) if i in eligible]
        rest = sorted((r for i, r in eligible.items() if i not in set(found)), key=lambda r: (-scores[r.id], -r.ts))
        return (first + rest)[:MAX_SHOWN]

    def _apply(self, plan: SessionPlan, stored: Sequence[MemoryRecord], report: SessionReport) -> bool:
        """Write the plan through the facade; False (with a warning) when a write fails, the plan kept."""
        markers = {(r.metadata.get(SESSION_KEY), r.metadata.get(HASH_KEY) or r.metadata.get(OLD_HASH_KEY)) for r in stored}
        for new in plan.new:
            marker = content_hash(new.text)
            if (self.session_id, marker) in markers:
                report.skipped_as_duplicate.append(new.text)
                continue
            try:
                added = self.memory.add(new.text, user_id=self.user_id, chat_id=self.chat_id,
                                        metadata={SESSION_KEY: self.session_id, HASH_KEY: marker}, memory_type="episodic")
            except Exception as exc:
                self._warn(report, f"writing {new.text!r} failed ({describe(exc)}); kept for the next save or end")
                return False
            markers.add((self.session_id, marker))
            report.added += list(added.ids)
            self._curate(added.ids, new.category, new.importance, report)
        for memory_id, text in plan.updates.items():
            try:
                current = self.memory.get(memory_id, user_id=self.user_id)
                if current.life.category in PERMANENT:
                    report.refused.append(f"memory {memory_id} became {current.life.category.value}; not updated")
                elif current.text != text:
                    self.memory.update(memory_id, text, user_id=self.user_id)
                    report.updated.append(memory_id)
            except NotFound:
                report.refused.append(f"memory {memory_id} was deleted meanwhile; not updated")
            except Exception as exc:
                self._warn(report, f"updating memory {memory_id} failed ({describe(exc)}); kept for the next save or end")
                return False
        return True

    def _honour(self, chunk: Sequence[dict[str, str]], report: SessionReport) -> bool:
        """Each user message that asks something of the memory itself, in order, through add(infer=True)
        (after the extraction's writes, so a forget finds what this session said earlier); a message whose
        marker is stored already is not sent again. False (with a warning) when one fails."""
        markers = {(r.metadata.get(SESSION_KEY), r.metadata.get(HASH_KEY)) for r in self._stored()}
        for message in chunk:
            if not _to_memory(message):
                continue
            marker = content_hash(message["content"])
            if (self.session_id, marker) in markers:
                report.skipped_as_duplicate.append(message["content"])
                continue
            try:
                done = self.memory.add([{"role": "user", "content": message["content"]}], user_id=self.user_id,
                                       chat_id=self.chat_id, metadata={SESSION_KEY: self.session_id, HASH_KEY: marker},
                                       infer=True)
            except Exception as exc:
                self._warn(report, f"honouring {message['content']!r} failed ({describe(exc)}); kept for the next save or end")
                return False
            report.added += [i for i in done.ids if done.stored and i not in report.added]
            report.honoured.append(done.reason)
        return True

    def _curate(self, ids: Sequence[int], category: str, importance: str, report: SessionReport) -> None:
        """The model's category and importance, set through `curate` (a failure only warns: the memory is stored)."""
        level = LEVELS.get(importance) if importance != "medium" else None
        if not category and level is None:
            return
        for memory_id in ids:
            try:
                self.memory.curate(memory_id, self.user_id, category=category or None, importance=level)
            except Exception as exc:
                self._warn(report, f"setting category/importance of memory {memory_id} failed ({describe(exc)})")


def _to_memory(message: dict[str, str]) -> bool:
    """A user message that asks something of the memory itself: a forget request or a correction."""
    return message["role"] == "user" and says_to_memory(message["content"])
