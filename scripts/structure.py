"""The package's import structure as a table: modules, every import (module level, inside functions, under TYPE_CHECKING),
import circles (strongly connected components) and arrows that run back up the layers.

    python scripts/structure.py            # the summary table
    python scripts/structure.py --detail   # and every circle's modules and every arrow back up

Read from the source with `ast`, never by importing it. Every import counts: at module level, inside a
function (a lazy import is still an arrow), under `if TYPE_CHECKING:` (a type checker follows it) and
`from .. import x` of the package root.
Importing `a.b.c` also runs `a` and `a.b`, so a package's `__init__` is an arrow's target as well.
tests/test_architecture.py asserts on the same graph: no circle, no arrow back up.
"""

from __future__ import annotations

import argparse
import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "hippocampus"

# Data flows down (docs/architecture.md): a module may import its own layer or those below, never above.
# The longest prefix that matches a module names its layer; the package root's __init__ is the public face.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("faces", ("hippocampus", "hippocampus.__main__", "hippocampus.cli", "hippocampus.server",
               "hippocampus.integrations", "hippocampus.remote", "hippocampus.agent", "hippocampus.compat",
               "hippocampus.testing")),
    ("facade", ("hippocampus.memory",)),
    ("services", ("hippocampus.context", "hippocampus.lifecycle", "hippocampus.transfer", "hippocampus.graph",
                  "hippocampus.consolidation", "hippocampus.retrieval", "hippocampus.processors")),
    ("store/embeddings/llm", ("hippocampus.store", "hippocampus.embeddings", "hippocampus.llm",
                              "hippocampus.observability")),
    ("kernel", ("hippocampus._version", "hippocampus.config", "hippocampus.config_file", "hippocampus.models", "hippocampus.errors", "hippocampus.validation",
                "hippocampus.text", "hippocampus.contract", "hippocampus.data")),
)


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    in_function: bool
    parent: bool  # the target is only a package the named module sits in (its __init__ runs too)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> int:
    """The index of `module`'s layer in LAYERS (0 is the top), by its longest matching prefix."""
    best, depth = len(LAYERS), -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            inside = module == prefix or (module.startswith(prefix + ".") and prefix != "hippocampus")
            if inside and len(prefix) > depth:
                best, depth = index, len(prefix)
    return best


def _statements(tree: ast.AST, in_function: bool = False):
    """(import node, whether it sits inside a function) for every import in the source, an `if TYPE_CHECKING:`
    block's too: a type checker follows it, and a circle it closes is one a refactor can make real."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, in_function
        else:
            yield from _statements(node, in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def read_imports() -> list[Import]:
    """Every package-internal import arrow, one per (statement, module it runs)."""
    known = modules()
    found: list[Import] = []
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        own = set(_ancestors(name))
        for node, in_function in _statements(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = named = [alias.name for alias in node.names]
            else:
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                base = (f"{base}.{node.module}" if node.module else base) if node.level else (node.module or "")
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
                named = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            hits = {hit for t in targets for hit in [*_ancestors(t), t] if hit in known and hit != name and hit not in own}
            found += [Import(name, hit, node.lineno, in_function, hit not in named) for hit in sorted(hits)]
    return found


def import_graph(imports: list[Import] | None = None) -> dict[str, set[str]]:
    """module -> the package modules it imports (every import: module level, inside a function, under TYPE_CHECKING)."""
    graph: dict[str, set[str]] = {name: set() for name in modules()}
    for arrow in read_imports() if imports is None else imports:
        graph[arrow.source].add(arrow.target)
    return graph


def components(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found, key=lambda c: (-len(c), c))


def arrows_up(imports: list[Import]) -> set[tuple[str, str]]:
    """(source, target) for each import of a module in a higher layer than its source's (the packages
    around a named module are left out: the named module says where the arrow goes)."""
    return {(i.source, i.target) for i in imports if not i.parent and layer(i.target) < layer(i.source)}


def reached(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module that importing `start` (a package: all of its modules) can run, imports inside functions
    counted: what a face pulls in, e.g. the Client (`hippocampus.remote`)."""
    todo = [m for m in graph if m == start or m.startswith(start + ".")]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += graph.get(name, ())
    return seen


def summary() -> list[tuple[str, str]]:
    imports = read_imports()
    statements = {(i.source, i.line, i.in_function) for i in imports}
    found = components(import_graph(imports))
    top = [m for m in modules() if m.count(".") == 1 and not modules()[m].name == "__init__.py"]
    up = arrows_up(imports)
    return [
        ("modules", str(len(modules()))),
        ("modules at the package root", f"{len(top) + 1} (with __init__)"),
        ("import statements (package-internal), module level", str(sum(1 for s in statements if not s[2]))),
        ("import statements (package-internal), inside functions", str(sum(1 for s in statements if s[2]))),
        ("import arrows (module -> module)", str(sum(len(v) for v in import_graph(imports).values()))),
        ("import circles (strongly connected components > 1)", str(len(found))),
        ("their sizes", ", ".join(str(len(c)) for c in found) or "-"),
        ("arrows back up the layers (module -> module)", str(len(up))),
        ("modules the Client reaches (hippocampus.remote, every import)", str(len(reached(import_graph(imports), "hippocampus.remote")))),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detail", action="store_true", help="list every circle and every arrow back up")
    args = parser.parse_args(argv)
    rows = summary()
    width = max(len(k) for k, _ in rows)
    print(f"| {'what'.ljust(width)} | figure |\n|{'-' * (width + 2)}|--------|")
    for key, value in rows:
        print(f"| {key.ljust(width)} | {value} |")
    if args.detail:
        imports = read_imports()
        for component in components(import_graph(imports)):
            print(f"\ncircle of {len(component)}: " + ", ".join(component))
        print("\narrows back up (source [layer] -> target [layer]):")
        for source, target in sorted(arrows_up(imports)):
            print(f"  {source} [{LAYERS[layer(source)][0]}] -> {target} [{LAYERS[layer(target)][0]}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
