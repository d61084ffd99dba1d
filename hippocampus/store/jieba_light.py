"""jieba without its dictionary in memory (issue 41).

Why: milvus-lite tokenizes every BM25 query and every written text with jieba inside this process
(store/analyzer.py), and jieba reads its 350,000-word prefix dictionary the first time it cuts
anything: 0.75-1.3 s from its own cache and +62 MB resident, for "where does alice live" as for a
Chinese sentence. A `hippocampus search` or `add` paid it every time.

Text without a Chinese character: jieba looks words up only for the runs of its "Han" class
(\\u4E00-\\u9FD5 and a-zA-Z0-9+#&._%-), and only substrings of those runs. In a text without a character
in \\u4E00-\\u9FD5 every looked-up string is made of the ASCII word characters alone, so a dictionary
that keeps only such entries (a few dozen: "C++", "AT&T", prefixes of words like "T恤"), with the
full dictionary's total frequency, makes every look-up answer as the full one does (`ascii_subset`).

Text with one: the whole dictionary, hashed (`HashedFreq`): its words' 64-bit keys sorted in one file
mapped into memory, a look-up a binary search. The first Chinese text a process cuts took 1 ms and
+8 MB instead of 0.8-1.3 s and +62 MB; a cut costs ~0.3 ms against ~0.06 ms (87 sentences of
tests/data/crosslang_pairs.jsonl). Both are built once from jieba's own `gen_pfdict` and cached in the
models directory, named by the dictionary file's size and modification time. Any use of jieba's default
tokenizer that loads its dictionary (add_word, posseg) sends everything after it to the real tokenizer.
tests/store/test_jieba_light.py holds both to jieba's own output on random and real text.
"""
from __future__ import annotations

import hashlib
import logging
import marshal
import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..config import models_dir

log = logging.getLogger(__name__)

HAN = re.compile("[\u4e00-\u9fd5]")  # jieba's re_han_default without its ASCII part
WORD = re.compile(r"[a-zA-Z0-9+#&._%\-]+")  # the ASCII part: what a look-up can hold in a text without HAN
FORMAT = 1
_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}  # "light" / "hashed": the Tokenizers once made; "<name> failed": True when one cannot be


def _dictionary() -> Path:
    import jieba

    return Path(jieba.__file__).parent / jieba.DEFAULT_DICT_NAME


def cache_path(dictionary: Path | None = None) -> Path:
    """Where the subset of this jieba's dictionary is kept."""
    dictionary = dictionary or _dictionary()
    st = dictionary.stat()
    return models_dir() / f"jieba-ascii-{st.st_size}-{st.st_mtime_ns}-f{FORMAT}.marshal"


