"""Each retrieval stage declares what it reads of MemoryConfig and when it reorders (stages.py `SETTINGS`);
`RetrievalParams.from_config` and the candidate depth come from those declarations alone."""

from __future__ import annotations

from dataclasses import fields, replace

from hippocampus.config import MemoryConfig
from hippocampus.retrieval import stages
from hippocampus.retrieval.search import RetrievalParams


def test_every_stage_declares_settings_that_exist() -> None:
    assert {s.__name__ for s in stages.STAGES} == set(stages.SETTINGS)
    params = {f.name for f in fields(RetrievalParams)}
    for name, settings in stages.SETTINGS.items():
        for config_field, (param, _) in settings.config_fields.items():
            assert config_field in MemoryConfig.model_fields, (name, config_field)
            assert param in params, (name, param)
        assert set(settings.built) <= params, name


def test_from_config_reads_each_stage_field() -> None:
    config = MemoryConfig(search_mode="dense", search_candidates=7, hybrid_fusion="rrf", hybrid_bm25_weight=0.4,
                          rank_hubness_weight=0.0, rank_subject_weight=0.3, graph="on", rank_graph_weight=0.9,
                          rank_recency_weight=0.2)
    p = RetrievalParams.from_config(config)
    assert (p.mode, p.candidates, p.fusion, p.bm25_weight) == ("dense", 7, "rrf", 0.4)
    assert (p.hubness_weight, p.subject_weight, p.graph_on, p.graph.weight) == (0.0, 0.3, True, 0.9)
    assert p.rank.recency_weight == 0.2 and p.rank.active


def test_reorder_follows_the_stages_switches() -> None:
    quiet = replace(RetrievalParams(), hubness_weight=0.0, subject_weight=0.0)
    assert not quiet.reorders("dense", use_context=False, use_graph=False)
    assert quiet.reorders("hybrid", use_context=False, use_graph=False)  # fusion
    assert quiet.reorders("dense", use_context=True, use_graph=False)  # context
    assert quiet.reorders("dense", use_context=False, use_graph=True)  # graph
    assert replace(quiet, hubness_weight=0.5).reorders("dense", False, False)
    assert replace(quiet, subject_weight=0.1).reorders("bm25", False, False)
