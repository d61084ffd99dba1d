"""The package's import graph (docs/architecture.md, "Data flows one way"), read from the source by
scripts/structure.py: every import counts (issue 59), at module level, inside a function (a lazy import is
still an arrow), under `if TYPE_CHECKING:` (a type checker follows it, and a refactor can make it run) and
`from .. import x` of a package root, and importing `a.b.c` runs `a` and `a.b`.
No import circle, nothing reaches up a layer, at most ten modules at the package root, no mixin left."""

from __future__ import annotations

import ast

from scripts.structure import LAYERS, arrows_up, components, import_graph, layer, modules, reached, read_imports

# Arrows that still run up a layer, each with what it waits for. The list may only shrink: a new arrow up
# fails, and so does a listed one that is gone (take it out of the list). Empty since store/writes.py stopped
# guessing categories (lifecycle/rows.py finishes a new row: issue 44).
STILL_UP: dict[tuple[str, str], str] = {}
# What the facade's shared state may still be reached through: none of these names may be a base class.
MIXIN_SUFFIXES = ("Mixin", "Verbs")


def test_the_graph_is_read_from_the_real_package():
    graph = import_graph()
    assert "hippocampus.context" in graph["hippocampus.memory.facade"]
    assert "hippocampus.store.milvus" in graph["hippocampus.store.writes"]  # through `from .milvus import`
    assert "hippocampus.store" in graph["hippocampus.context"]  # a package's __init__ runs too
    assert "hippocampus.cli.registry" in graph["hippocampus.cli.base"]  # an import inside a function (report)


def test_every_import_is_an_arrow_inside_a_function_and_under_type_checking_too(tmp_path, monkeypatch):
    import scripts.structure as structure

    package = tmp_path / "hippocampus"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("import typing\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import c\n"
                                  "if typing.TYPE_CHECKING:\n    from .sub import d\ndef f():\n    from . import b\n")
    (package / "b.py").write_text("class K:\n    from .a import f\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "d.py").write_text("from .. import c\n")
    monkeypatch.setattr(structure, "PACKAGE", package)
    graph = structure.import_graph()
    assert graph["hippocampus.a"] == {"hippocampus.b", "hippocampus.c", "hippocampus.sub", "hippocampus.sub.d"}
    assert graph["hippocampus.b"] == {"hippocampus.a"} and graph["hippocampus.c"] == {"hippocampus.a"}
    assert graph["hippocampus.sub.d"] == {"hippocampus.c"}  # the package root's `from .. import c`
    # a circle closed only by imports under TYPE_CHECKING (a -> c -> a, a -> d -> c -> a) is found with the lazy one
    assert structure.components(graph) == [["hippocampus.a", "hippocampus.b", "hippocampus.c", "hippocampus.sub.d"]]
    assert sorted((i.target, i.in_function) for i in structure.read_imports() if i.source == "hippocampus.a" and not i.parent) == [
        ("hippocampus.b", True), ("hippocampus.c", False), ("hippocampus.sub.d", False)]


def test_no_import_circle_counting_every_import():
    found = components(import_graph())
    assert found == [], "import circles (every import counted): " + "; ".join(" <-> ".join(c) for c in found)


def test_the_cycle_finder_finds_a_planted_circle():
    assert components({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert components({"a": {"b"}, "b": set()}) == []


def test_every_module_sits_in_a_layer():
    assert [m for m in modules() if layer(m) == len(LAYERS)] == [], "name its layer in scripts/structure.py LAYERS"


def test_nothing_reaches_up_a_layer():
    up = arrows_up(read_imports())
    assert up - set(STILL_UP) == set(), f"arrows up a layer (faces -> facade -> services -> store -> kernel): {sorted(up - set(STILL_UP))}"
    assert set(STILL_UP) - up == set(), f"gone, take them out of STILL_UP: {sorted(set(STILL_UP) - up)}"


def test_the_kernel_imports_nothing_above_it():
    kernel = len(LAYERS) - 1
    for name, targets in import_graph().items():
        if layer(name) == kernel:
            assert {t for t in targets if layer(t) != kernel} == set(), f"{name} reaches up out of the kernel"


def test_the_package_root_holds_at_most_ten_modules():
    root = [m for m, path in modules().items() if m.count(".") == 1 and path.name != "__init__.py"]
    assert len(root) + 1 <= 10, f"the package root is the kernel: move the rest into folders ({sorted(root)})"


def test_no_mixin_remains_and_memory_has_no_base_class():
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                assert not node.name.endswith("Mixin"), f"{name}.{node.name}: compose a service instead of a mixin"
                bases = [ast.unparse(b) for b in node.bases]
                assert not [b for b in bases if b.endswith(MIXIN_SUFFIXES)], f"{name}.{node.name} inherits verbs from {bases}"
                if name == "hippocampus.memory.facade" and node.name == "Memory":
                    assert node.bases == [], "Memory composes its services; it inherits from nothing"


def test_the_client_reaches_no_service_and_not_the_facade():
    """remote/ sends requests and reads replies: the reply models are the contract's (contract/replies.py), so
    the Client pulls in the kernel and the one file helper that writes a remote export, not the library."""
    above_kernel = {m for m in reached(import_graph(), "hippocampus.remote") if layer(m) < len(LAYERS) - 1}
    faces = {m for m in above_kernel if m.startswith("hippocampus.remote")} | {"hippocampus"}
    assert above_kernel - faces == {"hippocampus.transfer", "hippocampus.transfer.files"}
    assert reached({"a": {"b"}, "a.x": {"c"}, "b": set(), "c": {"d"}, "d": set(), "e": set()}, "a") == {"a", "a.x", "b", "c", "d"}


def test_no_module_imports_the_package_root_from_inside_it():
    """`from .. import __version__` (or `from hippocampus import Memory`) reads a name of the public face from
    below it (`from .. import validation`, a module, is fine); the version lives in the leaf hippocampus/_version.py (issue 59)."""
    found, every = [], modules()
    for name, path in every.items():
        if name == "hippocampus":
            continue
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package[:len(package) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                if target == "hippocampus" and any(f"hippocampus.{a.name}" not in every for a in node.names):
                    found.append(f"{name}:{node.lineno}")  # a name of the root, not one of its modules
            elif isinstance(node, ast.Import) and any(alias.name == "hippocampus" for alias in node.names):
                found.append(f"{name}:{node.lineno}")
    assert found == [], f"import the package root from inside it: {found}"
