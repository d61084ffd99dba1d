"""The public names survive the package's moves: every name of `hippocampus.__all__` resolves (most are
imported on first use), `hippocampus.testing` ships its doubles, and the verb list, which sits below the facade,
loads without it (the facade registers itself when it loads)."""

from __future__ import annotations

import subprocess
import sys

import hippocampus


def test_every_exported_name_resolves():
    missing = [name for name in hippocampus.__all__ if getattr(hippocampus, name, None) is None]
    assert missing == [] and set(hippocampus.__all__) <= set(dir(hippocampus))
    from hippocampus.testing import DeterministicEmbedder, ScriptedChatModel

    assert callable(DeterministicEmbedder) and callable(ScriptedChatModel)


def test_the_verb_list_loads_without_the_facade_which_registers_itself():
    code = ("import sys, hippocampus.contract.verbs as v\n"
            "assert 'hippocampus.memory' not in sys.modules, 'the declaration imported the facade'\n"
            "try:\n    v.VERBS[0].args\nexcept LookupError:\n    pass\nelse:\n    raise SystemExit('read a facade nobody registered')\n"
            "import hippocampus.memory\n"
            "assert v.VERBS[0].args[0].name == 'messages'\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
