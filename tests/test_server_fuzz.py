"""API fuzzing from the service's own OpenAPI schema (schemathesis) against a real uvicorn server:
no 5xx but the documented 502/503, and every 4xx/5xx body has the documented error shape."""

from __future__ import annotations

import uuid

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hippocampus import Memory
from hippocampus.server import KeyRing, create_app
from tests.service_support import served

KEY = "fuzz-operator-9d3Woda4m1RKM65gYD_Yiv9ShcD2cfF0"
HEADERS = {"Authorization": f"Bearer {KEY}"}
EXAMPLES = 300  # requests over all operations; each is one real HTTP call


@pytest.fixture(scope="module")
def fuzz_url(shared_db, embedder):
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"fz_{uuid.uuid4().hex[:10]}", embedder=embedder)
    memory.add_many([{"text": f"fuzz seed memory {n}", "user_id": "string", "ts": 1_700_000_000 + n} for n in range(3)])
    with served(create_app(memory, KeyRing.load(env={"HIPPOCAMPUS_API_KEY": KEY}), mcp=False)) as url:
        yield url


def test_api_answers_with_documented_statuses_and_shapes(fuzz_url):
    schema = schemathesis.openapi.from_url(f"{fuzz_url}/openapi.json", headers=HEADERS)  # the docs need a key
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 12
    seen: dict[int, int] = {}

    @given(case=st.one_of(*[op.as_strategy() for op in operations]))
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
    def check(case) -> None:
        response = case.call(base_url=fuzz_url, headers=HEADERS, timeout=60)
        status = response.status_code
        seen[status] = seen.get(status, 0) + 1
        assert status < 500 or status in (502, 503), f"{case.method} {case.path}: {status} {response.text[:300]}"
        if status >= 400:
            body = response.json()
            assert set(body) == {"error"} and set(body["error"]) == {"type", "message"}, body
            assert isinstance(body["error"]["message"], str) and body["error"]["message"]

    check()
    assert any(s < 300 for s in seen) and any(400 <= s < 500 for s in seen), seen  # both kinds were exercised
