"""jieba without its dictionary for text that has no Chinese character (issue 41).

Why: milvus-lite tokenizes every BM25 query and every written text with jieba inside this process
(store/analyzer.py), and jieba reads its 350,000-word prefix dictionary the first time it cuts
anything: 0.75 s from its own cache on an idle machine, about 1.5 s beside a CLI's imports, for
"where does alice live" as for a Chinese sentence. A `hippocampus search` paid it every time.

Why the answer is the same: jieba looks words up only for the runs of its "Han" class
(\\u4E00-\\u9FD5 and a-zA-Z0-9+#&._%-), and only substrings of those runs. In a text without a character
in \\u4E00-\\u9FD5 every looked-up string is made of the ASCII word characters alone, so a dictionary
that keeps only such entries (a few dozen: "C++", "AT&T", prefixes of words like "T恤"), with the
full dictionary's total frequency, makes every look-up answer as the full one does. jieba's own
`gen_pfdict` builds the full dictionary once; the subset is cached in the models directory, named
by the dictionary file's size and modification time. The first text with a Chinese character (or
any use of jieba's default tokenizer that loads it: add_word, posseg) sends everything after it to
the real tokenizer, which loads as before. tests/store/test_jieba_light.py holds it to jieba's own
output on random and real text.
"""

from __future__ import annotations

import logging
import marshal
import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..config import models_dir

log = logging.getLogger(__name__)

HAN = re.compile("[\u4e00-\u9fd5]")  # jieba's re_han_default without its ASCII part
WORD = re.compile(r"[a-zA-Z0-9+#&._%\-]+")  # the ASCII part: what a look-up can hold in a text without HAN
FORMAT = 1
_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}  # "tokenizer": the light Tokenizer once made; "failed": True when it cannot be


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


def _light() -> Any | None:
    """The Tokenizer over the ASCII subset, made once; None when it cannot be (then jieba answers)."""
    if "tokenizer" in _STATE or "failed" in _STATE:
        return _STATE.get("tokenizer")
    with _LOCK:
        if "tokenizer" not in _STATE and "failed" not in _STATE:
            try:
                import jieba

                tok = jieba.Tokenizer()
                tok.FREQ, tok.total = ascii_subset()
                tok.initialized = True
                _STATE["tokenizer"] = tok
            except Exception as exc:  # noqa: BLE001 - any failure leaves jieba as it was
                log.warning("jieba's ASCII shortcut is off (%s): its dictionary loads for every text", exc)
                _STATE["failed"] = True
    return _STATE.get("tokenizer")


def _route(sentence: Any, kwargs: dict[str, Any]) -> Any | None:
    """The light tokenizer when it answers this text as jieba's would, else None."""
    import jieba

    dt = jieba.dt
    if (dt.initialized or dt.dictionary is not jieba.DEFAULT_DICT or not isinstance(sentence, str)
            or kwargs.get("use_paddle") or HAN.search(sentence)):
        return None
    return _light()


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
