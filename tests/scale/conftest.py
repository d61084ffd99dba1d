"""One `milvus-lite server` for every scale test of a worker (each test makes its own collection on it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.scale.support import lite_server


@pytest.fixture(scope="session")
def scale_server(tmp_path_factory) -> Iterator[str]:
    with lite_server(tmp_path_factory.mktemp("scale-server")) as uri:
        yield uri
