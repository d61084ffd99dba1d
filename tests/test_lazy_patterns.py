"""Patterns compiled on first use (text/lazy.py) answer as the compiled ones, and the modules that hold the
offline rules' vocabulary compile none of them as they load."""

from __future__ import annotations

import re
import subprocess
import sys

from hippocampus.text.lazy import LazyPattern, lazy_compile


def test_a_lazy_pattern_answers_as_the_compiled_one() -> None:
    lazy, real = lazy_compile(r"\bi (like|love) (\w+)", re.IGNORECASE), re.compile(r"\bi (like|love) (\w+)", re.IGNORECASE)
    assert isinstance(lazy, LazyPattern) and not lazy.is_compiled
    text = "I like tea. i LOVE rain."
    assert lazy.search(text).group(2) == real.search(text).group(2) == "tea"
    assert lazy.findall(text) == real.findall(text) and lazy.sub("x", text) == real.sub("x", text)
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in real.finditer(text)]
    assert lazy.pattern == real.pattern and lazy.flags == real.flags and lazy.compiled is lazy.compiled


def test_the_rule_modules_compile_nothing_as_they_load() -> None:
    """In a fresh process: after the three modules load, no pattern they hold (at module level or inside a
    module-level tuple, list, set or dict) is a compiled re.Pattern, and none of their lazy ones is compiled
    yet; the first use compiles one. Each module holds lazy patterns, so the check is never vacuous."""
    code = ("import re, sys\n"
            "import hippocampus.text, hippocampus.text.turns, hippocampus.lifecycle.categories\n"
            "from hippocampus.text.lazy import LazyPattern\n"
            "mods = ('hippocampus.text', 'hippocampus.text.turns', 'hippocampus.lifecycle.categories')\n"
            "def held(v):\n"
            "    inner = v.values() if isinstance(v, dict) else v if isinstance(v, (tuple, list, set, frozenset)) else ()\n"
            "    return [v, *inner]\n"
            "found = {m: [x for v in vars(sys.modules[m]).values() for x in held(v)] for m in mods}\n"
            "lazy = {m: [x for x in xs if isinstance(x, LazyPattern)] for m, xs in found.items()}\n"
            "print(all(lazy.values()))\n"
            "print([m for m, xs in found.items() if any(isinstance(x, re.Pattern) for x in xs)])\n"
            "print([repr(x) for xs in lazy.values() for x in xs if x.is_compiled])\n"
            "first = lazy['hippocampus.text'][0]; first.search('x')\n"
            "print(first.is_compiled)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["True", "[]", "[]", "True"], out  # lazy in each; none compiled on load; compiled on first use
