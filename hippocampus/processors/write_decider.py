"""EpisodicWriteDecider: is this turn worth remembering as an episode?

Seed 002: pure chitchat, greetings, objective knowledge questions and fragments are
not stored; an explicit "remember this" with personal information always is. The
facade turns a positive decision into an episodic record with `episodic_metadata`.
"""

from __future__ import annotations

from typing import Any, Sequence

from .base import Processor
from .results import WriteDecision


def user_text(turns: Sequence[dict[str, str]]) -> str:
    """What the user said in these turns (all turns when none is marked as the user's)."""
    said = [str(t.get("content", "")).strip() for t in turns if t.get("role", "user") == "user"]
    said = [s for s in said if s]
    return " ".join(said) if said else " ".join(str(t.get("content", "")).strip() for t in turns).strip()


class EpisodicWriteDecider(Processor[WriteDecision]):
    prompt_name = "write_decider"
    result_model = WriteDecision

    def decide(self, chat_id: str, turns: Sequence[dict[str, str]], now_iso: str = "") -> WriteDecision:
        """One model call. Raises LLMError when the model fails; the caller keeps the turn
        for a later decision (Memory.add stores it raw with `pending_decision`)."""
        turns = [{"role": str(t.get("role", "user")), "content": str(t.get("content", ""))} for t in turns]
        result: WriteDecision = self.ask(now=now_iso, chat_id=chat_id, turns=turns)
        if result.write_episodic and not result.thing.strip():
            # a "yes" with nothing to store keeps the user's own words rather than an empty memory
            result = result.model_copy(update={"thing": user_text(turns)})
        return result


def episodic_metadata(decision: WriteDecision, time_iso: str, chat_id: str, who: str, extra: dict[str, Any]) -> dict[str, Any]:
    """Seed 002's episodic metadata for a positive decision.

    `time`, `chatid` and `who` come from the turn itself (the caller's values), never
    from the model, so a model cannot move a memory in time or to another person; what
    the model says about them is kept beside them (`event_time`, `subject`).
    """
    meta: dict[str, Any] = {
        "context": decision.context.strip(),
        "thing": decision.thing.strip(),
        "time": time_iso,
        "chatid": chat_id,
        "who": who,
    }
    if decision.time and decision.time != time_iso:
        meta["event_time"] = decision.time
    subject = decision.who.strip()
    if subject and subject not in (who, "user", "用户"):
        meta["subject"] = subject
    if decision.reason.strip():
        meta["write_reason"] = decision.reason.strip()
    return {**extra, **meta}
