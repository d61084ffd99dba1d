"""The graph stage of search (issue 16, item 3): memories linked to the query through the user's
entities and triples join the candidates, the path shows in the signals, and nothing of another
user, another memory type or a superseded fact ever comes through the graph. Real milvus-lite; the
extractor scripted (tests/graph/test_graph_store.py's model)."""

from __future__ import annotations

import pytest

from hippocampus.errors import InvalidInput
from hippocampus.retrieval.graph import GraphParams, entity_links, hop_links, idf, named_in, triple_links, words
from tests.graph.test_graph_store import scripted_triples

FILLER = ["I bake sourdough bread on Sundays", "My laptop battery died during the meeting", "The garden needs watering",
          "I watched a documentary about whales", "Traffic was terrible this morning", "I started learning the violin",
          "The printer at work jams every day", "We ordered too much pizza last night"]


@pytest.fixture
def linked(modelled):
    memory, chat = modelled
    chat.replies["TripleExtraction"] = scripted_triples
    ids = {t: memory.add(t, user_id="alice").ids[0] for t in ["Ana gave me a blue bike for my birthday", "Ana lives in Porto", *FILLER]}
    memory.add("Ana lives in Porto", user_id="bob")
    memory.add("Ana works at Porto zoo", user_id="alice", memory_type="semantic")
    memory.build_graph()
    return memory, ids


def test_a_memory_one_rare_entity_away_joins_with_its_path(linked):
    memory, ids = linked
    porto = ids["Ana lives in Porto"]
    plain = memory.search("who gave me the blue bike?", user_id="alice", memory_type="episodic", limit=2, graph=False).episodic
    assert porto not in [h.id for h in plain] and not any(k.startswith("graph_") for h in plain for k in h.signals)
    hits = memory.search("who gave me the blue bike?", user_id="alice", memory_type="episodic", limit=10, graph=True).episodic
    by_id = {h.id: h for h in hits}
    assert by_id[porto].signals.get("graph_hop", 0) > 0  # reached from the bike memory through "Ana"
    assert all(h.memory.user_id == "alice" and h.memory.memory_type.value == "episodic" for h in hits)


def test_the_graph_follows_the_config_and_refuses_a_bad_flag(linked):
    memory, _ids = linked
    assert memory.config.graph == "off"
    hits = memory.search("who gave me the blue bike?", user_id="alice", limit=10).episodic
    assert not any(k.startswith("graph_") for h in hits for k in h.signals)
    with pytest.raises(InvalidInput):
        memory.search("bike", user_id="alice", graph="yes")


def test_another_users_graph_never_answers(linked):
    memory, _ids = linked
    memory.add("Ana lives in Porto", user_id="carol")
    hits = memory.search("Where does Ana live? Porto", user_id="carol", limit=10, graph=True).episodic
    assert [h.memory.user_id for h in hits] == ["carol"]  # carol has no graph yet: alice's and bob's are not hers


def test_link_strengths_are_pure_and_bounded():
    assert idf(1, 100) == 1.0 and idf(100, 100) == 0.0 and 0 < idf(10, 100) < 1
    assert named_in("Porto", words("Where does Ana live? Porto!")) and not named_in("Port", words("Porto"))
    assert named_in("杭州", words("我妹妹住在杭州吗"))
    params = GraphParams(weight=0.3)
    triples = [{"similarity": 0.9, "supports": [1, 2]}, {"similarity": 0.5, "supports": [3]}]
    assert triple_links(triples, params) == {1: 1.0, 2: 1.0}
    entities = [{"name": "Ana", "supports": [1, 4]}, {"name": "alice", "supports": list(range(1, 40))}]
    assert entity_links(entities, "is Ana ok?", 40, params) == {1: idf(2, 40), 4: idf(2, 40)}
    hops = hop_links([1, 2], entities, 40, params)
    assert hops == {4: idf(2, 40)}  # "alice" is in nearly every memory: it links nothing
