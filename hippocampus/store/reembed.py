"""Re-embedding a store with another embedder (`hippocampus reembed --to local`), losing nothing.

Why this design: a collection's vector field has one dimension, and the store refuses an embedder other
than the one that wrote it (schema.check_existing), so a new model needs a new collection. Milvus (and
milvus-lite 3.x) can rename a collection but has no atomic swap, so:

1. a target collection `<name>__reembed` is made with the new dimension and model, ids assigned by
   hippocampus (auto_id off, as on a Milvus server: store/ids.py), so every memory keeps its id and
   `<name>_history`, keyed by memory id, stays valid as it is;
2. rows are copied page by page with new vectors (every field, dynamic ones too; BM25 is recomputed by
   Milvus from the text). Rows already in the target are skipped, so an interrupted run resumes where
   it stopped; the source is only read;
3. the graph's companion collection `<name>_graph` (store/graph.py), when there is one, is copied the
   same way (entity names and triple sentences embedded again), since its vectors have the same dimension;
4. once the target holds exactly the source's ids it is marked done, the source is renamed
   `<name>__pre_reembed_<time>` (kept unless `drop_old`, its graph as `<that>_graph`) and the targets
   take `<name>` and `<name>_graph`. A run interrupted between those renames is finished by the next run.

With `crosslang` (`hippocampus reembed --crosslang`, schema version 5: store/xvector.py) every memory also
gets its cross-language vector in the companion `<name>_xvec`; with the embedder the store already has,
that is all it does (resumable, nothing copied). A version-4 collection, which kept those vectors in a
field of its own, is copied without the field (the same resumable copy and switch) and the companion filled.

Writers must be stopped meanwhile (milvus-lite's lock enforces it for a local store): a memory updated
in the source during a run keeps its old text in the target.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..embeddings.base import Embedder
from ..errors import SchemaMismatchError, StoreError
from . import filters as F
from .backend import StoreClient
from .buckets import NUM_BUCKETS, PROP_BUCKETS, group_by_bucket
from .capabilities import Capabilities, detect
from .connection import connect, create_indexed, release
from .schema import (
    COMPATIBLE_VERSIONS,
    PROP_CROSS,
    PROP_FULL_TEXT,
    PROP_MODEL,
    PROP_VERSION,
    SCHEMA_VERSION,
    XVECTOR,
    memories_schema,
)
from .xvector import SUFFIX, write_rows, xvec_row, xvec_schema

TARGET_SUFFIX = "__reembed"
PROP_FROM = "hippocampus.reembed_from"  # on the target: the source's model, checked when a run resumes
PROP_DONE = "hippocampus.reembed_done"  # on the target: every row copied, only the renames remain
_NO_VECTOR = ("vector", "sparse")  # recomputed: the new embedder's vector, Milvus' BM25 from the text
GRAPH = "_graph"  # the companion collection of the graph (store/graph.py): its vectors follow the embedder too

Progress = Callable[[str], None]


@dataclass
class ReembedReport:
    """What a run did; `kept_as` names the old collection when it was kept."""

    collection: str
    old_model: str
    old_dim: int
    new_model: str
    new_dim: int
    total: int = 0
    embedded: int = 0
    resumed: int = 0  # rows a previous, interrupted run had already copied
    kept_as: str | None = None
    nothing_to_do: bool = False
    graph_rows: int = 0  # rows of `<name>_graph` (entities, triples, ledger) given new vectors
    crosslang: str | None = None  # the model of the cross-language vectors the store has (store/xvector.py)


def _describe(c: StoreClient, name: str) -> tuple[dict[str, Any], str, int, bool]:
    """(properties, model, dim, full_text) of a memories collection made by this version of hippocampus."""
    info = c.describe_collection(name)
    props = info.get("properties") or {}
    fields = {f["name"]: f for f in info.get("fields", [])}
    vec = fields.get("vector")
    if vec is None or props.get(PROP_VERSION) not in COMPATIBLE_VERSIONS:
        raise SchemaMismatchError(
            f"collection {name!r} was not created by this version of hippocampus (schema version "
            f"{props.get(PROP_VERSION)!r}, expected {SCHEMA_VERSION!r}); nothing was changed"
        )
    dim = int((vec.get("params") or {}).get("dim", -1))
    return props, str(props.get(PROP_MODEL)), dim, "sparse" in fields


def reembed_store(
    uri: str, collection: str, embedder: Embedder, token: str | None = None, batch_size: int = 128,
    drop_old: bool = False, restart: bool = False, progress: Progress = print, crosslang: Embedder | None = None,
) -> ReembedReport:
    """Give every memory of `collection` a vector from `embedder`, keeping ids, fields and history.

    Resumable (rerun the same command); `restart` drops a target left by a run towards another model.
    `crosslang`: also give every memory the cross-language vector (a store that lacks it gets it, its
    `vector` kept when `embedder` is the store's own).
    Raises StoreError when the store or collection is missing, SchemaMismatchError for a foreign one."""
    if "://" not in uri and not Path(uri).expanduser().is_dir():
        raise StoreError(f"no milvus-lite store at {uri}; nothing to re-embed", uri=uri)
    c = connect(uri, token)
    try:
        return _run(c, uri, collection, embedder, batch_size, drop_old, restart, progress, crosslang)
    finally:
        try:
            c.close()
        finally:
            release(uri)


def _cross_for(props: dict[str, Any]) -> Embedder:
    """The cross-language embedder that filled the store's vectors (store/xvector.py)."""
    from ..embeddings.crosslang import MODEL_NAME, NAME, make_crosslang

    if props.get(PROP_CROSS) != MODEL_NAME:
        raise SchemaMismatchError(f"cross-language vectors from an unknown model {props.get(PROP_CROSS)!r}")
    return make_crosslang(NAME)


def _xdim(c: StoreClient, name: str) -> int | None:
    """The dimension of the collection's `xvector`, or None without one."""
    for f in c.describe_collection(name).get("fields", []):
        if f["name"] == XVECTOR:
            return int((f.get("params") or {}).get("dim", -1))
    return None


def _run(c: StoreClient, uri: str, name: str, embedder: Embedder, batch_size: int, drop_old: bool, restart: bool,
         progress: Progress, crosslang: Embedder | None = None) -> ReembedReport:
    target = name + TARGET_SUFFIX
    new_model, new_dim = embedder.model_name, embedder.dim
    has_src, has_tgt = c.has_collection(name), c.has_collection(target)
    if restart:
        for left in (target, f"{name}{GRAPH}{TARGET_SUFFIX}"):
            if c.has_collection(left):
                progress(f"dropping {left!r}, left by an earlier run (--restart)")
                c.drop_collection(left)
        has_tgt = False
    if not has_src:
        if has_tgt and (c.describe_collection(target).get("properties") or {}).get(PROP_DONE) == "1":
            _, model, dim, _ = _describe(c, target)
            c.rename_collection(target, name)  # an earlier run stopped between its renames
            _switch_graph(c, name, f"{name}__pre_reembed_{int(time.time())}")
            progress(f"finished an interrupted switch: {name!r} now holds the {dim}-d vectors from {model!r}")
            return ReembedReport(name, "?", 0, model, dim)
        raise StoreError(f"no collection {name!r} at {uri}; nothing to re-embed", uri=uri)
    src_props, old_model, old_dim, full_text = _describe(c, name)
    report = ReembedReport(name, old_model, old_dim, new_model, new_dim)
    legacy = _xdim(c, name) is not None  # a version-4 collection: `xvector` inside, moved to the companion
    cross = crosslang if crosslang is not None else (_cross_for(src_props) if legacy or PROP_CROSS in src_props else None)
    keep_vector = (old_model, old_dim) == (new_model, new_dim)
    if keep_vector and not legacy:
        if _switch_graph(c, name, f"{name}__pre_reembed_{int(time.time())}"):  # stopped before the graph's renames
            progress(f"finished an interrupted switch: {name + GRAPH!r} now follows {new_model!r}")
            return report
        if crosslang is not None:
            report.embedded, report.resumed = fill_companion(c, name, crosslang, batch_size, progress, detect(c, uri))
            report.total, report.crosslang = report.embedded + report.resumed, crosslang.model_name
            progress(f"{name!r} now has cross-language vectors from {crosslang.model_name!r} ({report.embedded} added)")
            return report
        report.nothing_to_do = True
        progress(f"{name!r} already holds {old_dim}-d vectors from {old_model!r}; nothing to do")
        return report
    caps = detect(c, uri)
    if has_tgt:
        props, model, dim, _ = _describe(c, target)
        if (model, dim, props.get(PROP_FROM)) != (new_model, new_dim, old_model):
            raise SchemaMismatchError(
                f"{target!r} was left by a re-embed of {props.get(PROP_FROM)!r} to {model!r} ({dim}-d), not of "
                f"{old_model!r} to {new_model!r} ({new_dim}-d); rerun with --restart to drop it and start again", uri=uri,
            )
        progress(f"resuming into {target!r}")
    else:
        schema, index = memories_schema(c, new_dim, full_text, auto_id=False)
        props = {PROP_MODEL: new_model, PROP_VERSION: SCHEMA_VERSION, PROP_FROM: old_model}
        props.update({} if full_text else {PROP_FULL_TEXT: "false"})
        create_indexed(c, target, schema, index, properties=props, **caps.create_kwargs())
    c.load_collection(name)
    c.load_collection(target)
    _copy(c, name, target, None if keep_vector else embedder, batch_size, report, progress)
    _reconcile(c, name, target)
    graph_rows = 0 if keep_vector else _reembed_graph(c, name, embedder, batch_size, progress)
    c.alter_collection_properties(target, {PROP_DONE: "1"})
    report.kept_as = f"{name}__pre_reembed_{int(time.time())}"
    c.release_collection(name)
    c.rename_collection(name, report.kept_as)
    c.rename_collection(target, name)
    _switch_graph(c, name, report.kept_as)
    if drop_old:
        for old in (report.kept_as, report.kept_as + GRAPH):
            if c.has_collection(old):
                c.drop_collection(old)
        report.kept_as = None
    report.graph_rows = graph_rows
    if cross is not None:  # ids are kept, so the companion stays valid: only what it lacks is added
        fill_companion(c, name, cross, batch_size, progress, caps)
        report.crosslang = cross.model_name
    progress(f"{name!r} now holds {new_dim}-d vectors from {new_model!r}"
             + (f" and cross-language vectors from {report.crosslang!r}" if report.crosslang else "")
             + (f"; the old collection is kept as {report.kept_as!r}" if report.kept_as else "; the old collection was dropped"))
    return report


def _count(c: StoreClient, name: str) -> int:
    return int(c.query(name, filter="", output_fields=["count(*)"])[0]["count(*)"])


def _copy(c: StoreClient, src: str, dst: str, embedder: Embedder | None, batch_size: int, report: ReembedReport,
          progress: Progress) -> None:
    """Every source row not yet in the target, with a new vector (its own when `embedder` is None) and
    without a version-4 `xvector` (store/xvector.py keeps those apart now); progress once per page."""
    dropped = (*_NO_VECTOR, XVECTOR) if embedder is not None else ("sparse", XVECTOR)
    report.total = _count(c, src)
    partitions = set(c.list_partitions(dst))
    it = c.query_iterator(src, batch_size=batch_size, filter="", output_fields=["*"])
    try:
        while True:
            page = it.next()
            if not page:
                break
            ids = [int(r["id"]) for r in page]
            present = {int(r["id"]) for r in c.query(dst, ids=ids, output_fields=["id"])}
            todo = [{k: v for k, v in r.items() if k not in dropped} for r in page if int(r["id"]) not in present]
            report.resumed += len(page) - len(todo)
            if todo:
                if embedder is not None:
                    for row, vec in zip(todo, embedder.encode([r["text"] for r in todo], role="passage")):
                        row["vector"] = vec.tolist()
                for part, idx in group_by_bucket(todo).items():  # each row in its user's bucket, as MilvusStore does
                    if part not in partitions:
                        c.create_partition(dst, part)
                        partitions.add(part)
                    c.insert(dst, data=[todo[i] for i in idx], partition_name=part)
                report.embedded += len(todo)
            progress(f"re-embedded {report.embedded + report.resumed}/{report.total}"
                     + (f" ({report.resumed} by an earlier run)" if report.resumed else ""))
    finally:
        it.close()


def _ids(c: StoreClient, name: str) -> set[int]:
    it = c.query_iterator(name, batch_size=4096, filter="", output_fields=["id"])
    out: set[int] = set()
    try:
        while page := it.next():
            out.update(int(r["id"]) for r in page)
    finally:
        it.close()
    return out


def _reconcile(c: StoreClient, src: str, dst: str) -> None:
    """The target must hold exactly the source's ids before the switch: rows deleted from the source
    meanwhile go; a source row still missing (written during the run) stops the switch."""
    src_ids, dst_ids = _ids(c, src), _ids(c, dst)
    extra = sorted(dst_ids - src_ids)
    if extra:
        c.delete(dst, filter=F.in_("id", extra))
    missing = src_ids - dst_ids
    if missing:
        raise StoreError(f"{len(missing)} memories were written to {src!r} during the re-embed; stop the writers and "
                         "rerun the same command (it resumes)")


def _reembed_graph(c: StoreClient, name: str, embedder: Embedder, batch_size: int, progress: Progress) -> int:
    """`<name>_graph` (store/graph.py) into `<name>_graph__reembed` with new vectors: an entity's name and a
    triple's sentence (both kept in `name`) embedded again, a ledger row's unit vector at the new size.
    Keyed by `key`, so a resumed run skips what it copied. Returns the rows copied; 0 without a graph."""
    src, dst = name + GRAPH, name + GRAPH + TARGET_SUFFIX
    if not c.has_collection(src):
        return 0
    from .graph import graph_schema  # the graph's own schema at the new dimension

    dim = embedder.dim
    if not c.has_collection(dst):
        schema, index = graph_schema(c, dim)
        create_indexed(c, dst, schema, index)  # as GraphCollection.ensure makes it
    c.load_collection(src)
    c.load_collection(dst)
    done = 0
    it = c.query_iterator(src, batch_size=batch_size, filter="", output_fields=["*"])
    try:
        while page := it.next():
            keys = [r["key"] for r in page]
            present = {r["key"] for r in c.query(dst, filter=F.in_("key", keys), output_fields=["key"], limit=len(keys))}
            todo = [{k: v for k, v in r.items() if k != "vector"} for r in page if r["key"] not in present]
            texts = [r["name"] for r in todo if r["kind"] != "memory"]
            vectors = iter(embedder.encode(texts, role="passage")) if texts else iter(())
            unit = [1.0] + [0.0] * (dim - 1)
            for row in todo:
                row["vector"] = unit if row["kind"] == "memory" else next(vectors).tolist()
            if todo:
                c.insert(dst, data=todo)
            done += len(page)
            progress(f"graph: re-embedded {done} rows")
    finally:
        it.close()
    return done


def _switch_graph(c: StoreClient, name: str, kept_as: str) -> bool:
    """Put a copied graph in place beside its memories (the old one kept as `<kept_as>_graph`, the pair of
    the kept memories); True when there was one to switch."""
    target = name + GRAPH + TARGET_SUFFIX
    if not c.has_collection(target):
        return False
    if c.has_collection(name + GRAPH):
        c.release_collection(name + GRAPH)
        c.rename_collection(name + GRAPH, kept_as + GRAPH)
    c.rename_collection(target, name + GRAPH)
    return True


def fill_companion(c: StoreClient, name: str, embedder: Any, batch_size: int, progress: Any,
                   caps: Capabilities) -> tuple[int, int]:
    """`hippocampus reembed --crosslang`: every memory of `name` not yet in its companion gets its cross
    vector, page by page (an interrupted run resumes: what is there is kept), then the memories collection
    names the model, which makes the companion searchable. Writers must be stopped meanwhile. Returns
    (added, already there)."""
    cname = name + SUFFIX
    if c.has_collection(cname):
        model = (c.describe_collection(cname).get("properties") or {}).get(PROP_CROSS)
        if model != embedder.model_name:
            raise SchemaMismatchError(f"{cname!r} holds cross-language vectors from {model!r}, not {embedder.model_name!r}")
    else:
        schema, index = xvec_schema(c, embedder.dim, caps.companion_index)
        create_indexed(c, cname, schema, index, properties={PROP_CROSS: embedder.model_name, PROP_BUCKETS: str(NUM_BUCKETS)},
                       **caps.create_kwargs())
    bucketed = (c.describe_collection(cname).get("properties") or {}).get(PROP_BUCKETS) == str(NUM_BUCKETS)
    known = set(c.list_partitions(cname))

    def call(method: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(c, method)(*args, **kwargs)

    c.load_collection(cname)
    c.load_collection(name)
    have: set[int] = set()
    it = c.query_iterator(cname, batch_size=4096, filter="", output_fields=["id"])
    try:
        while page := it.next():
            have.update(int(r["id"]) for r in page)
    finally:
        it.close()
    total = int(c.query(name, filter="", output_fields=["count(*)"])[0]["count(*)"])
    added = kept = 0
    it = c.query_iterator(name, batch_size=batch_size, filter="", output_fields=["id", "user_id", "memory_type", "text"])
    try:
        while page := it.next():
            todo = [r for r in page if int(r["id"]) not in have]
            kept += len(page) - len(todo)
            if todo:
                vecs = embedder.encode([str(r.get("text") or "") for r in todo], role="passage")
                write_rows(call, cname, known if bucketed else None, "upsert", [xvec_row(r, r["id"], v) for r, v in zip(todo, vecs)])
                added += len(todo)
            progress(f"cross-language vectors: {added + kept}/{total}" + (f" ({kept} there before)" if kept else ""))
    finally:
        it.close()
    c.alter_collection_properties(name, {PROP_CROSS: embedder.model_name})
    return added, kept
