"""A stand-in for `pandas` in the `hippocampus` command's own process, so that opening the store does
not import pandas (about a quarter of `list`'s start-up, docs/performance.md).

Two libraries under the store import pandas as they load without needing it for our calls: pymilvus at
the top of its ORM modules (`import pandas as pd`, `from pandas.api.types import is_list_like, ...`,
`pd.DataFrame` in annotations), and pyarrow's pandas shim (which milvus-lite's pyarrow.dataset wakes:
it keeps pandas' version and classes for isinstance checks). `install()` puts modules named `pandas`,
`pandas.api`, `pandas.api.extensions` and `pandas.api.types` in sys.modules before either loads:

- the classes those two keep (`DataFrame`, `Series`, `Index`, `Categorical`, `ExtensionArray`,
  `ExtensionDtype`, `DatetimeTZDtype`) are placeholders: `isinstance(x, pd.DataFrame)` is False while the
  real pandas is not loaded (no such object can exist then) and asks the real class once it is; calling
  one, or any attribute of it, loads pandas and goes to the real class.
- `__version__` is the installed distribution's (importlib.metadata), without loading pandas.
- `NaT` and `NA` are sentinels while pandas is not loaded: pyarrow's C++ side reads them once, as its
  pandas support starts, to tell pandas' missing values in what it converts. The price: in this process
  pyarrow does not take a real `pd.NaT`/`pd.NA` for a null even after pandas loads; nothing a command
  runs hands pyarrow a pandas value (the store converts our own lists, dicts and numpy arrays).
- every other attribute (`pd.concat`, `pd.options`) loads the real pandas and forwards; `is_list_like`,
  `is_scalar` and the other functions pymilvus imports by name are forwarders that load it when called.
- importing a submodule (`import pandas.testing`) loads the real pandas and gives its module (a finder
  first on sys.meta_path; the stand-ins carry the real package's `__path__`).

Loading the real pandas takes the stand-ins out of sys.modules first, so from then on `import pandas`
anywhere in the process gives the real one. Only `hippocampus.cli.app.main` calls `install()`, and only
where pandas is installed and not yet imported: `import hippocampus` in a user's process never touches
sys.modules['pandas'].
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
from pathlib import Path
from typing import Any

NAMES = ("pandas", "pandas.api", "pandas.api.extensions", "pandas.api.types")
# the classes pymilvus and pyarrow's pandas shim take from pandas as they load, by the module they are in
CLASSES = {"pandas": ("DataFrame", "Series", "Index", "Categorical", "Timestamp", "Timedelta", "DateOffset"), "pandas.api.extensions": ("ExtensionArray", "ExtensionDtype"),
           "pandas.api.types": ("DatetimeTZDtype",)}
# what pymilvus imports from pandas.api.types as it loads (orm/types.py, orm/schema.py): forwarded by call
TYPE_FUNCTIONS = ("infer_dtype", "is_array_like", "is_bool", "is_float", "is_integer", "is_list_like", "is_scalar")
_LOCK = threading.RLock()


class _Sentinel:
    """What `pd.NaT` / `pd.NA` are while pandas is not loaded: pyarrow's C++ side reads them once, as its
    pandas support starts, to tell pandas' missing values in values it converts; none can exist here yet."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<pandas.{self.name} stand-in: pandas not loaded>"


SENTINELS = {name: _Sentinel(name) for name in ("NaT", "NA")}


class _StandIn(types.ModuleType):
    """A module in the place of the real pandas (or one of its submodules); unknown attributes load it."""

    def __getattr__(self, name: str) -> Any:
        if name == "__version__" and self.__name__ == "pandas":
            import importlib.metadata

            return importlib.metadata.version("pandas")
        if name in SENTINELS and self.__name__ == "pandas" and installed():
            return SENTINELS[name]
        if name.startswith("__") and name not in ("__file__", "__all__"):
            raise AttributeError(name)  # probing by the import machinery and others (__wrapped__, ...)
        return getattr(_resolve(self.__name__), name)


def _resolve(dotted: str) -> Any:
    """The real module named `dotted` (a `pandas...` name), pandas loaded."""
    module: Any = real()
    for part in dotted.split(".")[1:]:
        module = getattr(module, part)
    return module


class _Placeholder(type):
    """The type of the stand-in classes (`DataFrame`, ...): the real class once pandas is loaded."""

    def _real_class(cls) -> type | None:
        module = sys.modules.get("pandas")
        return None if module is None or isinstance(module, _StandIn) else getattr(_resolve(cls.__module__), cls.__name__)

    def __instancecheck__(cls, obj: Any) -> bool:
        found = cls._real_class()
        return found is not None and isinstance(obj, found)

    def __subclasscheck__(cls, sub: type) -> bool:
        found = cls._real_class()
        return found is not None and issubclass(sub, found)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return getattr(_resolve(cls.__module__), cls.__name__)(*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(getattr(_resolve(cls.__module__), cls.__name__), name)


class _Submodules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """While the stand-ins are in sys.modules, `import pandas.<x>` loads the real pandas, then gives the
    module it made (never a second copy) or lets the usual finders find one it did not import."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name.partition(".")[0] != "pandas" or not installed():
            return None
        real()
        return importlib.util.spec_from_loader(name, self) if name in sys.modules else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        module = sys.modules[spec.name]
        self.specs[spec.name] = module.__spec__  # the import machinery sets __spec__ to ours; put back below
        return module

    def exec_module(self, module: Any) -> None:
        module.__spec__ = self.specs.pop(module.__name__)

    specs: dict[str, Any] = {}


_FINDER = _Submodules()


def _forwarder(name: str) -> Callable[..., Any]:
    def forward(*args: Any, **kwargs: Any) -> Any:
        return getattr(real().api.types, name)(*args, **kwargs)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = f"pandas.api.types.{name}, loading pandas on the first call."
    return forward


def installed() -> bool:
    """Whether the stand-in is what `import pandas` gives now."""
    return isinstance(sys.modules.get("pandas"), _StandIn)


def install() -> bool:
    """Put the stand-ins in sys.modules; False (nothing done) where pandas is imported already or absent."""
    with _LOCK:
        spec = None if "pandas" in sys.modules else importlib.util.find_spec("pandas")
        if spec is None or not spec.submodule_search_locations:
            return False
        modules = {name: _StandIn(name) for name in NAMES}
        for name, module in modules.items():  # a package, so that `import pandas.x` reaches _Submodules
            module.__path__ = [str(Path(p, *name.split(".")[1:])) for p in spec.submodule_search_locations]
            module.__dict__.update({c: _Placeholder(c, (), {"__module__": name}) for c in CLASSES.get(name, ())})
            if "." in name:
                setattr(modules[name.rpartition(".")[0]], name.rpartition(".")[2], module)
        modules["pandas.api.types"].__dict__.update({name: _forwarder(name) for name in TYPE_FUNCTIONS})
        sys.modules.update(modules)
        sys.meta_path.insert(0, _FINDER)
        return True


def real() -> Any:
    """The real pandas, imported on the first call (the stand-ins leave sys.modules first)."""
    with _LOCK:
        module = sys.modules.get("pandas")
        if module is not None and not isinstance(module, _StandIn):
            return module
        for name in NAMES:
            if isinstance(sys.modules.get(name), _StandIn):
                del sys.modules[name]
        if _FINDER in sys.meta_path:
            sys.meta_path.remove(_FINDER)
        module = importlib.import_module("pandas")
        importlib.import_module("pandas.api.types")
        return module
