"""EpisodicWriteDecider: is this turn worth remembering as an episode?

Pure chitchat, greetings, objective knowledge questions and fragments are
not stored; an explicit "remember this" with personal information always is. The
facade turns a positive decision into an episodic record with `episodic_metadata`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .base import Processor
from .gate import gate
from .results import WriteDecision

if TYPE_CHECKING:
    from ..config import MemoryConfig


def user_text(turns: Sequence[dict[str, str]]) -> str:
    """What the user said in these turns (all turns when none is marked as the user's)."""
    said = [str(t.get("content", "")).strip() for t in turns if t.get("role", "user") == "user"]
    said = [s for s in said if s]
    return " ".join(said) if said else " ".join(str(t.get("content", "")).strip() for t in turns).strip()


class EpisodicWriteDecider(Processor[WriteDecision]):
    prompt_name = "write_decider"
    result_model = WriteDecision
    reads_project = True

    def decide(self, chat_id: str, turns: Sequence[dict[str, str]], now_iso: str = "") -> WriteDecision:
        """One model call. Raises LLMError when the model fails; the caller keeps the turn
        for a later decision (Memory.add stores it raw with `pending_decision`)."""
        turns = [{"role": str(t.get("role", "user")), "content": str(t.get("content", ""))} for t in turns]
        result: WriteDecision = self.ask(now=now_iso, chat_id=chat_id, turns=turns)
        if result.write_episodic and not result.thing.strip():
            # a "yes" with nothing to store keeps the user's own words rather than an empty memory
            result = result.model_copy(update={"thing": user_text(turns)})
        return result


def gate_enabled(config: MemoryConfig) -> bool:
    """`llm_gate: on` puts the rules gate before the model and before a deferral. With the offline
    provider deciding online it is not consulted: the rules provider decides those turns alike."""
    return config.llm_gate == "on" and (config.llm_provider != "offline" or config.write_decision == "deferred")


def decide_turn(make_decider: Callable[[], EpisodicWriteDecider], config: MemoryConfig, chat_id: str,
                turns: Sequence[dict[str, str]], now_iso: str = "") -> WriteDecision | None:
    """add(infer=True)'s write decision: the gate's when it is certain (reason "gate: ..."; no model
    call), else None under `write_decision: deferred` (keep the turn raw, pending), else the model's
    (one call; LLMError when it fails). `make_decider` (MemoryContext.processor) is called only when
    the model is asked, so a turn the gate decides never makes the chat model."""
    if gate_enabled(config):
        decided = gate(turns, now_iso)
        if decided is not None:
            return decided
    if config.write_decision == "deferred":
        return None
    return make_decider().decide(chat_id, turns, now_iso=now_iso)


def episodic_metadata(
    decision: WriteDecision, turn_ts: int, chat_id: str, who: str, extra: dict[str, Any]
) -> tuple[int, dict[str, Any]]:
    """(event ts, episodic metadata: context, thing, time, chatid, who) for a positive decision.

    `chatid` and `who` come from the turn itself (the caller's values), never from the
    model, so a model cannot move a memory to another person; `time` is the event time
    (see `event_ts`); what the model said beyond that is kept beside (`event_time`, `subject`).
    """
    from ..models import ts_to_iso

    ts = event_ts(decision.time, turn_ts)
    meta: dict[str, Any] = {
        "context": decision.context.strip(),
        "thing": decision.thing.strip(),
        "time": ts_to_iso(ts),
        "chatid": chat_id,
        "who": who,
    }
    if decision.time and ts == turn_ts and event_ts(decision.time, turn_ts, window_s=2**40) != turn_ts:
        meta["event_time"] = decision.time  # the model's date, too far from the turn to be trusted as `time`
    subject = decision.who.strip()
    if subject and subject not in (who, "user", "用户", "me", "我"):
        meta["subject"] = subject
    if decision.reason.strip():
        meta["write_reason"] = decision.reason.strip()
    return ts, {**extra, **meta}


EVENT_WINDOW_S = 366 * 86400


def event_ts(decision_time: str, turn_ts: int, window_s: int = EVENT_WINDOW_S) -> int:
    """When the remembered event happened: the model's `time` ("yesterday" resolved) when it
    parses and lies within a year of the turn, else the turn's own time. A model that invents
    a date far away cannot move a memory out of its merge windows."""
    from datetime import datetime, timezone

    try:
        moment = datetime.fromisoformat(decision_time.strip().replace("Z", "+00:00"))
    except (AttributeError, ValueError):
        return turn_ts
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    ts = int(moment.timestamp())
    return ts if abs(ts - turn_ts) <= window_s else turn_ts


def pending_metadata(text: str, turns: Sequence[dict[str, str]], time_iso: str, chat_id: str, who: str,
                     extra: dict[str, Any]) -> dict[str, Any]:
    """A turn kept raw because the model failed: consolidation asks the WriteDecider again
    (it reads `turns` when they were kept, else the text)."""
    import json

    meta: dict[str, Any] = {**extra, "context": "", "thing": text, "time": time_iso, "chatid": chat_id, "who": who,
                            "pending_decision": True}
    if len(turns) > 1 and len(json.dumps(turns, ensure_ascii=False).encode("utf-8")) <= 32768:
        meta["turns"] = [{"role": t["role"], "content": t["content"]} for t in turns]
    return meta
