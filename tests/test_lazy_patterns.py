"""Patterns compiled on first use (text/lazy.py) answer as the compiled ones, and the modules that hold the
offline rules' vocabulary compile none of them as they load."""

from __future__ import annotations

import re
import subprocess
import sys

from hippocampus.text.lazy import LazyPattern, lazy_compile


def test_a_lazy_pattern_answers_as_the_compiled_one() -> None:
    lazy, real = lazy_compile(r"\bi (like|love) (\w+)", re.IGNORECASE), re.compile(r"\bi (like|love) (\w+)", re.IGNORECASE)
    assert isinstance(lazy, LazyPattern) and lazy._compiled is None
    text = "I like tea. i LOVE rain."
    assert lazy.search(text).group(2) == real.search(text).group(2) == "tea"
    assert lazy.findall(text) == real.findall(text) and lazy.sub("x", text) == real.sub("x", text)
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in real.finditer(text)]
    assert lazy.pattern == real.pattern and lazy.flags == real.flags and lazy.compiled is lazy.compiled


def test_the_rule_modules_compile_nothing_as_they_load() -> None:
    code = ("import re, sys\n"
            "import hippocampus.text, hippocampus.text.turns, hippocampus.lifecycle.categories\n"
            "mods = ('hippocampus.text', 'hippocampus.text.turns', 'hippocampus.lifecycle.categories')\n"
            "from hippocampus.text.lazy import LazyPattern\n"
            "held = [n for m in mods for n, v in vars(sys.modules[m]).items() if isinstance(v, LazyPattern)]\n"
            "print(len(held), sum(1 for m in mods for v in vars(sys.modules[m]).values() if isinstance(v, re.Pattern)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert int(out[0]) >= 45 and out[1] == "0"  # every module-level pattern of the three is lazy
