"""The transfer service (issue 14, item 9): MEMORY.md, a view that a person reads and edits, and
JSONL, a backup that moves every field and the history between stores. The facade delegates its
export and import verbs here; the formats live beside it, pure, in transfer/memory_md.py and
transfer/jsonl.py."""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from collections.abc import Iterator, Sequence
from datetime import tzinfo
from pathlib import Path
from typing import Any, Protocol

from .. import validation as V
from ..context import MemoryContext
from ..contract.replies import ImportReport
from ..errors import InvalidInput, NotFound
from ..lifecycle.categories import new_life
from ..lifecycle.policy import DecayRule, decay_table, score_of
from ..lifecycle.rows import plain_row
from ..lifecycle.when import user_zone
from ..models import (
    LIFE_KEY,
    Category,
    CategorySpec,
    HistoryAction,
    HistoryEvent,
    MemoryRecord,
    MemoryType,
    State,
    now_ts,
)
from ..store import filters as F
from . import files, memory_md
from .dates import dated, said_on
from .jsonl import HASH_KEY, dump_line, load_line, record_hash, row_hash, text_hash
from .memory_md import MdEntry
from .owned import check_owned, without_damaged

log = logging.getLogger(__name__)

ACTOR = "import"
_BATCH = 256


class Lister(Protocol):
    """What the transfer service reads through the facade's record service (memory/records.py)."""

    def every(self, user_id: str, **fields: Any) -> list[MemoryRecord]: ...


