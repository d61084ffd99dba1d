"""Each consolidation phase declares the MemoryConfig fields it reads itself and when it runs
(consolidation/service.py `@declares`, `PHASE_SETTINGS`), as retrieval's stages declare theirs;
`consolidate` reads the switch from there, and a phase that reads a setting it does not declare fails here."""

from __future__ import annotations

import ast
import inspect
import textwrap

from hippocampus.config import MemoryConfig
from hippocampus.consolidation import service as S


def _config_read(phase: S.Phase) -> set[str]:
    """Every `<...>.config.<name>` the phase's own source reads."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(phase)))
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute)
            and n.value.attr == "config"}


def test_every_phase_declares_settings_that_exist_and_reads_only_those() -> None:
    assert [p.__name__ for p in S.PHASES] == list(S.PHASE_SETTINGS) == ["episodes", "supersede", "compress", "decay", "graph"]
    for phase in S.PHASES:
        declared = S.PHASE_SETTINGS[phase.__name__].settings
        assert set(declared) <= set(MemoryConfig.model_fields), phase.__name__
        assert _config_read(phase) <= set(declared), (phase.__name__, _config_read(phase) - set(declared))
    assert _config_read(S.supersede) == {"decay_preset", "categories"}  # the check reads what it should


def test_the_switches_follow_the_settings(tmp_path) -> None:
    def running(**settings: str) -> list[str]:
        config = MemoryConfig(milvus_uri=str(tmp_path / "m.db"), **settings)
        return [p.__name__ for p in S.PHASES if S.PHASE_SETTINGS[p.__name__].runs(config)]

    assert running() == ["episodes", "supersede", "compress", "decay"]
    assert running(decay_preset="off", graph="on") == ["episodes", "supersede", "graph"]
