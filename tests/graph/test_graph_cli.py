"""`hippocampus graph -u USER`: a user's entities and triples from the command line, built on demand
with the offline extractor (the degraded mode, end to end on a real store), as a table and as JSON."""

from __future__ import annotations

import json

from tests.cli.test_core_cli import cli


def test_graph_command_builds_and_prints_a_users_entities_and_triples(fresh_path: str):
    for text in ["I moved to Lisbon with my sister Ana", "我住在杭州，我不喜欢香菜"]:
        cli(fresh_path, "add", text, "-u", "alice")
    cli(fresh_path, "add", "My brother Tom lives in Oslo", "-u", "bob")
    empty = cli(fresh_path, "graph", "-u", "alice").stdout
    assert "no graph for alice yet" in empty
    view = json.loads(cli(fresh_path, "graph", "-u", "alice", "--build", "--json").stdout)
    assert view["built"]["memories_read"] == 2 and view["memories_read"] == 2
    assert {"Lisbon", "Ana", "杭州", "香菜"} <= {e["name"] for e in view["entities"]}
    triples = {(t["subject"], t["predicate"], t["object"], t["negated"]) for t in view["triples"]}
    assert {("alice", "lives in", "Lisbon", False), ("Ana", "sister of", "alice", False), ("alice", "喜欢", "香菜", True)} <= triples
    assert not {"Tom", "Oslo"} & {e["name"] for e in view["entities"]}  # bob's memories are not alice's graph
    table = cli(fresh_path, "graph", "-u", "alice").stdout
    assert "entities of alice" in table and "not 喜欢" in table and "Lisbon" in table