class TransferService:
    """Export and import verbs over a MemoryContext; lists memories through `lister`."""

    def __init__(self, ctx: MemoryContext, lister: Lister):
        self.ctx = ctx
        self.lister = lister

    # ------------------------------------------------------------------ MEMORY.md
    def export_md(self, user_id: str, path: str | os.PathLike[str] | None = None, now: int | None = None) -> str:
        """This user's memories as a MEMORY.md (lifecycle/memory_md.py). Memory.export_md documents the
        arguments and errors."""
        user_id = V.check_id("user_id", user_id)
        now = V.check_ts(now) if now is not None else now_ts()
        table = decay_table(self.ctx.config.decay_preset, self.ctx.config.categories)
        records = sorted(self.lister.every(user_id), key=lambda r: r.id)
        text = memory_md.render([memory_md.md_entry(r, now, table) for r in records], now)
        if path is not None:
            files.save(path, text)
        return text

    def import_md(self, user_id: str, text_or_path: str | os.PathLike[str]) -> ImportReport:
        """Bring an edited MEMORY.md back. Memory.import_md documents the arguments and errors."""
        user_id = V.check_id("user_id", user_id)
        text, missing = _md_source(text_or_path)
        entries, warnings = memory_md.parse(text, [c.name for c in self.ctx.config.categories])
        report = ImportReport(warnings=[*missing, *warnings], skipped=sum(w.endswith(memory_md.SKIPPED) for w in warnings))
        now = now_ts()
        table = decay_table(self.ctx.config.decay_preset, self.ctx.config.categories)
        shown_at = [t for t in {now, memory_md.stamp(text)} if t is not None]
        known = self._own(user_id, [e.id for e in entries if e.id is not None])
        stored = self._hashes(user_id, computed=False)  # the [new] entries an earlier import stored
        again: list[str] = []  # a [new] entry twice in this file: stored once
        updates: list[tuple[MemoryRecord, str, dict[str, Any], dict[str, Any]]] = []
        creates: list[dict[str, Any]] = []
        seen: set[int] = set()
        for entry in entries:
            problem = _text_problem(entry.text)
            if problem is None and entry.id is not None:
                if entry.id in seen:
                    problem = f"memory {entry.id} appears twice; the first one counts"
                elif entry.id not in known:
                    problem = f"memory {entry.id} is not one of this user's memories; write [new] to add it as a new one"
                seen.add(entry.id)
            if problem is not None:
                report.warnings.append(f"line {entry.line}: {problem}; {memory_md.SKIPPED}")
                report.skipped += 1
            elif entry.id is None:
                digest = text_hash(entry.text)
                if digest in stored:
                    report.unchanged.append(stored[digest])
                elif any(row["metadata"][HASH_KEY] == digest for row in creates):
                    again.append(digest)
                else:
                    creates.append(_new_row(user_id, entry, now, digest, user_zone(self.ctx.config, user_id), self.ctx.config.categories))
            else:
                change = _change(known[entry.id], entry, now, shown_at, table)
                if change is None:
                    report.unchanged.append(entry.id)
                else:
                    updates.append(change)
        for old, new_text, meta, details in updates:
            try:
                self.ctx.writer.rewrite(old, new_text, meta, HistoryAction.UPDATED, actor=ACTOR, details=details)
                report.updated.append(old.id)
            except NotFound:  # deleted since the check
                report.warnings.append(f"memory {old.id} was deleted during the import; {memory_md.SKIPPED}")
                report.skipped += 1
        for start in range(0, len(creates), _BATCH):
            report.created += self.ctx.writer.insert(creates[start:start + _BATCH], actor=ACTOR, details={"source": "MEMORY.md"})
        made = {row["metadata"][HASH_KEY]: i for row, i in zip(creates, report.created)}
        report.unchanged += [made[d] for d in again]
        return report

    def _hashes(self, user_id: str, computed: bool) -> dict[str, int]:
        """Source hash -> id over this user's memories: the hash an import stored in the metadata and,
        with `computed`, the hash of what each memory says now (a memory of this store exported and
        imported back is the same memory)."""
        out: dict[str, int] = {}
        for rec in self.lister.every(user_id):
            if isinstance(rec.metadata.get(HASH_KEY), str):
                out.setdefault(rec.metadata[HASH_KEY], rec.id)
            if computed:
                out.setdefault(record_hash(rec), rec.id)
        return out

    def _own(self, user_id: str, ids: list[int]) -> dict[int, MemoryRecord]:
        """Those of `ids` that are this user's memories (never another user's)."""
        out: dict[int, MemoryRecord] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), _BATCH):
            chunk = unique[start:start + _BATCH]
            for row in self.ctx.store.by_ids(chunk, where=F.eq("user_id", user_id)):
                out[int(row["id"])] = MemoryRecord.from_row(row)
        return out

    # ------------------------------------------------------------------ JSONL
    def export_jsonl(self, user_id: str, path: str | os.PathLike[str]) -> int:
        """Back up this user's memories. Memory.export_jsonl documents the arguments and errors."""
        user_id = V.check_id("user_id", user_id)
        records = self.lister.every(user_id)
        events: dict[int, list[HistoryEvent]] = defaultdict(list)
        for raw in self.ctx.store.history(F.eq("user_id", user_id)):
            event = HistoryEvent.model_validate(raw)
            events[event.memory_id].append(event)
        files.write_atomically(path, (dump_line(_exportable(r), events[r.id]) + "\n" for r in records))
        return len(records)

    def import_jsonl(self, user_id: str, path: str | os.PathLike[str]) -> ImportReport:
        """Restore a backup (from this store or another) as this user's memories. Memory.import_jsonl documents
        the arguments and errors."""
        user_id = V.check_id("user_id", user_id)
        old_ids = [old_id for _, old_id, _ in self._jsonl_rows(user_id, path)]  # check every line first
        report = ImportReport()
        known = self._hashes(user_id, computed=True)
        same_id = self._own(user_id, old_ids)
        batch: list[tuple[dict[str, Any], int, list[HistoryEvent]]] = []
        again: list[str] = []  # the same entry twice in this file: stored once

        def flush() -> None:
            ids = self._insert_imported(user_id, batch)
            report.created.extend(ids)
            known.update((row["metadata"][HASH_KEY], i) for (row, _, _), i in zip(batch, ids))
            batch.clear()

        for row, old_id, events in self._jsonl_rows(user_id, path):
            digest = row_hash(row)
            present = same_id.get(old_id)
            if digest in known:
                report.unchanged.append(known[digest])
            elif any(r["metadata"][HASH_KEY] == digest for r, _, _ in batch) or digest in again:
                again.append(digest)
            elif present is not None and present.memory_type.value == row["memory_type"]:
                self._restore_over(present, row, digest, old_id, report)  # the same memory, changed since
                known[digest] = present.id
            else:  # hashed as the file says it; its named day resolved from when it was said (dates.py)
                row = dated(row, now_ts(), user_zone(self.ctx.config, user_id))
                row["metadata"][HASH_KEY] = digest
                batch.append((row, old_id, events))
                if len(batch) == _BATCH:
                    flush()
        if batch:
            flush()
        report.unchanged += [known[d] for d in again]
        return report

    def _restore_over(self, present: MemoryRecord, row: dict[str, Any], digest: str, old_id: int, report: ImportReport) -> None:
        """A line whose id is this user's memory but whose content differs (the file was edited, or the
        memory changed since the backup): the memory takes the line's text and metadata, in history."""
        meta = {**row["metadata"], HASH_KEY: digest}
        try:
            self.ctx.writer.rewrite(present, row["text"], meta, HistoryAction.UPDATED, actor=ACTOR,
                                    details={"source": "jsonl", "imported_from": old_id},
                                    ts=row["ts"], chat_id=row["chat_id"], who=row["who"])
            report.updated.append(present.id)
        except NotFound:  # deleted since the check
            report.warnings.append(f"memory {present.id} was deleted during the import; {memory_md.SKIPPED}")
            report.skipped += 1

    def _jsonl_rows(self, user_id: str, path: str | os.PathLike[str]) -> Iterator[tuple[dict[str, Any], int, list[HistoryEvent]]]:
        """(row to insert, old id, its history) per line of the file; InvalidInput naming a bad line."""
        try:
            with open(path, encoding="utf-8", newline="") as f:
                for lineno, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    try:
                        record, events = load_line(line, lineno)
                        for event in events:  # a history event keeps a row: the metadata's levels and a few more
                            V.check_json_tree(event.details, f"line {lineno}: history details", V.METADATA_MAX_DEPTH + 8)
                        yield _restored_row(record, user_id, lineno), int(record["id"]), events
                    except ValueError as exc:  # InvalidInput is a ValueError too
                        raise InvalidInput(f"{os.fspath(path)}: {exc}; nothing was imported") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read {os.fspath(path)!r}: {exc}") from None

    def _insert_imported(self, user_id: str, batch: list[tuple[dict[str, Any], int, list[HistoryEvent]]]) -> list[int]:
        """Embed and insert one batch, with each memory's old history and the import event, under the lock."""
        rows = [row for row, _, _ in batch]
        for row, vec in zip(rows, self.ctx.embedder.encode([r["text"] for r in rows], role="passage")):
            row["vector"] = vec.tolist()
        def history(n: int, new_id: int) -> list[HistoryEvent]:
            row, old_id, events = batch[n]
            return [*(e.model_copy(update={"memory_id": new_id, "user_id": user_id}) for e in events),
                    HistoryEvent(memory_id=new_id, user_id=user_id, action=HistoryAction.CREATED, new_text=row["text"],
                                 actor=ACTOR, details={"imported_from": old_id, "source": "jsonl"})]

        with self.ctx.write_lock:
            return self.ctx.writer.insert_held(rows, history)


