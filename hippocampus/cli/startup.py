"""What the `hippocampus` command's own process sets up before a command runs, so that it imports no
more than the command needs (docs/performance.md, "The command line"):

- pandas: a stand-in that pymilvus and pyarrow load against (lazy_pandas.py).
- httpx's own command line (`httpx._main`: click, pygments, rich.syntax, rich.progress), which
  `import httpx` loads for its `httpx.main` entry point: about 25 ms of a command going through a
  service. A stand-in module whose `main` loads the real one when called.

Only `hippocampus.cli.app.main` calls `prepare()`: a user's process that imports the library is left as it is.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any

from . import lazy_pandas

HTTPX_CLI = "httpx._main"


class _HttpxCli(types.ModuleType):
    """`httpx._main` until something uses it: any attribute loads the real module and forwards."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(real_httpx_cli(), name)


def real_httpx_cli() -> types.ModuleType:
    """The real `httpx._main`, imported on the first call (the stand-in leaves sys.modules first)."""
    module = sys.modules.get(HTTPX_CLI)
    if isinstance(module, _HttpxCli):
        del sys.modules[HTTPX_CLI]
    return importlib.import_module(HTTPX_CLI)


def _main(*args: Any, **kwargs: Any) -> Any:
    """httpx's command line (`httpx.main`), loaded now."""
    return real_httpx_cli().main(*args, **kwargs)


class _HttpxCliFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Gives the stand-in the first time `httpx._main` is imported (as `import httpx` does), through the
    import system, so that `httpx._main` is an attribute of httpx as usual; then steps aside."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name != HTTPX_CLI:
            return None
        sys.meta_path.remove(self)
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        stand_in = _HttpxCli(HTTPX_CLI)
        stand_in.main = _main  # type: ignore[attr-defined]
        return stand_in

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def defer_httpx_cli() -> bool:
    """Have the next import of `httpx._main` give the stand-in; False (nothing done) where httpx is
    imported already or absent."""
    if "httpx" in sys.modules or importlib.util.find_spec("httpx") is None:
        return False
    sys.meta_path.insert(0, _HttpxCliFinder())
    return True


def prepare() -> None:
    """Both stand-ins, each only where its library is installed and not imported yet."""
    lazy_pandas.install()
    defer_httpx_cli()
