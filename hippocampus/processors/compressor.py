"""FactCompressor: related old facts of one user become fewer facts (at 30 days) or one pattern (at
90 days), the automatic compression over time. The caller (lifecycle/compress.py) picks the group and archives
the sources only when this returns facts.

Pure: the source facts in, the compressed texts out, or None. A compression is a rewrite, so it
goes through the fact guard (facts.py) like a merge: every number, date, time, name and Chinese
noun of the sources must survive somewhere in the output. Where sources disagree the newest wins,
so an older value that the output replaces by a value a newer source states is no loss. One retry
with the lost facts listed; an answer that still loses one, or that gives more facts than the
target, is refused (None): nothing is compressed, the sources stay as they are.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from ..llm import ChatModel
from ..models import TEXT_MAX_BYTES, MemoryRecord
from .base import Processor
from .facts import missing, replaced
from .results import CompressionResult

log = logging.getLogger(__name__)


def lost_facts(sources: Sequence[str], output: Sequence[str]) -> list[str]:
    """The facts of `sources` (newest first) that `output` loses, each once. An older source's
    number, date or time that the output replaces by a newer source's value is not lost. Pure."""
    text = "\n".join(output)
    out: list[str] = []
    for i, source in enumerate(sources):
        newer = "\n".join(sources[:i])
        for fact in missing([source], text):
            if newer and replaced(fact, text, newer):
                continue
            if fact.text not in out:
                out.append(fact.text)
    return out


def cleaned(facts: Sequence[str]) -> list[str] | None:
    """Whitespace collapsed, empty and repeated lines dropped; None when a line is too long to store."""
    out: list[str] = []
    for fact in facts:
        line = " ".join(str(fact).split())
        if len(line.encode("utf-8")) > TEXT_MAX_BYTES:
            return None
        if line and line not in out:
            out.append(line)
    return out


class FactCompressor(Processor[CompressionResult]):
    prompt_name = "fact_compressor"
    result_model = CompressionResult

    def __init__(self, llm: ChatModel, prompts_dir: str | Path | None = None):
        super().__init__(llm, prompts_dir)
        self.calls = 0  # model calls made, the guard's retry included (the caller counts them)

    def compress(self, sources: Sequence[MemoryRecord], kind: str, max_facts: int) -> list[str] | None:
        """At most `max_facts` texts that keep every fact of `sources`, or None (refused: too many
        facts, or facts lost after the retry). Raises LLMError when the first call fails."""
        ordered = sorted(sources, key=lambda r: (-r.ts, -r.id))  # newest first: the newest wins
        texts = [r.text for r in ordered]
        inputs = {"facts": [{"text": r.text, "time": _day(r.ts)} for r in ordered],
                  "target": {"kind": kind, "max_facts": max_facts}}
        self.calls += 1
        first = cleaned(self.ask(**inputs).facts)
        if not first or len(first) > max_facts:
            log.warning("fact compressor gave %s facts for at most %s; the group is left as it is",
                        len(first) if first is not None else "unusable", max_facts)
            return None
        lost = lost_facts(texts, first)
        if not lost:
            return first
        self.calls += 1
        again = self.ask_again(lost, **inputs)
        second = cleaned(again.facts) if again is not None else None
        if second and len(second) <= max_facts and not lost_facts(texts, second):
            return second
        log.warning("fact compressor lost %s; the group is left as it is", lost)
        return None


def _day(ts: int) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).date().isoformat()
