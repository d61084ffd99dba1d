"""A local store runs milvus-lite as it ships (issue 56, part 4; docs/architecture.md, "Dependencies
through what they document"): opening, writing, flushing, searching and reopening a store replaces no
method of any milvus-lite class. This package once replaced `MemTable.to_search_snapshot`,
`MemTable._build_data_table` and `Segment.build_or_load_index` at run time (docs/performance.md,
"No run-time patches of milvus-lite")."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest

from hippocampus import Memory

pytest.importorskip("milvus_lite")


def _replaced() -> list[str]:
    """Every function held by a class of a loaded milvus_lite module that was defined outside milvus_lite
    and the standard library (an Enum's class holds the enum module's own, a namedtuple's its generated
    `__new__`)."""
    out = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("milvus_lite") or module is None:
            continue
        for cls_name, cls in list(vars(module).items()):
            if not inspect.isclass(cls) or not getattr(cls, "__module__", "").startswith("milvus_lite"):
                continue
            for attr, value in list(vars(cls).items()):
                fn = getattr(value, "__func__", value)
                home = (fn.__module__ or "") if inspect.isfunction(fn) else "milvus_lite"
                if not home.startswith(("milvus_lite", "namedtuple_")) and home.split(".")[0] not in sys.stdlib_module_names:
                    out.append(f"{name}.{cls_name}.{attr} ({fn.__module__})")
    return out


def test_a_local_store_replaces_no_milvus_lite_method(tmp_path: Path, embedder) -> None:
    path = str(tmp_path / "m.db")
    with Memory(milvus_uri=path, embedder=embedder) as m:
        m.add_many([{"text": t, "user_id": "mei"} for t in ("我对芒果有点过敏。", "I take the 8:15 train to work.")])
        m.store.client.flush(m.store.cross.name)  # a segment and its FLAT index
        assert m.search("Which fruit am I allergic to?", user_id="mei", limit=3).all
    with Memory(milvus_uri=path, embedder=embedder) as m:  # reopened: segments and their indexes loaded
        assert m.search("我对什么过敏？", user_id="mei", limit=3).all
        assert any(n.startswith("milvus_lite.storage") for n in sys.modules)
        assert _replaced() == []