def ascii_subset(dictionary: Path | None = None) -> tuple[dict[str, int], int]:
    """The entries of jieba's prefix dictionary made of ASCII word characters only, and the total
    frequency of the whole dictionary (read from the cache, else built by jieba's gen_pfdict and cached)."""
    import jieba

    dictionary = dictionary or _dictionary()
    path = cache_path(dictionary)
    try:
        freq, total = marshal.loads(path.read_bytes())
        if isinstance(freq, dict) and isinstance(total, int) and all(
                isinstance(k, str) and WORD.fullmatch(k) and isinstance(v, int) for k, v in freq.items()):
            return freq, total
        log.warning("ignoring %s: not a jieba subset", path)
    except (OSError, ValueError, EOFError, TypeError):
        pass
    with open(dictionary, "rb") as fh:
        full, total = jieba.Tokenizer.gen_pfdict(fh)
    freq = {k: v for k, v in full.items() if WORD.fullmatch(k)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(marshal.dumps((freq, total)))
        os.replace(tmp, path)
    except OSError as exc:  # a read-only home: built again next time
        log.debug("could not cache jieba's ASCII entries in %s: %s", path, exc)
    return freq, total


def hashed_path(dictionary: Path | None = None) -> Path:
    """Where the hashed form of this jieba's whole dictionary is kept."""
    dictionary = dictionary or _dictionary()
    st = dictionary.stat()
    return models_dir() / f"jieba-hashed-{st.st_size}-{st.st_mtime_ns}-f{FORMAT}.npy"


def word_key(word: str) -> int:
    """A dictionary word's 64-bit key (stable across processes, unlike hash())."""
    return int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little")


class HashedFreq:
    """jieba's prefix dictionary (498,113 words and prefixes) as what its tokenizer asks of it (`in`, `[]`,
    `get`), answered from one file mapped into memory: the sorted 64-bit keys of its words, their
    frequencies, and the total frequency in a last column. Why: jieba's own dictionary is a Python dict it
    unmarshals on the first Chinese text a process cuts (0.8-1.3 s, +62 MB resident), which every
    `hippocampus add` or `search` with a Chinese character paid; this file is 8 MB on disk, mapped, and a
    look-up is a binary search of a few microseconds. Two words with one key would make one answer for
    the other: the build refuses such a table (none in jieba's dictionary), and a fragment that is no
    word matches a key with odds of about 1 in 10^13 per look-up."""

    def __init__(self, table: np.ndarray):
        self.keys, self.freqs = table[0, :-1], table[1, :-1]
        self.total = int(table[1, -1])

    def get(self, word: str, default: int | None = None) -> int | None:
        k = word_key(word)
        i = int(np.searchsorted(self.keys, np.uint64(k)))
        return int(self.freqs[i]) if i < len(self.keys) and int(self.keys[i]) == k else default

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self.get(word) is not None

    def __getitem__(self, word: str) -> int:
        v = self.get(word)
        if v is None:
            raise KeyError(word)
        return v


def hashed_table(dictionary: Path | None = None) -> np.ndarray:
    """The hashed dictionary (HashedFreq's table), mapped from its file; built from jieba's dictionary
    (its own gen_pfdict) and written there when missing or damaged."""
    import jieba

    dictionary = dictionary or _dictionary()
    path = hashed_path(dictionary)
    try:
        table = np.load(path, mmap_mode="r", allow_pickle=False)
        if table.dtype == np.uint64 and table.ndim == 2 and table.shape[0] == 2 and table.shape[1] > 1 and table[1, -1] > 0:
            return table
        log.warning("ignoring %s: not a hashed jieba dictionary", path)
    except (OSError, ValueError, EOFError):
        pass
    with open(dictionary, "rb") as fh:
        full, total = jieba.Tokenizer.gen_pfdict(fh)
    keys = np.fromiter((word_key(w) for w in full), dtype=np.uint64, count=len(full))
    freqs = np.fromiter(full.values(), dtype=np.uint64, count=len(full))
    order = np.argsort(keys, kind="stable")
    keys, freqs = keys[order], freqs[order]
    if (np.diff(keys) == 0).any():
        raise ValueError("two of jieba's words share a key")
    table = np.stack([np.append(keys, np.uint64(2**64 - 1)), np.append(freqs, np.uint64(total))])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
        np.save(tmp, table, allow_pickle=False)
        os.replace(tmp, path)
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except OSError as exc:  # a read-only home: built again next time
        log.debug("could not cache jieba's hashed dictionary in %s: %s", path, exc)
        return table


def _made(name: str, make: Callable[[], Any]) -> Any | None:
    """The tokenizer `name` ("light" or "hashed"), made once; None when it cannot be (then jieba answers)."""
    if name in _STATE or f"{name} failed" in _STATE:
        return _STATE.get(name)
    with _LOCK:
        if name not in _STATE and f"{name} failed" not in _STATE:
            try:
                _STATE[name] = make()
            except Exception as exc:  # noqa: BLE001 - any failure leaves jieba as it was
                log.warning("jieba's %s dictionary is off (%s): its own loads instead", name, exc)
                _STATE[f"{name} failed"] = True
    return _STATE.get(name)


def _tokenizer(freq: Any, total: int) -> Any:
    import jieba

    tok = jieba.Tokenizer()
    tok.FREQ, tok.total = freq, total
    tok.initialized = True
    return tok


def _hashed() -> Any | None:
    """The Tokenizer over the hashed whole dictionary, for text with Chinese characters."""
    def make() -> Any:
        freq = HashedFreq(hashed_table())
        return _tokenizer(freq, freq.total)
    return _made("hashed", make)


def _light() -> Any | None:
    """The Tokenizer over the ASCII subset, for text without a Chinese character."""
    return _made("light", lambda: _tokenizer(*ascii_subset()))


def _route(sentence: Any, kwargs: dict[str, Any]) -> Any | None:
    """The light tokenizer when it answers this text as jieba's would, else None."""
    import jieba

    dt = jieba.dt
    if (dt.initialized or dt.dictionary is not jieba.DEFAULT_DICT or not isinstance(sentence, str)
            or kwargs.get("use_paddle")):
        return None
    return _hashed() if HAN.search(sentence) else _light()


def _wrap(real: Callable[..., Iterator[str]], name: str) -> Callable[..., Iterator[str]]:
    def cut(sentence: Any, *args: Any, **kwargs: Any) -> Iterator[str]:
        light = _route(sentence, kwargs) if not args else None  # positional flags: as jieba, unrouted
        return getattr(light, name)(sentence, **kwargs) if light is not None else real(sentence, *args, **kwargs)

    cut.__doc__, cut.__wrapped__ = real.__doc__, real  # type: ignore[attr-defined]
    cut._hippocampus_light = True  # type: ignore[attr-defined]
    return cut


def install() -> None:
    """Route jieba.cut and jieba.cut_for_search (what milvus-lite's analyzer calls) through the shortcut;
    idempotent. Other callers of those functions get the same words as before."""
    try:
        import jieba
    except ImportError:  # no jieba: milvus-lite's analyzer says so itself
        return
    with _LOCK:
        for name in ("cut", "cut_for_search"):
            real = getattr(jieba, name)
            if not getattr(real, "_hippocampus_light", False):
                setattr(jieba, name, _wrap(real, name))
