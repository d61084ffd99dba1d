"""milvus-lite's BM25 analyzer cuts with jieba's default tokenizer in this process; the store leaves jieba
as jieba made it (issue 56: no run-time patch of a dependency). The price, said in docs/performance.md:
the first cut in a process loads jieba's dictionary (about 1 s from jieba's own cache)."""

from __future__ import annotations

from pathlib import Path

import jieba

from hippocampus import Memory


def test_a_store_searches_mixed_text_and_leaves_jieba_cut_as_jieba_made_it(tmp_path: Path, embedder) -> None:
    own = (jieba.cut, jieba.cut_for_search)
    with Memory(milvus_uri=str(tmp_path / "m.db"), embedder=embedder) as m:
        m.add("我住在北京，在一家咖啡店工作", user_id="ann")
        m.add("Alice lives in Porto", user_id="ann")
        assert m.search("北京 咖啡店", user_id="ann", limit=2)
        assert m.search("where does alice live", user_id="ann", limit=2)
    assert (jieba.cut, jieba.cut_for_search) == own
    assert jieba.cut.__func__ is jieba.Tokenizer.cut and jieba.cut.__self__ is jieba.dt  # jieba's own, not a wrapper
    assert jieba.cut_for_search.__func__ is jieba.Tokenizer.cut_for_search
