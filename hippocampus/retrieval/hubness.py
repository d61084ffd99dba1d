"""The hubness stage: some memories sit close to every query, whatever it asks.

With the bundled e5-small, Chinese passages score about 0.07 higher against any question than
English ones (the mean of a memory's ten best similarities to twenty everyday questions: 0.855-0.863
for Chinese, 0.767-0.785 for English), more than the gap between the right memory and a wrong
one; "where does alice live?" ranked "我下个月要去东京出差" above "I moved to Berlin in May". This
is the hubness of high-dimensional embeddings, and the cross-lingual retrieval literature's remedy
is CSLS (Conneau et al. 2018): subtract each item's mean similarity to its nearest queries. Here a
memory's hub score is its mean top-10 similarity to a fixed bilingual probe set of everyday
questions (PROBES), and the stage lowers each candidate's similarity by `weight` times its hub
score above the candidates' mean. The raw cosine stays in `SearchHit.similarity`; the correction is
the signal `hubness`. Pure functions; the probe vectors are the caller's (one embedding, cached).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

PROBES: tuple[str, ...] = (
    "where do I live?", "what do I like to eat?", "when is my birthday?", "who is my sister?", "what is my job?",
    "do I have pets?", "where did I go last week?", "what am I allergic to?", "what are my plans?",
    "what music do I like?", "我住在哪里？", "我喜欢吃什么？", "我的生日是哪天？", "我姐姐是谁？", "我做什么工作？",
    "我养宠物吗？", "我上周去了哪里？", "我对什么过敏？", "我有什么计划？", "我喜欢什么音乐？",
)
TOP = 10


def hub_scores(vectors: np.ndarray, probes: np.ndarray, top: int = TOP) -> np.ndarray:
    """Each row's mean similarity to its `top` most similar probe questions (rows unit length)."""
    if len(vectors) == 0:
        return np.zeros(0, dtype=np.float32)
    sims = np.asarray(vectors, dtype=np.float32) @ np.asarray(probes, dtype=np.float32).T
    k = min(top, sims.shape[1])
    return np.sort(sims, axis=1)[:, -k:].mean(axis=1)


def corrections(hubs: Sequence[float], weight: float) -> list[float]:
    """What each candidate's similarity gains (a loss above the mean hub score, a gain below it)."""
    if not len(hubs) or weight == 0:
        return [0.0] * len(hubs)
    mean = float(np.mean(hubs))
    return [-weight * (float(h) - mean) for h in hubs]
