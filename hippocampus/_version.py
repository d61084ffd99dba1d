"""The package's version, a leaf module: the root, the server, MCP, the command line and tracing import it
from here, so none of them imports the package root from inside it (issue 59)."""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def _from_source() -> str:
    """A source checkout never installed: the [project] version of the pyproject.toml beside the package."""
    try:
        text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return "0.0.0+unknown"
    project = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    found = re.search(r'^version\s*=\s*"([^"]+)"', project.group(1), re.M) if project else None
    return found.group(1) if found else "0.0.0+unknown"


def _read() -> str:
    try:
        return version("hippocampus")  # the installed distribution's metadata (pyproject.toml's [project] version)
    except PackageNotFoundError:
        return _from_source()


__version__ = _read()