# ---------------------------------------------------------------------- helpers
def _exportable(record: MemoryRecord) -> MemoryRecord:
    """The record as a backup line holds it: a damaged library key (a row an older import let in)
    left out, as reads leave it out, so the file imports back (owned.without_damaged); logged by id."""
    metadata, damaged = without_damaged(record.metadata)
    if not damaged:
        return record
    log.warning("memory %s: damaged %s left out of the export", record.id, ", ".join(damaged))
    return record.model_copy(update={"metadata": metadata})


def _md_source(text_or_path: str | os.PathLike[str]) -> tuple[str, list[str]]:
    """The file's text (and a warning when it is missing) or the text itself."""
    if isinstance(text_or_path, str) and "\n" in text_or_path:
        return text_or_path, []
    if not isinstance(text_or_path, (str, os.PathLike)):
        raise InvalidInput(f"import_md takes MEMORY.md text or a path, got {type(text_or_path).__name__}")
    path = Path(text_or_path)
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read(), []
    except FileNotFoundError:
        return "", [f"{path} does not exist; nothing imported"]
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {str(path)!r}: {exc}") from None


def _text_problem(text: str) -> str | None:
    try:
        V.check_text(text)
    except InvalidInput as exc:
        return f"the text is refused: {exc}"
    return None


