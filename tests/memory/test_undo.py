"""Memory.undo (issue 15, item 4): an undone history event puts back the state from before it, on
real milvus-lite with the offline embedder and rules; each undo is itself recorded; what cannot be
undone, was undone already, or is another user's is refused and changes nothing."""

from __future__ import annotations

import json
import threading

import pytest
from typer.testing import CliRunner

from hippocampus import Client, InvalidInput, Memory, NotFound
from hippocampus.cli.app import app
from hippocampus.lifecycle.policy import DAY
from hippocampus.models import Category, HistoryAction, HistoryEvent, State, now_ts, simulated_clock
from hippocampus.server import create_app
from tests.service_support import IN_PROCESS_URL, in_process

U = "alice"


def _last(memory: Memory, memory_id: int, user: str = U):
    return memory.history(memory_id, user)[-1]


def _seen(memory: Memory, user: str = U) -> list[tuple]:
    """What a user sees of their memories, ids aside."""
    return sorted((r.text, r.memory_type.value, r.ts, r.chat_id, r.who, r.life.category.value, r.life.state.value, r.hit_count)
                  for r in memory.get_all(user))


def test_an_update_undone_brings_the_old_text_back_under_the_same_id_once(memory: Memory):
    mid = memory.add("I moved to Berlin in May", user_id=U, chat_id="c1").ids[0]
    memory.update(mid, "I moved to Hamburg in June", user_id=U)
    event = _last(memory, mid)
    assert event.action is HistoryAction.UPDATED and isinstance(event.event_id, int)
    result = memory.undo(event.event_id, U)
    assert (result.event_id, result.action, result.memory_ids, result.removed_ids) == (event.event_id, HistoryAction.UPDATED, [mid], [])
    back = memory.get(mid, U)
    assert back.text == "I moved to Berlin in May" and back.metadata["thing"] == "I moved to Berlin in May"
    assert memory.search("Berlin in May", user_id=U).episodic[0].id == mid  # re-embedded
    undo = _last(memory, mid)
    assert (undo.actor, undo.details["undo_of"], undo.old_text, undo.new_text) == \
        ("undo", event.event_id, "I moved to Hamburg in June", "I moved to Berlin in May")
    with pytest.raises(InvalidInput, match="undone already"):
        memory.undo(event.event_id, U)
    with pytest.raises(InvalidInput, match="itself an undo"):
        memory.undo(undo.event_id, U)
    assert memory.get(mid, U).text == "I moved to Berlin in May"


def test_an_event_whose_memory_changed_after_it_waits_for_the_later_one(memory: Memory):
    mid = memory.add("The meeting is on Monday", user_id=U).ids[0]
    memory.update(mid, "The meeting is on Tuesday", user_id=U)
    first = _last(memory, mid).event_id
    memory.update(mid, "The meeting is on Wednesday", user_id=U)
    second = _last(memory, mid).event_id
    with pytest.raises(InvalidInput, match=f"memory {mid} changed after this event; undo the later event first"):
        memory.undo(first, U)
    assert memory.get(mid, U).text == "The meeting is on Wednesday"
    memory.undo(second, U)
    memory.undo(first, U)
    assert memory.get(mid, U).text == "The meeting is on Monday"


def test_a_curate_undone_puts_category_importance_and_state_back(memory: Memory):
    mid = memory.add("We hiked the Alps", user_id=U, ts=now_ts() - 10).ids[0]
    t0 = memory.get(mid, U).life.last_activated
    with simulated_clock(lambda: t0 + 200 * DAY):
        memory.decay(U)
        assert memory.get(mid, U).life.state is State.ARCHIVED
        before = memory.get(mid, U).life
        memory.curate(mid, U, category="core", importance=0.9)
        assert memory.get(mid, U).life.state is State.ACTIVE
        result = memory.undo(_last(memory, mid).event_id, U)
    assert result.memory_ids == [mid]
    assert memory.get(mid, U).life == before
    assert _last(memory, mid).details["lifecycle"]["category"] == ["core", "experience"]


