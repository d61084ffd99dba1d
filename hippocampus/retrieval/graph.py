"""The graph stage: memories linked to the query through the user's graph (store/graph.py) join the
candidates or rise among them. Similarity finds each piece of evidence on its own; the graph
connects the pieces: a triple that matches the question brings every memory that states it, and a
rare entity that the best candidates name brings the other memories that name it.

Three paths, each giving a linked memory a strength in [0, 1]:
- `triple`: the query's vector against the triples' sentences ("Caroline moved from Sweden"); the
  best triples' supporting memories, by similarity relative to the best triple;
- `entity`: entities the query names (an entity among the nearest to the query whose name appears in
  the query's words), weighted by inverse frequency: "Sweden" links, the speaker's name barely does;
- `hop`: rare entities named by the top candidates, one hop to the other memories that name them,
  weighted by inverse frequency and the candidate's rank.
A memory's strength is its best path's; `score += weight * strength`. Linked memories that were not
candidates are read from the store within the search's scope (so another user's memory, a
superseded fact or another memory type never enters) and join with their own cosine similarity.
The path shows in the hit's signals (`graph_triple`, `graph_entity` or `graph_hop`: the bonus it
gave), for "why did this come back".
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .fusion import Candidate

PATHS = ("triple", "entity", "hop")


@dataclass(frozen=True)
class GraphParams:
    """How far the graph stage reaches; `weight` 0 turns it off."""

    weight: float = 0.0
    triples: int = 8  # nearest triples read per query
    triple_floor: float = 0.9  # a triple counts when its similarity is at least this share of the best one's
    entities: int = 8  # nearest entities read per query (those the query names count)
    seeds: int = 3  # top candidates whose rare entities are followed one hop
    min_idf: float = 0.35  # normalised inverse frequency below which an entity links nothing ("I", the speaker)
    max_new: int = 20  # linked memories that may join the candidates

    @property
    def active(self) -> bool:
        return self.weight > 0


def words(text: str) -> str:
    """The matching form of a text for names: NFKC, case-folded, non-word characters as spaces."""
    return " " + " ".join(re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold())) + " "


def named_in(name: str, query_words: str) -> bool:
    """The entity's name appears in the query as whole words (or, for Chinese, as a substring)."""
    w = words(name).strip()
    if not w:
        return False
    if re.search(r"[\u4e00-\u9fff]", w):
        return w.replace(" ", "") in query_words.replace(" ", "")
    return f" {w} " in query_words


def idf(supports: int, memories: int) -> float:
    """Inverse frequency normalised to [0, 1]: 1 for a name in one memory, 0 for one in all of them."""
    if memories <= 1 or supports <= 0:
        return 1.0 if supports > 0 else 0.0
    return max(0.0, min(1.0, math.log(memories / supports) / math.log(memories)))


def triple_links(triples: Sequence[dict[str, Any]], params: GraphParams) -> dict[int, float]:
    """Memory id -> strength from the triples nearest to the query (rows carry `similarity`)."""
    best = max((t["similarity"] for t in triples), default=0.0)
    out: dict[int, float] = {}
    if best <= 0:
        return out
    for t in triples:
        rel = t["similarity"] / best
        if rel >= params.triple_floor:
            strength = (rel - params.triple_floor) / (1 - params.triple_floor) if params.triple_floor < 1 else 1.0
            for m in t["supports"]:
                out[m] = max(out.get(m, 0.0), strength)
    return out


def entity_links(entities: Sequence[dict[str, Any]], query: str, memories: int, params: GraphParams) -> dict[int, float]:
    """Memory id -> strength from the entities the query names, by their inverse frequency."""
    qw = words(query)
    out: dict[int, float] = {}
    for e in entities:
        if not named_in(e["name"], qw):
            continue
        weight = idf(len(e["supports"]), memories)
        if weight < params.min_idf:
            continue
        for m in e["supports"]:
            out[m] = max(out.get(m, 0.0), weight)
    return out


def hop_links(seed_ids: Sequence[int], entities: Iterable[dict[str, Any]], memories: int, params: GraphParams) -> dict[int, float]:
    """Memory id -> strength one hop from the seeds (best first) through the rare entities they name."""
    rank = {m: i for i, m in enumerate(seed_ids)}
    out: dict[int, float] = {}
    for e in entities:
        weight = idf(len(e["supports"]), memories)
        if weight < params.min_idf:
            continue
        seeds = [rank[m] for m in e["supports"] if m in rank]
        if not seeds:
            continue
        strength = weight / (1 + min(seeds))  # the best candidate's entities weigh most
        for m in e["supports"]:
            if m not in rank:
                out[m] = max(out.get(m, 0.0), strength)
    return out


def combine(paths: dict[str, dict[int, float]]) -> dict[int, tuple[float, str]]:
    """Memory id -> (its best strength, the path that gave it)."""
    out: dict[int, tuple[float, str]] = {}
    for path in PATHS:
        for m, s in paths.get(path, {}).items():
            if s > out.get(m, (0.0, ""))[0]:
                out[m] = (s, path)
    return out


def apply(cands: list[Candidate], linked: dict[int, tuple[float, str]], joined: Sequence[Candidate], weight: float) -> list[Candidate]:
    """Add each linked memory's bonus, let the `joined` (linked, read from the store) in, re-sort."""
    out = list(cands) + list(joined)
    for c in out:
        strength, path = linked.get(c.id, (0.0, ""))
        if strength > 0:
            c.parts[f"graph_{path}"] = weight * strength  # the signal's name says the path: graph_triple, graph_entity, graph_hop
            c.score += weight * strength
    return sorted(out, key=lambda c: -c.score)


def cosine(query: Sequence[float], vector: Sequence[float]) -> float:
    q = np.asarray(query, dtype=np.float32)
    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(q) * np.linalg.norm(v))
    return float(q @ v / norm) if norm > 0 else 0.0
