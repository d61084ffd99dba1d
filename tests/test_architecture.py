"""The package's import graph (docs/architecture.md, "Data flows one way"): no import circle, the
kernel reaches nothing above it, no mixin class is left. Read from the source with `ast`, so it
checks what Python runs at import time: top-level imports only (an import inside a function, or
under `if TYPE_CHECKING:`, runs later or never); importing `a.b.c` also runs `a` and `a.b`."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "hippocampus"
KERNEL = {f"hippocampus.{name}" for name in ("config", "models", "errors", "validation", "contract.wire")}
# What the facade's shared state may still be reached through: none of these names may be a base class.
MIXIN_SUFFIXES = ("Mixin", "Verbs")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Imports that run when the module is imported: the module body, its try/with/if blocks
    (but not `if TYPE_CHECKING:`), never a function's or a class's body."""
    out: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                stack += node.body
            stack += node.orelse
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            stack += node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body]
        elif isinstance(node, ast.With):
            stack += node.body
    return out


def ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules importing it runs (its targets and their parent packages,
    except the importer's own parents, which are running already)."""
    known = modules()
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        own = set(ancestors(name))
        for node in top_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                base = (f"{base}.{node.module}" if node.module else base) if node.level else (node.module or "")
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                for hit in [*ancestors(target), target]:
                    if hit in known and hit != name and hit not in own:
                        graph[name].add(hit)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_is_read_from_the_real_package():
    graph = import_graph()
    assert "hippocampus.memory.facade" in graph and "hippocampus.context" in graph["hippocampus.memory.facade"]
    assert "hippocampus.store.milvus" in graph["hippocampus.store.writes"]  # through `from .milvus import`
    assert "hippocampus.store" in graph["hippocampus.context"]  # a package's __init__ runs too


def test_no_import_circle_in_the_package():
    found = cycles(import_graph())
    assert found == [], "import circles (modules that import each other at import time): " + "; ".join(
        " <-> ".join(c) for c in found)


def test_the_cycle_finder_finds_a_planted_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_kernel_imports_nothing_above_it():
    graph = import_graph()
    for name in sorted(KERNEL):
        above = {m for m in graph[name] if m not in KERNEL and m != "hippocampus"}
        assert above == set(), f"{name} reaches up into {sorted(above)}: the kernel must not import the layers above it"


def test_no_mixin_remains_and_memory_has_no_base_class():
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                assert not node.name.endswith("Mixin"), f"{name}.{node.name}: compose a service instead of a mixin"
                bases = [ast.unparse(b) for b in node.bases]
                assert not [b for b in bases if b.endswith(MIXIN_SUFFIXES)], f"{name}.{node.name} inherits verbs from {bases}"
                if name == "hippocampus.memory.facade" and node.name == "Memory":
                    assert node.bases == [], "Memory composes its services; it inherits from nothing"