def test_a_creation_undone_deletes_and_a_delete_undone_brings_the_row_back(memory: Memory):
    keep = memory.add("I am allergic to peanuts", user_id=U, chat_id="c7", who="ana", metadata={"src": "chat"},
                      ts=1_700_000_000).ids[0]
    memory.mark_used([keep], user_id=U)
    memory.curate(keep, U, category="preference")
    before = memory.get(keep, U)
    memory.delete(keep, U)
    deleted = _last(memory, keep, U)
    assert deleted.details["row"]["text"] == "I am allergic to peanuts"
    result = memory.undo(deleted.event_id, U)
    (new_id,) = result.memory_ids
    assert new_id != keep
    back = memory.get(new_id, U)
    fields = ("user_id", "memory_type", "ts", "chat_id", "who", "text", "hit_count", "created_at")
    assert [getattr(back, f) for f in fields] == [getattr(before, f) for f in fields] and back.life == before.life
    assert {k: v for k, v in back.metadata.items() if k != "updated_at"} == \
        {k: v for k, v in before.metadata.items() if k != "updated_at"}
    assert _last(memory, keep).details == {"undo_of": deleted.event_id, "restored_as": new_id}
    assert memory.history(new_id, U)[0].details == {"undo_of": deleted.event_id, "restored_from": keep}
    with pytest.raises(InvalidInput):
        memory.undo(deleted.event_id, U)
    with pytest.raises(InvalidInput, match="restored already"):
        memory.restore(keep, U)

    made = memory.add("a passing thought", user_id=U).ids[0]
    result = memory.undo(memory.history(made, U)[0].event_id, U)
    assert (result.memory_ids, result.removed_ids) == ([], [made])
    with pytest.raises(NotFound):
        memory.get(made, U)
    assert (_last(memory, made).action, _last(memory, made).actor) == (HistoryAction.DELETED, "undo")
    assert [r.id for r in memory.get_all(U)] == [new_id]


def test_a_forget_undone_comes_back_active_as_restore_brings_it(memory: Memory):
    mid = memory.add("An old trip to Rome", user_id=U).ids[0]
    last = memory.get(mid, U).life.last_activated
    assert memory.decay(U, now=last + 400 * DAY).forgotten == 1
    forgot = _last(memory, mid)
    assert forgot.action is HistoryAction.FORGOTTEN
    (new_id,) = memory.undo(forgot.event_id, U).memory_ids
    life = memory.get(new_id, U).life
    assert memory.get(new_id, U).text == "An old trip to Rome" and life.state is State.ACTIVE and life.importance >= 0.5
    with pytest.raises(InvalidInput, match="restored already"):
        memory.restore(mid, U)


def test_a_merge_undone_removes_the_merged_record_and_brings_both_sources_back(memory: Memory):
    texts = ["I went to the dentist this afternoon and got a filling",
             "I went to the dentist this afternoon and got a filling. It cost 120 dollars."]
    a, b = (memory.add(t, user_id=U, chat_id="c1", ts=1_767_225_600 + i * 60).ids[0] for i, t in enumerate(texts))
    before = _seen(memory)
    assert memory.consolidate(U).merged == 1
    assert len(memory.get_all(U, "episodic")) == 1
    (merged,) = [r for r in memory.get_all(U, "episodic") if r.metadata.get("merged_from_ids")]
    source_event = _last(memory, a)
    assert source_event.action is HistoryAction.MERGED and source_event.details["row"]["text"] == texts[0]
    facts = {r.id for r in memory.get_all(U, "semantic")}  # distilled before the merge: they stay
    result = memory.undo(source_event.event_id, U)  # the source's event names the same merge
    assert result.removed_ids == [merged.id] and len(result.memory_ids) == 2
    assert sorted(memory.get(i, U).text for i in result.memory_ids) == sorted(texts)
    with pytest.raises(NotFound):
        memory.get(merged.id, U)
    assert [s for s in _seen(memory) if s[1] == "episodic"] == before  # as they were, but for their ids
    assert {r.id for r in memory.get_all(U, "semantic")} == facts
    assert {e.details.get("restored_as") for e in memory.history(a, U) + memory.history(b, U)} >= set(result.memory_ids)
    with pytest.raises(InvalidInput, match="undone already"):
        memory.undo(memory.history(merged.id, U)[0].event_id, U)  # the merged record's event: the same merge


def test_archive_promotion_supersession_and_compression_undone(memory: Memory):
    trip = memory.add("We went to the lake with Ana", user_id=U).ids[0]
    name = memory.add("My name is Lina Park", user_id=U).ids[0]
    memory.curate(name, U, importance=0.95)
    assert memory.decay(U).promoted == 1
    promoted = _last(memory, name)
    assert promoted.action is HistoryAction.PROMOTED
    memory.undo(promoted.event_id, U)
    assert memory.get(name, U).life.category is Category.EXPERIENCE

    last = memory.get(trip, U).life.last_activated
    memory.decay(U, now=last + 120 * DAY)
    archived = _last(memory, trip)
    assert archived.action is HistoryAction.ARCHIVED
    assert memory.undo(archived.event_id, U).memory_ids == [trip]
    assert memory.get(trip, U).life.state is State.ACTIVE

    old = memory.add("The user lives in Lisbon", user_id="sup", memory_type="semantic", ts=1_700_000_000).ids[0]
    new = memory.add("The user lives in Porto", user_id="sup", memory_type="semantic", ts=1_760_000_000).ids[0]
    assert memory.consolidate("sup").superseded == 1
    memory.undo(_last(memory, old, "sup").event_id, "sup")
    life = memory.get(old, "sup").life
    assert (life.superseded_by, life.valid_to, life.importance) == (None, None, pytest.approx(0.6))
    assert old in [h.id for h in memory.search("where does the user live?", user_id="sup").semantic]
    assert memory.get(new, "sup").life.superseded_by is None

    coffee = ["The user drinks coffee every morning", "The user drinks 2 cups of coffee a day", "The user drinks coffee with oat milk"]
    ids = [memory.add(t, user_id="cmp", memory_type="semantic", ts=now_ts() - 100 + i).ids[0] for i, t in enumerate(coffee)]
    later = now_ts() + 40 * DAY
    with simulated_clock(lambda: later):
        assert memory.consolidate("cmp").compressed == 3
    event = _last(memory, ids[0], "cmp")
    assert event.action is HistoryAction.COMPRESSED
    memory.undo(event.event_id, "cmp")
    back = memory.get(ids[0], "cmp")
    assert back.life.state is State.ACTIVE and "compressed_into" not in back.metadata
    assert all(memory.get(i, "cmp").life.state is State.ARCHIVED for i in ids[1:])
    assert any(r.metadata.get("compressed_from") for r in memory.get_all("cmp"))  # the compressed fact stays


