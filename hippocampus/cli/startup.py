"""What the `hippocampus` command's own process sets up before a command runs, so that it imports no
more than the command needs (docs/performance.md, "The command line"):

- pandas: a stand-in that pymilvus and pyarrow load against (lazy_pandas.py).
- deferred modules, which a library under us imports as it loads and our commands never use:
  `requests` (pymilvus' global_topology.py, for Zilliz Cloud's global endpoints: with urllib3 and
  charset_normalizer, about 0.1 s of a command that opens the store) and httpx's own command line
  (`httpx._main`: click, pygments, rich.syntax; `import httpx` loads it for `httpx.main`: about 25 ms of
  a command going through a service); `numpy.f2py` (Fortran wrapping, with charset_normalizer), which
  scipy's array-API copy of numpy's namespace reads as milvus-lite's sparse index loads scipy.sparse
  (about 20 ms of a search).

A deferred module's first import gives a stand-in, made through the import system (so it is an
attribute of its parent as usual, and a package where the real one is); its first attribute use
(`requests.get`, `requests.exceptions`) loads the real module, which replaces it in sys.modules, and
answers from it. `main` of httpx._main is a forwarder, since `from ._main import main` reads it as
httpx loads. Importing a submodule of a deferred package first (`import requests.adapters`) loads the
real package and gives its module.

Only `hippocampus.cli.app.main` calls `prepare()`: a user's process that imports the library is left as it is.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

from . import lazy_pandas

# module -> the callables read from it as its importer loads (forwarded, so that reading them loads nothing)
DEFERRED: dict[str, tuple[str, ...]] = {"requests": (), "httpx._main": ("main",), "numpy.f2py": ()}
_LOCK = threading.RLock()


class _Deferred(types.ModuleType):
    """A module not loaded yet: any attribute loads the real one and answers from it."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name not in ("__file__", "__version__", "__all__"):
            raise AttributeError(name)  # probing by the import machinery and others (__wrapped__, ...)
        return getattr(load(self.__name__), name)


def load(name: str) -> types.ModuleType:
    """The real module `name`, imported now if only its stand-in was (the stand-in leaves sys.modules)."""
    with _LOCK:
        _FINDER.waiting.pop(name, None)
        if isinstance(sys.modules.get(name), _Deferred):
            del sys.modules[name]
        return importlib.import_module(name)


def _forwarder(module: str, name: str) -> Callable[..., Any]:
    def forward(*args: Any, **kwargs: Any) -> Any:
        return getattr(load(module), name)(*args, **kwargs)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = f"{module}.{name}, loading {module} on the first call."
    return forward


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """First on sys.meta_path while a module is deferred: its first import gives the stand-in; a submodule
    of a stand-in package loads the real package and gives its module (never a second copy)."""

    def __init__(self) -> None:
        self.waiting: dict[str, tuple[str, ...]] = {}  # deferred modules not imported yet
        self.specs: dict[str, Any] = {}  # an existing module's own __spec__, put back after the import machinery

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        with _LOCK:
            if name in self.waiting:
                real = importlib.machinery.PathFinder.find_spec(name, path)
                if real is None:
                    return None
                spec = importlib.util.spec_from_loader(name, self, is_package=real.submodule_search_locations is not None)
                if spec is not None and real.submodule_search_locations is not None:
                    spec.submodule_search_locations = list(real.submodule_search_locations)
                return spec
            parent = name.rpartition(".")[0]
            if parent and isinstance(sys.modules.get(parent), _Deferred):
                load(parent)
                return importlib.util.spec_from_loader(name, self) if name in sys.modules else None
            return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        with _LOCK:
            existing = sys.modules.get(spec.name)
            if existing is not None:  # a submodule the real package imported as it loaded
                self.specs[spec.name] = existing.__spec__
                return existing
            stand_in = _Deferred(spec.name)
            for attr in self.waiting.pop(spec.name, ()):
                setattr(stand_in, attr, _forwarder(spec.name, attr))
            return stand_in

    def exec_module(self, module: types.ModuleType) -> None:
        if module.__name__ in self.specs:
            module.__spec__ = self.specs.pop(module.__name__)


_FINDER = _Finder()


def defer(name: str, forwarded: tuple[str, ...] = ()) -> bool:
    """Have the next import of `name` give a stand-in; False (nothing done) where it is imported already
    or its package is not installed."""
    with _LOCK:
        if name in sys.modules or importlib.util.find_spec(name.partition(".")[0]) is None:
            return False
        _FINDER.waiting[name] = forwarded
        if _FINDER not in sys.meta_path:
            sys.meta_path.insert(0, _FINDER)
        return True


def prepare() -> None:
    """The pandas stand-in and the deferred modules, each only where installed and not imported yet."""
    lazy_pandas.install()
    for name, forwarded in DEFERRED.items():
        defer(name, forwarded)
