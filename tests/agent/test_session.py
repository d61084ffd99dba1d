"""Session memory (issue 17, item 2): working memory of the last messages, extraction at the end,
when the buffer fills or on save, idempotent per session (twice, or again after a crash half-way,
never duplicates and loses nothing); the extractor's checks; the offline extractor. Real
milvus-lite; the model scripted, or the offline rules."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from hippocampus.agent import Session
from hippocampus.agent.session import HASH_KEY, SESSION_KEY
from hippocampus.errors import StoreError
from hippocampus.models import Category

FACTS = ["The user keeps bees in Utrecht", "The user plays cello on Sundays", "The user drives an electric Volvo",
         "The user collects Japanese woodblock prints", "The user swims at dawn in Lake Zurich"]


def _extract_user_lines(chat) -> None:
    """A scripted extractor: every user message that starts with "fact:" is one new memory."""
    def reply(inputs):
        new = [{"text": t["content"][5:].strip(), "category": "fact", "importance": "medium"}
               for t in inputs["turns"] if t["role"] == "user" and t["content"].startswith("fact:")]
        return json.dumps({"new": new, "updates": [], "reason": "scripted"})

    chat.replies["SessionExtraction"] = reply


def _fill(session, facts) -> None:
    for fact in facts:
        session.add_message("user", f"fact: {fact}")
        session.add_message("assistant", "Noted.")


def _texts(memory, user="u") -> list[str]:
    return sorted(r.text for r in memory.get_all(user))


def test_the_buffer_extracts_when_it_reaches_max_messages_and_keeps_working(modelled):
    memory, chat = modelled
    _extract_user_lines(chat)
    low = memory.add("The user once tried pottery", user_id="u").ids[0]
    memory.curate(low, "u", importance=0.1)  # below 0.2: never shown to the extractor
    session = Session(memory, "u", "c1", max_messages=4)
    assert session.add_message("user", f"fact: {FACTS[0]}") is None
    session.add_message("assistant", "ok")
    assert session.add_message("user", "   ") is None and chat.count("SessionExtraction") == 0  # blank: ignored
    session.add_message("user", f"fact: {FACTS[1]}")
    report = session.add_message("assistant", "ok")  # the 4th message fills the buffer
    assert report is not None and (report.trigger, report.messages, len(report.added), report.llm_calls) == ("buffer full", 4, 2, 1)
    _fill(session, FACTS[2:3])
    assert [m["content"] for m in session.messages] == [f"fact: {FACTS[1]}", "ok", f"fact: {FACTS[2]}", "Noted."]
    assert chat.count("SessionExtraction") == 1 and not session.closed
    shown = [m["text"] for m in chat.prompts[-1].inputs["memories"]]
    assert "The user once tried pottery" not in shown
    final = session.end()
    assert (final.messages, len(final.added), session.closed) == (2, 1, True)
    assert _texts(memory) == sorted(FACTS[:3] + ["The user once tried pottery"])
    stored = {r.text: r for r in memory.get_all("u")}
    assert stored[FACTS[0]].metadata[SESSION_KEY] == session.session_id and stored[FACTS[0]].metadata[HASH_KEY]
    assert stored[FACTS[0]].life.category is Category.FACT


def test_ending_a_session_twice_writes_nothing_new(modelled):
    memory, chat = modelled
    _extract_user_lines(chat)
    with Session(memory, "u", "c1", session_id="s-1") as session:
        _fill(session, FACTS[:2])
    assert session.closed and _texts(memory) == sorted(FACTS[:2])
    again = session.end()
    assert (again.added, again.llm_calls, chat.count("SessionExtraction")) == ([], 0, 1)
    replay = Session(memory, "u", "c1", session_id="s-1")  # the same session replayed (a restarted worker)
    _fill(replay, FACTS[:2])
    report = replay.end()
    assert report.added == [] and _texts(memory) == sorted(FACTS[:2])


def test_a_crash_half_way_never_duplicates_and_loses_nothing(modelled, monkeypatch):
    memory, chat = modelled
    _extract_user_lines(chat)
    real_add, calls = memory.add, []

    def flaky_add(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise StoreError("the store went away")
        return real_add(*args, **kwargs)

    monkeypatch.setattr(memory, "add", flaky_add)
    session = Session(memory, "u", "c1", session_id="s-crash")
    _fill(session, FACTS[:3])
    first = session.end()
    assert first.pending and not session.closed and len(first.added) == 1 and "StoreError" in first.warnings[0]
    second = session.end()  # the rest of the same extraction, without asking the model again
    assert not second.pending and session.closed and second.llm_calls == 0
    assert second.skipped_as_duplicate == [FACTS[0]] and len(second.added) == 2
    assert _texts(memory) == sorted(FACTS[:3]) and chat.count("SessionExtraction") == 1
    # a crashed process: a new Session object with the same id and messages, after the first write only
    memory.reset("u")
    calls.clear()
    crashed = Session(memory, "u", "c1", session_id="s-crash-2")
    _fill(crashed, FACTS[:3])
    assert crashed.end().pending
    replay = Session(memory, "u", "c1", session_id="s-crash-2")
    _fill(replay, FACTS[:3])
    done = replay.end()
    assert not done.pending and _texts(memory) == sorted(FACTS[:3])


def test_a_failed_model_keeps_the_messages_for_the_next_try(modelled, caplog):
    memory, chat = modelled
    chat.replies["SessionExtraction"] = lambda _i: RuntimeError("model down")
    session = Session(memory, "u", "c1", max_messages=2)
    session.add_message("user", f"fact: {FACTS[0]}")
    failed = session.add_message("assistant", "ok")
    assert failed.pending and "LLMError" in failed.warnings[0] and "extraction failed" in caplog.text
    session.add_message("user", f"fact: {FACTS[1]}")  # no retry on every message: the next one after a full buffer again
    assert chat.count("SessionExtraction") == 1 and memory.get_all("u") == []
    _extract_user_lines(chat)
    report = session.end()
    assert (report.messages, report.pending, session.closed) == (3, False, True) and _texts(memory) == sorted(FACTS[:2])


def test_the_marker_skips_what_this_session_wrote_even_when_it_is_not_shown(modelled):
    memory, chat = modelled
    _extract_user_lines(chat)
    with Session(memory, "u", "c1", session_id="s-arch") as session:
        _fill(session, FACTS[:1])
    written = memory.get_all("u")[0]
    memory.curate(written.id, "u", importance=0.1)  # below 0.2: not shown next time, so no "repeats" check
    replay = Session(memory, "u", "c1", session_id="s-arch")
    _fill(replay, FACTS[:1])
    report = replay.end()
    assert report.skipped_as_duplicate == [FACTS[0]] and report.added == [] and _texts(memory) == [FACTS[0]]


def test_refused_ids_change_nothing(modelled):
    memory, chat = modelled
    sister = memory.add("The user's sister lives in Lille", user_id="u").ids[0]
    chat.replies["SessionExtraction"] = lambda _i: json.dumps({
        "new": [{"text": "The user's sister lives in Lille."}],
        "updates": [{"id": "m7", "text": "The user's brother lives in Nice"}, {"id": "", "text": "x"},
                    {"id": "m1", "text": ""}]})
    with Session(memory, "u") as session:
        session.add_message("user", "my sister still lives in Lille")
    report = session.reports[-1]
    assert report.added == report.updated == [] and len(report.refused) == 4
    assert any("m7: not among the memories shown" in r for r in report.refused)
    assert any("repeats m1; dropped" in r for r in report.refused)
    assert _texts(memory) == ["The user's sister lives in Lille"] and len(memory.history(sister, "u")) == 1


def test_core_memories_are_never_updated_and_others_are(modelled):
    memory, chat = modelled
    name = memory.add("The user's name is Dana", user_id="u").ids[0]
    memory.curate(name, "u", category="core")
    city = memory.add("The user's team works in the Lille office", user_id="u").ids[0]
    short = {}

    def reply(inputs):
        short.update({m["text"]: m["id"] for m in inputs["memories"]})
        return json.dumps({"new": [], "updates": [
            {"id": short["The user's name is Dana"], "text": "The user's name is Dan"},
            {"id": short["The user's team works in the Lille office"], "text": "The user's team works in the Lyon office"}]})

    chat.replies["SessionExtraction"] = reply
    with Session(memory, "u") as session:
        session.add_message("user", "call me Dan. and my team moved to the Lyon office")
    report = session.reports[-1]
    assert report.updated == [city] and any("core memory is never updated" in r for r in report.refused)
    assert memory.get(name, "u").text == "The user's name is Dana"
    assert memory.get(city, "u").text == "The user's team works in the Lyon office"


def test_the_offline_extractor_stores_the_personal_facts_not_the_chitchat(memory):
    with Session(memory, "u", "c1") as session:
        for role, content in [("user", "hi!"), ("assistant", "Hello! How can I help?"),
                              ("user", "I live in Utrecht and I work as a nurse"), ("assistant", "Nice city."),
                              ("user", "what's the capital of Australia?"), ("assistant", "Canberra."),
                              ("user", "please remember that my cat is called Miso"), ("user", "thanks, bye")]:
            session.add_message(role, content)
    report = session.reports[-1]
    assert report.mode.startswith("offline") and report.updated == [] and len(report.added) == 2
    texts = " | ".join(_texts(memory))
    assert "Utrecht" in texts and "nurse" in texts and "Miso" in texts
    assert not any(word in texts for word in ("hi!", "Hello", "Australia", "Canberra", "thanks"))


@settings(max_examples=12, deadline=None)
@given(steps=st.lists(st.sampled_from(["fact", "chat", "save", "crash", "end"]), min_size=1, max_size=12))
def test_any_interleaving_of_messages_saves_ends_and_crashes_stores_each_fact_once(modelled, steps):
    memory, chat = modelled
    _extract_user_lines(chat)
    user = f"p{abs(hash(tuple(steps))) % 10**9}"
    memory.reset(user)
    real_add, fail = memory.add, []

    def add(*args, **kwargs):
        if fail:
            fail.clear()
            raise StoreError("crash")
        return real_add(*args, **kwargs)

    memory.add = add
    try:
        session = Session(memory, user, "c1", max_messages=3, session_id=f"s-{user}")
        said = []
        for step in steps:
            if session.closed:
                break
            if step == "fact" and len(said) < len(FACTS):
                said.append(FACTS[len(said)])
                session.add_message("user", f"fact: {said[-1]}")
            elif step == "chat":
                session.add_message("assistant", "ok")
            elif step == "crash":
                fail.append(1)
            elif step == "save":
                session.save()
            elif step == "end":
                session.end()
        fail.clear()
        session.end()
        assert session.closed and _texts(memory, user) == sorted(said)
    finally:
        memory.add = real_add


def test_the_readme_example_runs_as_written(shared_db, embedder, monkeypatch):
    import re
    import uuid
    from pathlib import Path

    import hippocampus
    from hippocampus import Memory

    text = (Path(__file__).resolve().parents[2] / "docs" / "python.md").read_text(encoding="utf-8")  # moved from the README
    start = text.index("## Use it in an agent")
    (code,) = re.findall(r"```python\n(.*?)```", text[start: text.index("\n## ", start + 1)], flags=re.S)
    collection = f"rd_{uuid.uuid4().hex[:10]}"
    with Memory(milvus_uri=str(shared_db), collection_name=collection, embedder=embedder) as seeded:
        seeded.add("I am allergic to peanuts", user_id="alice")
    monkeypatch.setattr(hippocampus, "Memory", lambda: Memory(milvus_uri=str(shared_db), collection_name=collection, embedder=embedder))
    prompts: list[str] = []
    exec(compile(code, "docs/python.md", "exec"), {"my_agent": lambda system, messages: prompts.append(system) or "Pasta, no peanuts."})
    assert len(prompts) == 2 and all("allergic to peanuts" in p for p in prompts)
    with Memory(milvus_uri=str(shared_db), collection_name=collection, embedder=embedder) as after:
        assert [r.text for r in after.get_all("alice")] == ["I am allergic to peanuts"]  # questions only: nothing new
