"""API fuzzing from the service's own OpenAPI schema (schemathesis) against a real uvicorn server:
no 5xx but the documented 502/503, and every 4xx/5xx body has the documented error shape."""

from __future__ import annotations

import json
import uuid

import httpx
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


def _nested(depth: int) -> str:
    """Metadata nested `depth` levels, as JSON text (written by hand: json.dumps itself recurses)."""
    opens = "".join('[' if n % 2 == 0 else '{"k%d": ' % n for n in range(depth))
    closes = "".join(']' if n % 2 == 0 else '}' for n in reversed(range(depth)))
    return '{"deep": ' + opens + '"x"' + closes + "}"


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=30,
)
# deep (past the 32-level limit and past the serializer's own), wide, and odd (NaN, huge ints, odd keys)
ODD = [_nested(31), _nested(33), _nested(300), _nested(1000), json.dumps({f"key{n}": n for n in range(5000)}),
       json.dumps({"": {"\u0000": "nul key", "\u202e": "rtl", "x" * 300: 1}}), json.dumps({"n": 2**64}),
       '{"nan": NaN, "inf": Infinity}']


def test_deep_wide_and_odd_metadata_never_answer_500(fuzz_url):
    """Whatever metadata a client sends, the answer is 2xx or a documented 4xx, and every read of
    the user's memories (list, get, search, export, history) still answers afterwards."""
    seen: dict[int, int] = {}
    user = f"odd-{uuid.uuid4().hex[:6]}"

    def post(client, meta: str) -> None:
        content = f'{{"messages": "odd metadata memory", "user_id": "{user}", "metadata": {meta}}}'
        r = client.post("/v1/memories", content=content, headers={**HEADERS, "Content-Type": "application/json"})
        seen[r.status_code] = seen.get(r.status_code, 0) + 1
        assert r.status_code < 500, (r.status_code, r.text[:300])
        if r.status_code >= 400:
            assert set(r.json()) == {"error"}

    with httpx.Client(base_url=fuzz_url, timeout=60) as client:
        for meta in ODD:
            post(client, meta)

        @given(meta=st.dictionaries(st.text(max_size=12), _JSON, max_size=5))
        @settings(max_examples=25, deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        def fuzz(meta) -> None:
            post(client, json.dumps(meta))

        fuzz()
        page = client.get("/v1/memories", params={"user_id": user, "limit": 200}, headers=HEADERS)
        assert page.status_code == 200, page.text[:300]
        ids = [item["id"] for item in page.json()["items"]]
        assert ids and 200 in seen and 422 in seen, seen  # some accepted, the deep and odd ones refused
        for memory_id in ids[:10]:
            assert client.get(f"/v1/memories/{memory_id}", params={"user_id": user}, headers=HEADERS).status_code == 200
            assert client.get(f"/v1/memories/{memory_id}/history", params={"user_id": user}, headers=HEADERS).status_code == 200
        found = client.post("/v1/search", json={"query": "odd metadata", "user_id": user}, headers=HEADERS)
        assert found.status_code == 200, found.text[:300]
        assert client.get("/v1/export/jsonl", params={"user_id": user}, headers=HEADERS).status_code == 200
        gone = client.delete(f"/v1/memories/{ids[0]}", params={"user_id": user}, headers=HEADERS)
        assert gone.status_code == 200, gone.text[:300]
