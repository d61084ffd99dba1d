"""The Protocols that name what a lower module reads of the object above it, instead of importing it (issue 59:
no import circle, every import counted), hold the real object to them: every member each one names exists on
an instance of the class it describes, and each method takes the same parameters. A rename in the class fails
here, not at the call of a stage, a factory or a store helper."""

from __future__ import annotations

import inspect

import pytest

from hippocampus import Memory
from hippocampus.memory.services import Facade
from hippocampus.retrieval.query import Searcher
from hippocampus.store.exact import PagedRows
from hippocampus.store.filter_check import Rows


def _named(protocol: type) -> dict[str, object]:
    """The members `protocol` itself declares: annotated attributes, methods and properties."""
    members: dict[str, object] = dict.fromkeys(protocol.__dict__.get("__annotations__", {}))
    for name, value in vars(protocol).items():
        if not name.startswith("__") and (inspect.isfunction(value) or isinstance(value, property)):
            members[name] = value
    return members


def _parameters(function: object) -> list[str]:
    return [p for p in inspect.signature(function).parameters if p != "self"]  # type: ignore[arg-type]


@pytest.mark.parametrize("protocol, of", [(Facade, lambda m: m), (Searcher, lambda m: m.retriever),
                                          (Rows, lambda m: m.store), (PagedRows, lambda m: m.store)],
                         ids=["Facade=Memory", "Searcher=Retriever", "Rows=MilvusStore", "PagedRows=MilvusStore"])
def test_each_protocol_names_what_its_object_has(memory: Memory, protocol: type, of) -> None:
    real = of(memory)
    members = _named(protocol)
    assert members, f"{protocol.__name__} names nothing"
    for name, declared in members.items():
        assert hasattr(real, name), f"{type(real).__name__} has no {name!r}, which {protocol.__name__} names"
        if inspect.isfunction(declared):
            assert _parameters(declared) == _parameters(getattr(real, name)), f"{type(real).__name__}.{name}"


def test_a_renamed_method_is_caught() -> None:
    class Store:
        def partition_for(self, user: str) -> None: ...

    assert _parameters(_named(Rows)["partition_for"]) != _parameters(Store().partition_for)
    assert not hasattr(Store(), "iterate") and "iterate" in _named(PagedRows)
