"""REST routes for the verbs that move memories in and out (export_md / import_md, export_jsonl /
import_jsonl) and build the graph, so that the Client, and the CLI's `--server`, have them too
(hippocampus/contract/verbs.py declares them). The app includes this router (rest.ROUTERS).

Files stay on the caller's side: an export answers with the text and the Client writes the file; an
import receives the text. The service never reads or writes a path its caller names.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..contract.replies import GraphStats, ImportReport
from ..contract.wire import BuildGraphRequest, ExportReply, ImportRequest
from ..errors import InvalidInput
from .deps import JobsDep, MemoryDep, TenantDep, v1_router

router = v1_router()
SENT = "the JSONL sent"


def _user(user_id: str | None) -> str:
    return f"user {user_id!r} not found"


def md_count(text: str) -> int:
    """How many memories a MEMORY.md holds: one `### ` heading each."""
    return text.count("\n### ") + text.startswith("### ")


@router.get("/export/md", response_model=ExportReply, summary="A user's memories as MEMORY.md (export_md)")
def export_md(tenant: TenantDep, memory: MemoryDep, user_id: str, now: int | None = None) -> ExportReply:
    tenant.check(user_id, _user(user_id))
    text = memory.export_md(user_id, now=now)
    return ExportReply(user_id=user_id, count=md_count(text), text=text)


@router.post("/import/md", response_model=ImportReport, summary="Bring an edited MEMORY.md back (import_md)")
def import_md(body: ImportRequest, tenant: TenantDep, memory: MemoryDep) -> ImportReport:
    tenant.check(body.user_id, _user(body.user_id))
    text = body.text if "\n" in body.text else body.text + "\n"  # always text: one line would be read as a server path
    return memory.import_md(body.user_id, text)


@router.get("/export/jsonl", response_model=ExportReply, summary="Back up a user's memories and history as JSONL (export_jsonl)")
def export_jsonl(user_id: str, tenant: TenantDep, memory: MemoryDep) -> ExportReply:
    tenant.check(user_id, _user(user_id))
    with tempfile.TemporaryDirectory(prefix="hippocampus-export-") as folder:
        path = Path(folder) / "export.jsonl"
        count = memory.export_jsonl(user_id, path)
        return ExportReply(user_id=user_id, count=count, text=path.read_text(encoding="utf-8"))


@router.post("/import/jsonl", response_model=ImportReport, summary="Restore a JSONL backup as a user's memories (import_jsonl)")
def import_jsonl(body: ImportRequest, tenant: TenantDep, memory: MemoryDep) -> ImportReport:
    tenant.check(body.user_id, _user(body.user_id))
    with tempfile.TemporaryDirectory(prefix="hippocampus-import-") as folder:
        path = Path(folder) / "import.jsonl"
        try:
            path.write_text(body.text, encoding="utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidInput(f"{SENT} is not valid text: {exc.reason}; nothing was imported") from None
        try:
            return memory.import_jsonl(body.user_id, path)
        except InvalidInput as exc:  # the message names the file: name what the caller sent instead
            raise InvalidInput(str(exc).replace(repr(str(path)), SENT).replace(str(path), SENT)) from None


@router.post("/graph/build", response_model=GraphStats, summary="Read new memories into the graph now (build_graph)")
def build_graph(tenant: TenantDep, memory: MemoryDep, jobs: JobsDep, body: BuildGraphRequest | None = None) -> GraphStats:
    user_id = body.user_id if body else None
    tenant.check(user_id, _user(user_id))
    # over every user: user by user when one user's data fails it (jobs.py)
    parts = [p for u in tenant.scope(user_id) for p in jobs.each_user("graph", memory.build_graph, u)]
    total = GraphStats()
    for part in parts:
        for field, value in part.model_dump().items():
            setattr(total, field, getattr(total, field) + value)
    return total
