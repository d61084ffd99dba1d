"""What the two collections look like, how an existing one is checked, and recovery from a
creation that a killed process left half done. MilvusStore (store/milvus.py) uses these."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from ..errors import SchemaMismatchError
from ..models import TEXT_MAX_BYTES
from .analyzer import analyzer_params
from .backend import StoreClient, kinds

log = logging.getLogger(__name__)

SCHEMA_VERSION = "5"  # 2: stop filter on the BM25 analyzer (store/analyzer.py); 3: user buckets (store/buckets.py);
# 4: a cross-language vector field `xvector` inside (opt-in, one release); 5: the cross-language vectors in the
# companion `<name>_xvec` (store/xvector.py), the memories collection laid out as in 3. A version-3 or -4
# collection opens and searches as before (`hippocampus reembed --crosslang` adds or moves the vectors)
COMPATIBLE_VERSIONS = ("3", "4", "5")
XVECTOR = "xvector"
PROP_CROSS = "hippocampus.crosslang_model"  # the companion's model, once it holds every memory
ID_MAX_LEN = 128
WHO_MAX_LEN = 128  # who defaults to user_id (VARCHAR(128))
PROP_MODEL = "hippocampus.embedding_model"
PROP_VERSION = "hippocampus.schema_version"
PROP_FULL_TEXT = "hippocampus.full_text"  # "false" on a collection made without BM25 (absent otherwise)


def memories_schema(c: StoreClient, dim: int, full_text: bool = True, auto_id: bool = True,
                    xdim: int | None = None) -> tuple[Any, Any]:
    """Every memory, episodic and semantic: scalar fields, the dense vector and the BM25 sparse
    vector that Milvus computes from `text`. Without `full_text` (a server before Milvus 2.5:
    store/capabilities.py) there is no analyzer, sparse field or BM25 function; without `auto_id`
    hippocampus assigns the ids (store/ids.py); with `xdim`, the cross-language vector field `xvector` of
    schema version 4 (tests of the upgrade only: version 5 keeps them in store/xvector.py's companion)."""
    DataType, Function, FunctionType = kinds(c)
    schema = c.create_schema(auto_id=auto_id, enable_dynamic_field=True)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("user_id", DataType.VARCHAR, max_length=ID_MAX_LEN)
    schema.add_field("memory_type", DataType.VARCHAR, max_length=32)
    schema.add_field("ts", DataType.INT64)
    schema.add_field("chat_id", DataType.VARCHAR, max_length=ID_MAX_LEN)
    schema.add_field("who", DataType.VARCHAR, max_length=WHO_MAX_LEN)
    # jieba: Chinese words + English tokens, stop words dropped
    analyzed = {"enable_analyzer": True, "analyzer_params": analyzer_params()} if full_text else {}
    schema.add_field("text", DataType.VARCHAR, max_length=TEXT_MAX_BYTES, **analyzed)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
    if xdim:
        schema.add_field(XVECTOR, DataType.FLOAT_VECTOR, dim=xdim)
    if full_text:
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_field("hit_count", DataType.INT64)
    schema.add_field("metadata", DataType.JSON)
    index = c.prepare_index_params()
    index.add_index("vector", index_type="AUTOINDEX", metric_type="COSINE")
    if xdim:
        index.add_index(XVECTOR, index_type="AUTOINDEX", metric_type="COSINE")
    if full_text:
        schema.add_function(
            Function(name="text_bm25", function_type=FunctionType.BM25, input_field_names=["text"], output_field_names=["sparse"])
        )
        index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    return schema, index


def history_schema(c: StoreClient) -> tuple[Any, Any]:
    """One row per change to a memory (add, update, merge, delete), as JSON."""
    DataType = kinds(c).DataType
    schema = c.create_schema(auto_id=True, enable_dynamic_field=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("memory_id", DataType.INT64)
    schema.add_field("user_id", DataType.VARCHAR, max_length=ID_MAX_LEN)
    schema.add_field("action", DataType.VARCHAR, max_length=32)
    schema.add_field("at", DataType.INT64)
    schema.add_field("event", DataType.JSON)
    schema.add_field("_v", DataType.FLOAT_VECTOR, dim=2)  # Milvus requires a vector field
    index = c.prepare_index_params()
    index.add_index("_v", index_type="AUTOINDEX", metric_type="L2")
    return schema, index


def check_existing(info: dict[str, Any], collection: str, uri: str, dim: int, model: str) -> None:
    """Refuse a collection made by another schema version or holding another embedder's vectors."""
    fields = {f["name"]: f for f in info.get("fields", [])}
    vec = fields.get("vector")
    props = info.get("properties") or {}
    sparse_ok = "sparse" in fields or props.get(PROP_FULL_TEXT) == "false"
    if vec is None or not sparse_ok or props.get(PROP_VERSION) not in COMPATIBLE_VERSIONS:
        raise SchemaMismatchError(
            f"collection {collection!r} at {uri} was not created by this version of hippocampus "
            f"(schema version {props.get(PROP_VERSION)!r}, expected {SCHEMA_VERSION!r})",
            uri=uri,
        )
    found_dim = int((vec.get("params") or {}).get("dim", -1))
    found_model = props.get(PROP_MODEL)
    if found_dim != dim or found_model != model:
        raise SchemaMismatchError(
            f"collection {collection!r} at {uri} holds {found_dim}-d vectors from {found_model!r}, "
            f"but the configured embedder is {model!r} ({dim}-d). "
            "Mixing them would make similarities meaningless: use another collection_name or milvus_uri, "
            "or re-embed the store.",
            uri=uri,
        )


def remove_half_created(uri: str, name: str) -> bool:
    """milvus-lite makes the collection directory, then writes schema.json (tmp + rename). A SIGKILL
    in between leaves a directory without schema.json that milvus-lite neither lists nor can
    re-create. Such a directory holds no data; remove it so that the store opens again."""
    if "://" in uri:
        return False
    col_dir = Path(uri).expanduser().absolute() / "collections" / name
    if not col_dir.is_dir() or (col_dir / "schema.json").exists():
        return False
    leftovers = [p for p in col_dir.rglob("*") if p.is_file() and not p.name.endswith(".tmp")]
    if leftovers:
        return False
    log.warning("removing %s, left half-created by an interrupted process", col_dir)
    shutil.rmtree(col_dir)
    return True


def leases_schema(c: StoreClient) -> tuple[Any, Any]:
    """One row per claim (and one `fence` row per name holding its newest token)."""
    DataType = kinds(c).DataType
    schema = c.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("key", DataType.VARCHAR, max_length=256, is_primary=True)
    schema.add_field("grp", DataType.VARCHAR, max_length=32)
    schema.add_field("name", DataType.VARCHAR, max_length=160)
    schema.add_field("kind", DataType.VARCHAR, max_length=16)
    schema.add_field("owner", DataType.VARCHAR, max_length=256)
    schema.add_field("what", DataType.VARCHAR, max_length=32)
    schema.add_field("token", DataType.INT64)
    schema.add_field("claimed_at", DataType.INT64)
    schema.add_field("expires_at", DataType.INT64)
    schema.add_field("_v", DataType.FLOAT_VECTOR, dim=2)  # Milvus requires a vector field
    index = c.prepare_index_params()
    index.add_index("_v", index_type="AUTOINDEX", metric_type="L2")
    return schema, index
