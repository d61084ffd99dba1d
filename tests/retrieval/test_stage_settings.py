"""Each retrieval stage declares what it owns (stages.py `@declares`, params.py): its parameters with their
defaults and MemoryConfig fields, the other stages' parameters it reads, and when it reorders.
`RetrievalParams` is made from those declarations, and a stage that reads a parameter or a setting it
does not declare fails here."""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import fields, replace
from typing import Any

import pytest

from hippocampus.config import MemoryConfig
from hippocampus.retrieval import params as P
from hippocampus.retrieval import stages
from hippocampus.retrieval.search import RetrievalParams, Retriever


class _Only:
    """A stand-in that answers only the names `allowed`: what a stage (or a Param) declares it reads."""

    def __init__(self, real: Any, allowed: frozenset[str] | tuple[str, ...], who: str) -> None:
        self._real, self._allowed, self._who = real, frozenset(allowed), who

    def __getattr__(self, name: str) -> Any:
        if name not in self._allowed:
            raise AssertionError(f"{self._who} reads {name!r}, which it does not declare")
        return getattr(self._real, name)


def _guarded(stage: stages.Stage) -> stages.Stage:
    """The stage run with the retriever's params cut down to what it declares (its own and its `reads`)."""
    def run(r: Any, q: stages.Query, cands: list) -> list:
        full = r.params
        r.params = _Only(full, stages.SETTINGS[stage.__name__].names, f"stage {stage.__name__!r}")
        try:
            return stage(r, q, cands)
        finally:
            r.params = full
    run.__name__ = stage.__name__
    return run


def _params_read(fn: Callable, seen: set | None = None) -> set[str]:
    """Every `<retriever>.params.<name>` the function's source reads, and the functions it hands the
    retriever to (`r.dense(...)`, `X.stage(r, ...)`, `self.lexical(...)`), followed."""
    seen = set() if seen is None else seen
    if fn in seen:
        return set()
    seen.add(fn)
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    read = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute)
            and n.value.attr == "params" and isinstance(n.value.value, ast.Name) and n.value.value.id in ("r", "self")}
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        f = call.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in ("r", "self"):
            target = getattr(Retriever, f.attr, None)  # a retriever method
        elif call.args and isinstance(call.args[0], ast.Name) and call.args[0].id == "r":  # handed the retriever
            target = fn.__globals__.get(f.id) if isinstance(f, ast.Name) else None
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                target = getattr(fn.__globals__.get(f.value.id), f.attr, None)
        else:
            continue
        if inspect.isfunction(target):
            read |= _params_read(target, seen)
    return read


def test_retrieval_params_are_the_stages_declared_params() -> None:
    assert {s.__name__ for s in stages.STAGES} == set(stages.SETTINGS)
    declared = [name for s in stages.SETTINGS.values() for name in s.params]
    assert len(declared) == len(set(declared))  # each parameter has one owner
    assert {f.name for f in fields(RetrievalParams)} == {*declared, "categories"}
    for name, settings in stages.SETTINGS.items():
        assert set(settings.reads) <= set(declared) - set(settings.params), name  # reads name others' params
        for param, p in settings.params.items():
            assert set(p.config) <= set(MemoryConfig.model_fields), (name, param, p.config)
            assert getattr(RetrievalParams(), param) == p.default, (name, param)


def test_a_param_reads_only_the_settings_it_declares() -> None:
    config = MemoryConfig(search_mode="dense", rank_graph_weight=0.9, rank_chat_weight=0.1, rank_mmr_weight=0.2)
    for name, p in RetrievalParams.declared.items():
        assert p.value(_Only(config, p.config, f"param {name!r}")) == p.value(config)
    cheat = P.built(lambda c: (c.rank_chat_weight, c.rank_who_weight), (), "rank_chat_weight")
    with pytest.raises(AssertionError, match="rank_who_weight"):
        cheat.value(_Only(config, cheat.config, "cheat"))


def test_every_retrieval_setting_belongs_to_a_stage() -> None:
    owned = {f for p in RetrievalParams.declared.values() for f in p.config}
    retrieval = {f for f in MemoryConfig.model_fields if f.startswith(("search_", "hybrid_", "rank_"))}
    assert retrieval <= owned, retrieval - owned