def test_what_cannot_be_undone_and_another_users_event_are_refused_and_change_nothing(memory: Memory):
    mid = memory.add("I play the cello", user_id=U).ids[0]
    memory.mark_used([mid], user_id=U)
    hit = _last(memory, mid)
    with pytest.raises(InvalidInput, match="a hit cannot be undone"):
        memory.undo(hit.event_id, U)
    memory.update(mid, "I play the viola", user_id=U)
    event = _last(memory, mid)
    state = _seen(memory)
    with pytest.raises(NotFound) as other:
        memory.undo(event.event_id, "mallory")
    with pytest.raises(NotFound) as unknown:
        memory.undo(10**15, U)
    assert str(other.value) == f"no history event {event.event_id} for this user"
    assert str(unknown.value) == f"no history event {10**15} for this user"
    for bad in (-1, "x", 2**63, True, None):
        with pytest.raises(InvalidInput):
            memory.undo(bad, U)
    with pytest.raises(InvalidInput):
        memory.undo(event.event_id, "")
    assert _seen(memory) == state and len(memory.history(mid, U)) == 3

    legacy = memory.add("deleted before undo existed", user_id=U).ids[0]
    memory.store.delete(f"id == {legacy}")
    memory.store.add_history([HistoryEvent(memory_id=legacy, user_id=U, action=HistoryAction.DELETED).model_dump(mode="json")])
    with pytest.raises(InvalidInput, match="kept no copy"):
        memory.undo(_last(memory, legacy).event_id, U)


def test_two_undos_of_one_event_at_once_succeed_once(memory: Memory):
    mid = memory.add("I keep bees", user_id=U).ids[0]
    memory.delete(mid, U)
    event = _last(memory, mid)
    start, outcomes = threading.Barrier(2), []

    def undo() -> None:
        start.wait()
        try:
            outcomes.append(memory.undo(event.event_id, U).memory_ids)
        except InvalidInput as exc:
            outcomes.append(str(exc))

    threads = [threading.Thread(target=undo) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(map(type, outcomes), key=str) == [list, str] and len(memory.get_all(U)) == 1


def test_undo_through_the_rest_client_and_the_cli(memory: Memory, fresh_path: str):
    mid = memory.add("I work at the bakery", user_id=U).ids[0]
    with in_process(create_app(memory, mcp=False)) as transport, Client(IN_PROCESS_URL, transport=transport) as client:
        client.update(mid, "I work at the library", user_id=U)
        event = client.history(mid, U)[-1]
        assert event.event_id == _last(memory, mid).event_id
        with pytest.raises(NotFound, match="no history event"):
            client.undo(event.event_id, "mallory")
        result = client.undo(event.event_id, U)
        assert result.memory_ids == [mid] and result.action is HistoryAction.UPDATED
        assert client.get(mid, U).text == "I work at the bakery"
        with pytest.raises(InvalidInput, match="undone already"):
            client.undo(event.event_id, U)
        with pytest.raises(InvalidInput):
            client.undo(-3, U)

    runner = CliRunner(env={"COLUMNS": "200"})
    run = lambda *args: runner.invoke(app, ["--uri", fresh_path, *args])  # noqa: E731
    cli_id = json.loads(run("add", "I live in Oslo", "-u", U, "--json").stdout)["ids"][0]
    run("update", str(cli_id), "I live in Bergen", "-u", U)
    events = json.loads(run("history", str(cli_id), "-u", U, "--json").stdout)
    assert "event id" in run("history", str(cli_id), "-u", U).stdout
    done = run("undo", str(events[-1]["event_id"]), "-u", U, "--json")
    assert done.exit_code == 0 and json.loads(done.stdout)["memory_ids"] == [cli_id]
    assert json.loads(run("get", str(cli_id), "-u", U, "--json").stdout)["text"] == "I live in Oslo"
    assert run("undo", str(events[-1]["event_id"]), "-u", "bob").exit_code != 0
