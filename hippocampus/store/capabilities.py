"""What the Milvus behind a store can do, found when the store opens, so that each feature the store
uses degrades in one known way instead of failing deep inside a search.

Measured on this project's machine (docs/store-servers.md):
- milvus-lite 3.x, in-process or `milvus-lite server`: everything; a read sees every earlier write.
- Milvus 2.3 (PyPI `milvus`): no BM25 function, analyzer or sparse vector (creating the collection
  fails on the sparse index; full-text search came in 2.5), so hybrid and bm25 searches run dense;
  upsert is refused on auto-id collections, so ids are assigned here (store/ids.py; from 2.4.10 Milvus
  would give the upserted row a new id); the default Bounded consistency missed every read made right
  after its write, and Session missed deletes, so the collections are made Strong (a read waits for
  the next time tick: ~0.3 s on 2.3's defaults).
- on 2.3 as on milvus-lite: partitions (store/buckets.py), JSON and dynamic fields, query iterators,
  count(*), delete by expression and collection properties.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, replace
from importlib import metadata
from typing import Any

from ..errors import StoreError
from .backend import StoreClient

log = logging.getLogger(__name__)

FULL_TEXT_SINCE = (2, 5)  # Milvus' BM25 function, analyzers on VARCHAR
JSON_EXISTS_SINCE = (2, 4)  # `exists` on JSON keys in filter expressions (older servers: checked after retrieval)
_STRONG = 0  # ConsistencyLevel.Strong, as describe_collection reports it
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class Capabilities:
    """What a store can do on its server and collection; retrieval asks it which search mode serves."""

    engine: str  # "milvus-lite" (in-process or its server mode) or "milvus"
    version: str  # the engine's version, e.g. "3.2.2" or "2.3.5"; "unknown" when the server would not say
    full_text: bool = True  # BM25 over `text`: the bm25 and hybrid search modes
    client_ids: bool = False  # ids are assigned by hippocampus (store/ids.py), not by Milvus
    json_exists: bool = True  # `exists` in JSON filters (Milvus 2.4+, milvus-lite); else filtered after retrieval
    consistency: str | None = None  # level the store's collections are made with; None: the engine's default

    @property
    def search_modes(self) -> tuple[str, ...]:
        return ("hybrid", "dense", "bm25") if self.full_text else ("dense",)

    def serve(self, mode: str) -> str:
        """The search mode that serves a request for `mode`: without full text, hybrid and bm25 run dense."""
        return mode if self.full_text or mode == "dense" else "dense"

    @property
    def companion_index(self) -> str:
        """The cross-language companion's vector index. milvus-lite: brute force (FLAT), which searches the
        segment's own vector matrix (exact, and only the rows the user filter keeps), where AUTOINDEX
        builds a faiss HNSW beside it at every flush and compaction: a second copy of every 512-d vector,
        where every search names one user's bucket, small enough for brute force (docs/decisions.md,
        "The companion indexed FLAT"). A Milvus server: AUTOINDEX."""
        return "FLAT" if self.engine == "milvus-lite" else "AUTOINDEX"

    def create_kwargs(self) -> dict[str, Any]:
        """Extra create_collection arguments (none on milvus-lite, which keeps its defaults)."""
        return {"consistency_level": self.consistency} if self.consistency else {}

    def require_full_text(self, method: str, uri: str) -> None:
        """For direct callers of the store's BM25 searches; retrieval asks serve() first."""
        if not self.full_text:
            raise StoreError(f"{method}: no full-text search in this store ({self.describe(uri)})", uri=uri)

    def describe(self, uri: str) -> str:
        name = "milvus-lite" if self.engine == "milvus-lite" else "Milvus"
        return f"{name} {self.version} at {uri}"


def detect(client: StoreClient, uri: str) -> Capabilities:
    """Ask the server its version (a local milvus-lite path needs no question) and derive what it can do."""
    if "://" not in uri:
        return Capabilities("milvus-lite", _lite_version())
    try:
        raw = str(client.get_server_version())
    except Exception as exc:  # a proxy or an old server that will not say: assume a current Milvus
        log.info("Milvus at %s did not report its version (%s); assuming a current one", uri, exc)
        raw = ""
    return from_version(raw)


def from_version(raw: str) -> Capabilities:
    """Capabilities from a server's version string: "milvus_lite-3.2.2", "v2.3.5-lite" (the PyPI
    `milvus` package: a real Milvus), "v2.5.4", or a cloud's "... Compatible with Milvus 2.5"."""
    found = _VERSION.search(raw or "")
    if raw.startswith("milvus_lite"):
        return Capabilities("milvus-lite", found.group(0) if found else "unknown")
    if found is None:  # nothing to go by: a current Milvus; a failure would then say what is missing
        return Capabilities("milvus", "unknown", full_text=True, client_ids=True, consistency="Strong")
    major_minor = (int(found.group(1)), int(found.group(2)))
    return Capabilities(
        "milvus", found.group(0), full_text=major_minor >= FULL_TEXT_SINCE, client_ids=True, consistency="Strong",
        json_exists=major_minor >= JSON_EXISTS_SINCE,
    )


def for_collection(caps: Capabilities, info: dict[str, Any]) -> Capabilities:
    """What an existing collection allows: no sparse field means no full text, even on a newer server;
    an auto-id collection keeps Milvus' ids."""
    fields = {f["name"]: f for f in info.get("fields", [])}
    auto_id = bool((fields.get("id") or {}).get("auto_id", info.get("auto_id", False)))
    return replace(caps, full_text=caps.full_text and "sparse" in fields, client_ids=not auto_id)


def warnings(server: Capabilities, caps: Capabilities, uri: str, collection: str, info: dict[str, Any] | None) -> list[str]:
    """What the store will do differently from full capability, one sentence each (logged once at open)."""
    out: list[str] = []
    if not caps.full_text:
        modes = "hybrid and bm25 searches run dense-only (this store serves: dense)"
        if not server.full_text:
            out.append(f"{server.describe(uri)} has no full-text search (BM25 needs Milvus 2.5): {modes}")
        else:
            out.append(f"collection {collection!r} at {uri} was created without full-text search: {modes}")
    if info is not None and caps.engine == "milvus":
        if not caps.client_ids:
            out.append(
                f"collection {collection!r} at {uri} has ids assigned by Milvus, whose upsert refuses such rows "
                "(before 2.4.10) or gives them a new id: updates may fail or change memory ids; re-create the "
                "collection to have hippocampus assign ids"
            )
        if info.get("consistency_level", _STRONG) != _STRONG:
            out.append(
                f"collection {collection!r} at {uri} is not Strong-consistent: a read right after a write or "
                "delete may miss it; re-create the collection to fix"
            )
    return out


def _lite_version() -> str:
    try:
        return metadata.version("milvus-lite")
    except metadata.PackageNotFoundError:  # pragma: no cover
        return "unknown"