def _new_row(user_id: str, entry: MdEntry, now: int, digest: str, tz: tzinfo, declared: Sequence[CategorySpec]) -> dict[str, Any]:
    """A `[new]` entry's row, said on its heading's date (transfer/dates.py): its named day resolved from then."""
    mtype = entry.memory_type or MemoryType.SEMANTIC
    said = said_on(entry.last_activated, now, tz)
    life = new_life(entry.text, mtype, now, said, category=entry.category, importance=entry.score, tz=tz)
    if entry.section == "archived":
        life = life.model_copy(update={"state": State.ARCHIVED})
    return plain_row(user_id, mtype, said, "default", user_id, entry.text, {LIFE_KEY: life.stored(), HASH_KEY: digest}, tz, declared)


def _change(old: MemoryRecord, entry: MdEntry, now: int, shown_at: list[int],
            table: dict[Category, DecayRule]) -> tuple[MemoryRecord, str, dict[str, Any], dict[str, Any]] | None:
    """The rewrite an edited entry asks for, or None when it shows what the store holds. A score
    equal to the one shown now or when the file was rendered is no edit (decay since is not one)."""
    life = old.life
    update: dict[str, Any] = {}
    if entry.category != life.category:
        update["category"] = entry.category
    if all(entry.score != float(f"{score_of(life, t, table):.2f}") for t in shown_at):
        update.update(importance=entry.score, last_activated=now)
    state = State.ARCHIVED if entry.section == "archived" else State.ACTIVE
    if state is not life.state:
        update["state"] = state
    text_changed = entry.text != old.text.strip()
    if not update and not text_changed:
        return None
    new = life.model_copy(update=update)
    meta = {**old.metadata, LIFE_KEY: new.stored(), "updated_at": now}
    text = entry.text if text_changed else old.text
    if text_changed and old.memory_type is MemoryType.EPISODIC and "thing" in old.metadata:
        meta["thing"] = text  # as `update` does
    details: dict[str, Any] = {"source": "MEMORY.md"}
    if update:
        details["lifecycle"] = {k: [getattr(getattr(life, k), "value", getattr(life, k)), getattr(v, "value", v)]
                                for k, v in update.items() if k != "last_activated"}
    return old, text, meta, details


def _restored_row(record: dict[str, Any], user_id: str, lineno: int) -> dict[str, Any]:
    """A backed-up record as a row to insert for `user_id`; InvalidInput naming the line when a field
    would not go into the store (checked as add checks them, the library's own metadata keys allowed
    when each holds what the library writes there: a wrong one would break every later read)."""
    try:
        meta = V.check_metadata(record["metadata"], max_bytes=V.STORED_METADATA_MAX_BYTES)  # the library's keys too
        for key in ("created_at", "updated_at"):
            if record.get(key) is not None:
                meta.setdefault(key, record[key])
        check_owned(meta)  # the library's own keys hold what it writes there (transfer/owned.py)
        hits = record.get("hit_count") or 0
        if isinstance(hits, bool) or not isinstance(hits, int) or not 0 <= hits < 2**63:
            raise InvalidInput(f"hit_count must be a whole number from 0 that fits 64 bits, got {str(hits)[:40]}")
        return MemoryRecord(id=0, user_id=user_id, memory_type=MemoryType(record["memory_type"]), ts=V.check_ts(record["ts"]),
                            chat_id=V.check_id("chat_id", record["chat_id"]), who=V.check_id("who", record["who"], V.WHO_MAX),
                            text=V.check_text(record["text"]), hit_count=int(hits), metadata=meta).to_row(with_id=False)
    except InvalidInput as exc:
        raise InvalidInput(f"line {lineno}: {exc}") from None
