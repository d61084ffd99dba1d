"""Issue 45: the metrics' endpoint label is the route's real path template. The routes of the
transfer and batch routers (export, import, graph build, update_many, delete_many) were labelled
without /v1 ("/import/jsonl"), unlike every other route. Every REST route of the schema is called
once, in process; each label /metrics shows is then one of the schema's own paths."""

from __future__ import annotations

import re
import uuid

import pytest
from fastapi.testclient import TestClient

from hippocampus import Memory
from hippocampus.server import create_app


@pytest.fixture(scope="module")
def app(shared_db, embedder):
    memory = Memory(milvus_uri=str(shared_db), collection_name=f"lbl_{uuid.uuid4().hex[:10]}", embedder=embedder)
    yield create_app(memory, mcp=False, close_memory=False)
    memory.close()


def test_every_route_is_labelled_by_its_own_path_template(app) -> None:
    schema = app.openapi()["paths"]
    calls = [(method.upper(), path) for path, ops in schema.items() for method in ops if path.startswith("/v1/")]
    assert {"/v1/import/jsonl", "/v1/export/jsonl", "/v1/memories/batch/update"} <= {p for _, p in calls}
    with TestClient(app, base_url="http://127.0.0.1") as client:
        for method, path in calls:  # an empty body or no user: a 422 is labelled like a 200
            client.request(method, re.sub(r"\{[^}]+\}", "1", path), json={} if method != "GET" else None)
        shown = client.get("/metrics").text
    labels = set(re.findall(r'hippocampus_requests_total\{endpoint="([^"]+)",method="(?:GET|POST|PUT|PATCH|DELETE)"', shown))
    assert labels - set(schema) - {"/metrics"} == set(), "labels that are no route of the schema"
    assert {p for _, p in calls} <= labels, "a route answered without its label"
