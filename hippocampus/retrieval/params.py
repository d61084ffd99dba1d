"""What a retrieval stage owns, declared beside it (stages.py `@declares`): its parameters, each with its
default and the MemoryConfig fields it is read from, the parameters of other stages it reads, and when it
needs more candidates than the limit. `RetrievalParams` (search.py) is made from these declarations, one
field per declared parameter, so a new stage adds its parameters where it is written; after Graphiti's
`SearchConfig`, whose recipes are values rather than code."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .query import SearchMode

Reorders = Callable[[Any, "SearchMode", bool, bool], bool]  # (params, mode, use_context, use_graph)


def _never(p: Any, mode: SearchMode, use_context: bool, use_graph: bool) -> bool:
    return False


@dataclass(frozen=True)
class Param:
    """One field of RetrievalParams: its default (a search without a config) and, where a setting
    feeds it, the MemoryConfig fields it is made of and how (`make` takes the config and reads those
    fields alone; tests/retrieval/test_stage_settings.py holds it to them)."""

    default: Any
    config: tuple[str, ...] = ()
    make: Callable[[Any], Any] | None = None

    def value(self, config: Any) -> Any:
        """The parameter's value under `config` (its default when no setting feeds it)."""
        return self.make(config) if self.make is not None else self.default


def setting(config_field: str, read: Callable[[Any], Any], default: Any) -> Param:
    """A parameter read from one MemoryConfig field through `read` (float, int, a comparison, a params class)."""
    return Param(default, (config_field,), lambda config: read(getattr(config, config_field)))


def built(make: Callable[[Any], Any], default: Any, *config_fields: str) -> Param:
    """A parameter made from the whole config by `make` (a stage's own params class, `from_config`),
    which reads `config_fields`."""
    return Param(default, config_fields, make)


@dataclass(frozen=True)
class Settings:
    """What one stage owns: `params` (name -> Param) become fields of RetrievalParams; `reads` names the
    parameters of other stages it reads as well; `reorders` says when it needs more candidates than the limit."""

    params: Mapping[str, Param] = field(default_factory=dict)
    reads: tuple[str, ...] = ()
    reorders: Reorders = _never

    @property
    def names(self) -> frozenset[str]:
        """Every parameter the stage may read: its own and those it names in `reads`."""
        return frozenset(self.params) | frozenset(self.reads)


class StageParams:
    """The behaviour of RetrievalParams; its fields are the stages' declared parameters (`params_class`)."""

    settings: ClassVar[Mapping[str, Settings]] = {}  # stage name -> its declaration
    declared: ClassVar[Mapping[str, Param]] = {}  # field -> the Param it was made from

    @classmethod
    def from_config(cls, config: Any) -> Any:
        """Every declared parameter read from `config`."""
        return cls(**{name: p.value(config) for name, p in cls.declared.items()})

    def reorders(self, mode: SearchMode, use_context: bool, use_graph: bool) -> bool:
        """Whether any stage reorders the candidates, so the search gathers `candidates` rather than the limit."""
        return any(s.reorders(self, mode, use_context, use_graph) for s in self.settings.values())


def params_class(name: str, settings: Mapping[str, Settings], common: Mapping[str, Param], module: str) -> type:
    """A frozen dataclass with one field per parameter the stages declare plus `common` (the search's own),
    with StageParams' behaviour; a parameter declared twice is a TypeError."""
    declared: dict[str, Param] = dict(common)
    owner = dict.fromkeys(common, "the search")
    for stage, s in settings.items():
        for param, p in s.params.items():
            if param in declared:
                raise TypeError(f"retrieval parameter {param!r} declared by {owner[param]} and by {stage!r}")
            declared[param], owner[param] = p, repr(stage)
    fields = [(n, type(p.default), dataclasses.field(default=p.default)) for n, p in declared.items()]
    return dataclasses.make_dataclass(name, fields, bases=(StageParams,), frozen=True,
                                      namespace={"settings": dict(settings), "declared": declared, "__module__": module,
                                                 "__doc__": f"{name}: the parameters the stages declare ({', '.join(declared)})."})
