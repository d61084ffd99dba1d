"""The stand-in for pandas in the command's own process (cli/lazy_pandas.py): pymilvus and pyarrow load
against it, and everything that really asks for pandas gets the real one. Each case runs in a fresh
interpreter, since installing the stand-in changes sys.modules for the rest of the process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


LOADS_AGAINST_IT = r"""
import sys
from hippocampus.cli import lazy_pandas
assert lazy_pandas.install() and lazy_pandas.installed()
import pymilvus, pyarrow as pa, pyarrow.dataset  # what the store loads: both ask pandas for things as they load
import pandas as pd
from pandas.api.types import is_list_like
assert lazy_pandas.installed(), "importing pymilvus and pyarrow loaded the real pandas"
assert not isinstance([1], pd.DataFrame) and not isinstance(pa.array([1]), pd.Series) and lazy_pandas.installed()
assert pa.array([1.5, None]).null_count == 1 and lazy_pandas.installed()
assert is_list_like([1]) and not is_list_like(3)  # a forwarder: the first call loads pandas
assert not lazy_pandas.installed()
real = sys.modules["pandas"]
assert real is not pd and real.__file__ and real.__version__ == pd.__version__
frame = real.DataFrame({"a": [1, 2]})
assert isinstance(frame, pd.DataFrame) and issubclass(type(frame), pd.DataFrame) and isinstance(frame["a"], pd.Series)
assert pd.DataFrame({"a": [1, 2, 3]}).shape == (3, 1) and pd.concat is real.concat  # the stand-in forwards
import pandas
assert pandas is real and pandas.api.types.is_scalar(1)
assert pa.Table.from_pandas(frame).num_rows == 2  # pyarrow's pandas support works once pandas is real
print("ok")
"""


def test_pymilvus_and_pyarrow_load_against_the_stand_in_and_the_first_real_use_loads_pandas() -> None:
    assert _run(LOADS_AGAINST_IT).strip() == "ok"


IMPORT_AFTER = r"""
import sys
from hippocampus.cli import lazy_pandas
assert lazy_pandas.install()
import pandas.testing  # a submodule first: the real pandas, and its own module (never a second copy)
real = sys.modules["pandas"]
assert not lazy_pandas.installed() and pandas is real
assert sys.modules["pandas.testing"] is real.testing and real.testing.__spec__.name == "pandas.testing"
pandas.testing.assert_frame_equal(pandas.DataFrame({"a": [1]}), pandas.DataFrame({"a": [1]}))
print("ok")
"""

IMPORT_TOP_AFTER = r"""
import sys
from hippocampus.cli import lazy_pandas
assert lazy_pandas.install()
import pandas
assert pandas.DataFrame({"a": [1]}).iloc[0, 0] == 1 and not lazy_pandas.installed()
assert pandas.NaT is sys.modules["pandas"].NaT  # the real one, once pandas is loaded
print("ok")
"""


@pytest.mark.parametrize("code", [IMPORT_AFTER, IMPORT_TOP_AFTER], ids=["submodule", "top"])
def test_importing_pandas_after_the_stand_in_gives_a_working_pandas(code: str) -> None:
    assert _run(code).strip() == "ok"


def test_the_stand_in_stays_out_where_pandas_is_already_imported() -> None:
    out = _run("import pandas, sys\nfrom hippocampus.cli import lazy_pandas\n"
               "print(lazy_pandas.install(), sys.modules['pandas'] is pandas)")
    assert out.split() == ["False", "True"]


LIBRARY = r"""
import sys
import hippocampus
assert "pandas" not in sys.modules
from hippocampus import Memory
with Memory(milvus_uri=sys.argv[1]) as memory:
    memory.add("I live in Porto.", user_id="ann")
    assert memory.search("where do I live?", user_id="ann")
module = sys.modules["pandas"]
assert module.__file__ and type(module).__name__ == "module", module  # the real pandas, as pymilvus imports it
assert "hippocampus.cli.lazy_pandas" not in sys.modules
print("ok")
"""


def test_the_library_never_touches_sys_modules_pandas(tmp_path: Path) -> None:
    """Only the `hippocampus` command installs the stand-in: a user's process that imports the library
    and opens a store gets pymilvus with the real pandas, as pymilvus imports it."""
    assert _run(LIBRARY, str(tmp_path / "m.db")).strip() == "ok"