def test_a_parameter_declared_twice_is_refused() -> None:
    twice = {"a": P.Settings(params={"w": P.Param(0.0)}), "b": P.Settings(params={"w": P.Param(1.0)})}
    with pytest.raises(TypeError, match="'w' declared by 'a' and by 'b'"):
        P.params_class("Twice", twice, {}, __name__)


def test_from_config_reads_each_stage_field() -> None:
    config = MemoryConfig(search_mode="dense", search_candidates=7, hybrid_fusion="rrf", hybrid_bm25_weight=0.4,
                          rank_hubness_weight=0.0, rank_subject_weight=0.3, graph="on", rank_graph_weight=0.9,
                          rank_recency_weight=0.2)
    p = RetrievalParams.from_config(config)
    assert (p.mode, p.candidates, p.fusion, p.bm25_weight) == ("dense", 7, "rrf", 0.4)
    assert (p.hubness_weight, p.subject_weight, p.graph_on, p.graph.weight) == (0.0, 0.3, True, 0.9)
    assert p.rank.recency_weight == 0.2 and p.rank.active


def test_reorder_follows_the_stages_switches() -> None:
    quiet = replace(RetrievalParams(), hubness_weight=0.0, subject_weight=0.0, ask_weight=0.0, slot_weight=0.0)
    assert not quiet.reorders("dense", use_context=False, use_graph=False)
    assert quiet.reorders("hybrid", use_context=False, use_graph=False)  # fusion
    assert quiet.reorders("dense", use_context=True, use_graph=False)  # context
    assert quiet.reorders("dense", use_context=False, use_graph=True)  # graph
    assert replace(quiet, hubness_weight=0.5).reorders("dense", False, False)
    assert replace(quiet, subject_weight=0.1).reorders("bm25", False, False)


def test_a_stage_decides_its_reordering_from_its_declared_params() -> None:
    for name, settings in stages.SETTINGS.items():
        for mode in ("hybrid", "dense", "bm25"):
            for use_context in (False, True):
                for use_graph in (False, True):
                    settings.reorders(_Only(RetrievalParams(), settings.names, f"stage {name!r}"), mode, use_context, use_graph)


def test_a_stage_reads_only_the_params_it_declares_in_its_source() -> None:
    for stage in stages.STAGES:
        read = _params_read(stage)
        assert read <= stages.SETTINGS[stage.__name__].names, (stage.__name__, read - stages.SETTINGS[stage.__name__].names)
    assert "fusion" in _params_read(stages.crosslang)  # followed into retrieval/crosslang.py
    assert {"fusion", "bm25_weight", "hubness_weight"} <= _params_read(stages.gather)  # and into the retriever's methods


@pytest.mark.parametrize("fusion", ["weighted", "milvus_rrf"])
def test_a_stage_reads_only_the_params_it_declares(memory, monkeypatch, fusion) -> None:
    for text in ["I moved to Berlin in May", "My favourite food is ramen", "我下个月要去东京出差", "Anna likes green tea"]:
        memory.add(text, user_id="alice")
    everything_on = dict(fusion=fusion, subject_weight=0.2, hubness_weight=0.5,
                         rank=replace(RetrievalParams().rank, recency_weight=0.1, mmr_weight=0.5),
                         context=replace(RetrievalParams().context, neighbour_weight=0.3))
    memory.retriever.params = replace(memory.retriever.params, **everything_on)
    monkeypatch.setattr(stages, "STAGES", tuple(_guarded(s) for s in stages.STAGES))
    for mode in ("hybrid", "dense", "bm25"):
        assert memory.search("where does alice live?", user_id="alice", mode=mode).all
    memory.retriever.params = replace(memory.retriever.params, fusion="weighted")  # the check fails when a stage
    hubness = stages.SETTINGS["hubness"]  # leaves out what it reads: hubness reads fusion's choice in hybrid mode
    monkeypatch.setitem(stages.SETTINGS, "hubness", replace(hubness, reads=()))
    with pytest.raises(AssertionError, match="stage 'hubness' reads 'fusion'"):
        memory.search("where does alice live?", user_id="alice", mode="hybrid")
