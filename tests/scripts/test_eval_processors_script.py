"""scripts/eval_processors.py: the labelled sets (sizes, kinds, splits, must_keep facts that the
sources really state), --split, the metrics of each section, and the same evaluation code run
against a local OpenAI-compatible stub that behaves like llama-cpp-python's server (--local)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from hippocampus.testing import ScriptedChatModel
from scripts import local_llm
from scripts.eval_common import keeps, lost, prompts_dir
from scripts.eval_processors import SECTIONS, eval_reconsolidator, load_cases, load_plugins, main
from scripts.eval_write import HARD_KINDS
from tests.openai_stub import OpenAIStub

DATA = Path(__file__).resolve().parents[1] / "data"
load_plugins()


def cases(name: str, split: str = "all") -> list[dict]:
    return load_cases(DATA, SECTIONS[name], None, split)


def halves_balanced(rows: list[dict], key) -> None:
    """Every group (a kind, a label) has rows in both halves, and the halves differ by at most one
    row per group plus a little overall (a later held-out set, "held_out_2", is checked on its own)."""
    rows = [r for r in rows if r["split"] in ("tune", "held_out")]
    by_group = Counter((key(r), r["split"]) for r in rows)
    for group in {key(r) for r in rows}:
        tune, held = by_group[(group, "tune")], by_group[(group, "held_out")]
        assert tune and held and abs(tune - held) <= 2, (group, tune, held)
    halves = Counter(r["split"] for r in rows)
    assert set(halves) == {"tune", "held_out"} and abs(halves["tune"] - halves["held_out"]) <= 0.1 * len(rows)


# ------------------------------------------------------------------ the sets
def test_write_set_is_bilingual_split_and_half_hard():
    rows = cases("write_decider")
    assert len(rows) >= 80 and len({r["id"] for r in rows}) == len(rows)
    assert {r["lang"] for r in rows} == {"zh", "en"}
    hard = [r for r in rows if r["kind"] in HARD_KINDS]
    assert len(hard) >= len(rows) / 2 and {r["kind"] for r in hard} == HARD_KINDS
    labels = {kind: {r["write_episodic"] for r in rows if r["kind"] == kind} for kind in {r["kind"] for r in rows}}
    assert all(len(v) == 1 for v in labels.values()), labels  # a kind says the label
    assert labels["personal_question"] == {True} and labels["life_event"] == {True} and labels["request"] == {False}
    halves_balanced(rows, lambda r: r["kind"])
    halves_balanced(rows, lambda r: (r["write_episodic"], r["lang"]))


def test_second_write_held_out_set_is_balanced_and_new():
    """held_out_2: 80 turns written after the first held-out half was read; both labels, both
    languages, half of them hard, and no text that the first two halves already hold."""
    rows, older = cases("write_decider", "held_out_2"), [r for r in cases("write_decider") if r["split"] != "held_out_2"]
    assert len(rows) == 80 and Counter(r["write_episodic"] for r in rows) == {True: 40, False: 40}
    assert Counter(r["lang"] for r in rows)["zh"] >= 30 and Counter(r["lang"] for r in rows)["en"] >= 30
    assert sum(r["kind"] in HARD_KINDS for r in rows) >= 40
    text = lambda r: " ".join(t["content"] for t in r["turns"])  # noqa: E731
    assert not {text(r) for r in rows} & {text(r) for r in older}


def test_merge_set_has_duplicates_look_alikes_and_facts_the_sources_state():
    rows = cases("merge_separate")
    kinds = Counter(r["kind"] for r in rows)
    assert len(rows) >= 40 and kinds["duplicate"] >= 8 and kinds["look_alike"] >= 8 and kinds["unrelated"] >= 3
    assert all(r["same_event"] is (r["kind"] == "duplicate") for r in rows)
    for r in rows:
        assert r["must_keep"], r["id"]
        for item in r["must_keep"]:  # each fact is stated by one of the two memories
            assert keeps(r["a"]["text"], item) or keeps(r["b"]["text"], item), (r["id"], item)
    halves_balanced(rows, lambda r: r["kind"])


def test_reconsolidation_set_facts_are_in_the_memory_and_news_in_the_conversation():
    rows = cases("reconsolidator")
    assert len(rows) >= 30 and {r["lang"] for r in rows} == {"zh", "en"}
    for r in rows:
        assert all(keeps(r["memory"]["text"], item) for item in r["must_keep"]), r["id"]
        assert all(keeps(r["conversation"], item) for item in r.get("expect", [])), r["id"]
        assert bool(r["expect"]) is r["changed"] is (r["kind"] in ("update", "correction")), r["id"]
    halves_balanced(rows, lambda r: r["kind"])


def test_split_picks_one_half_before_the_limit():
    section = SECTIONS["write_decider"]
    tune, held, held2 = (load_cases(DATA, section, None, s) for s in ("tune", "held_out", "held_out_2"))
    assert {r["split"] for r in tune} == {"tune"} and {r["split"] for r in held} == {"held_out"}
    assert {r["split"] for r in held2} == {"held_out_2"}
    assert len(tune) + len(held) + len(held2) == len(cases("write_decider"))
    limited = load_cases(DATA, section, 10, "held_out")
    assert len(limited) == 10 and all(r in held for r in limited)
    with pytest.raises(ValueError):
        load_cases(DATA, section, None, "test")


def test_keeps_accepts_other_spellings_of_the_same_fact():
    assert keeps("Rent is now 2150 dollars", "$2,150") and keeps("flying out 12 May", "May 12")
    assert keeps("跑了四小时", ["4小时", "四小时"]) and not keeps("跑了三小时", ["4小时", "四小时"])
    assert not keeps("Dinner with colleagues", "parents")
    assert lost("Interview on Thursday at 10am", ["Google", ["10am", "10:00"], "Thursday"]) == ["Google"]


# ------------------------------------------------------------------ the metrics
def test_reconsolidation_counts_facts_a_rewrite_drops():
    case = {"id": "x", "lang": "en", "kind": "correction", "changed": True, "expect": ["Thursday"], "must_keep": ["Google", "second round"],
            "memory": {"text": "Interview at Google on Wednesday, second round", "time": "2026-03-01T10:00:00+00:00"},
            "conversation": "user: the Google interview moved to Thursday"}
    reply = json.dumps({"changed": True, "text": "Interview at Google on Thursday", "update_desc": "moved"})
    out = eval_reconsolidator(ScriptedChatModel(default=reply), [case])
    assert out["accuracy"] == 1.0 and out["rewrites"] == 1 and out["facts_lost"] == 1 and out["facts_kept"] == 0.5


def test_merge_section_counts_wrong_merges_and_lost_facts():
    evaluate = SECTIONS["merge_separate"].evaluate
    dup = {"id": "d", "lang": "en", "kind": "duplicate", "same_event": True, "must_keep": ["Boston", "3:40", "knee", "happily"],
           "a": {"text": "I ran the Boston marathon in 3:40 happily", "time": "2026-03-03T15:00:00+00:00", "chat_id": "c6"},
           "b": {"text": "Ran the Boston marathon, finished in 3:40, my knees hurt", "time": "2026-03-03T15:20:00+00:00", "chat_id": "c6"}}
    alike = {"id": "l", "lang": "en", "kind": "look_alike", "same_event": False, "must_keep": ["March 3", "March 10"],
             "a": {"text": "Dentist on March 3: cleaning", "time": "2026-03-03T10:00:00+00:00", "chat_id": "c1"},
             "b": {"text": "Dentist on March 10: filling", "time": "2026-03-10T10:00:00+00:00", "chat_id": "c2"}}

    # merges everything with memory A's words; the separation drops B's date
    replies = {"MergeResult": lambda inputs: json.dumps({"same_event": True, "text": inputs["memory_a"]["text"]}),
               "SeparationResult": lambda inputs: json.dumps({"text_a": inputs["memory_a"]["text"], "text_b": "Dentist: filling"})}
    out = evaluate(ScriptedChatModel(replies=replies), [dup, alike])
    assert out["merges_found"] == out["duplicates"] == 1 and out["wrong_merges"] == 1 and out["accuracy"] == 0.5
    # the guard's union (B, the longer, plus A's clauses with a fact B lacks) kept "my knees" (an
    # English noun); A's "happily" is no fact to the guard and is lost
    assert out["facts_lost"] == 1 and out["facts_kept"] == pytest.approx(3 / 4)
    assert out["separation_facts_lost"] == 0  # the separator's guard put "March 10" back


def test_offline_held_out_run_reports_every_section(tmp_path, capsys):
    out = tmp_path / "eval.json"
    assert main(["--split", "held_out", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "offline rules provider" in printed and "split: held_out" in printed
    report = json.loads(out.read_text())
    assert report["split"] == "held_out" and report["connection"]["source"] == "offline"
    rules = report["results"]["rules"]
    for name in ("write_decider", "reconsolidator", "semantic_writer", "merge_separate"):
        assert rules[name]["cases"] == len(cases(name, "held_out")) and rules[name]["errors"] == 0
        assert rules[name]["seconds_per_call"] >= 0 and rules[name]["valid_json_rate"] != rules[name]["valid_json_rate"]  # n/a
    wd = rules["write_decider"]
    assert 0 < wd["model_calls_per_turn"] < 1 and wd["gate_right"] == wd["gate_decided"]
    merges = rules["merge_separate"]
    assert merges["duplicates"] == sum(c["same_event"] for c in cases("merge_separate", "held_out"))
    assert merges["wrong_merges"] == 0 and merges["facts_lost"] == 0 and merges["separation_facts_lost"] == 0


# ------------------------------------------------------------------ the same code against a llama-cpp-like stub (--local)
def _blocks(text: str) -> list:
    out = []
    for raw in re.findall(r"<data>\n(.*?)\n</data>", text, re.S):
        try:
            out.append(json.loads(raw))
        except ValueError:
            out.append(raw)
    return out


class Responder:
    """A model that stores every turn, merges every pair with memory A's text alone (losing B's
    facts), keeps memories word for word, and answers every 7th request with prose."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, body: dict) -> str:
        self.n += 1
        if self.n % 7 == 0:
            return "Sure! Here is what I think about it."
        fmt = body.get("response_format") or {}
        title = (fmt.get("schema") or fmt.get("json_schema", {}).get("schema") or {}).get("title", "")
        data = [b for b in _blocks(body["messages"][-1]["content"]) if isinstance(b, dict)]
        if title == "WriteDecision":
            return json.dumps({"write_episodic": True, "thing": "stub", "reason": "stores everything"})
        if title == "MergeResult":
            return json.dumps({"same_event": True, "text": data[0]["text"], "reason": "same"})
        if title == "SeparationResult":
            return json.dumps({"text_a": data[0]["text"], "text_b": data[1]["text"]})
        if title == "ReconsolidationResult":
            memory = next(b for b in data if "text" in b)
            return json.dumps({"changed": True, "text": memory["text"], "update_desc": "seen again"})
        return json.dumps({"facts": []})


def test_local_run_against_a_llama_cpp_like_stub(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HIPPOCAMPUS_HOME", str(tmp_path))
    with OpenAIStub(chat=Responder(), refuse_formats={"json_schema"}) as stub:
        local_llm.write_state({"url": stub.base_url, "model": "stub-model", "threads": 2, "pid": 0})
        out = tmp_path / "eval.json"
        assert main(["--local", "--split", "held_out", "--limit", "12", "--no-rules", "--retry-delay", "0", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"server: {stub.base_url}" in printed and "threads: 2" in printed and "model: stub-model" in printed
    report = json.loads(out.read_text())
    conn = report["connection"]
    assert conn["base_url"] == stub.base_url and conn["threads"] == 2 and conn["negotiated_format"] == "json_object_schema"
    got = report["results"]["stub-model"]
    for name in ("write_decider", "reconsolidator", "semantic_writer", "merge_separate"):
        assert got[name]["errors"] == 0 and 0.6 < got[name]["valid_json_rate"] < 1.0, (name, got[name]["valid_json_rate"])
        assert got[name]["seconds_per_call"] > 0 and got[name]["llm_requests"] > got[name]["model_calls"]
    wd = got["write_decider"]
    assert wd["recall"] == 1.0 and wd["gated_accuracy"] > wd["accuracy"] + 0.2
    assert wd["model_calls_per_turn"] == pytest.approx(1 - wd["gate_decided"] / wd["cases"])
    merges, held = got["merge_separate"], load_cases(DATA, SECTIONS["merge_separate"], 12, "held_out")
    assert merges["merges_found"] == merges["duplicates"] == sum(c["same_event"] for c in held)
    assert merges["wrong_merges"] == sum(not c["same_event"] for c in held)
    # the facts guard joined most of what the model dropped; what it does not count as a fact can still go
    duplicate_facts = sum(len(c["must_keep"]) for c in held if c["same_event"])
    assert merges["guard_stepped_in"] >= 1 and merges["facts_lost"] < duplicate_facts / 4
    assert merges["facts_kept"] == pytest.approx(1 - merges["facts_lost"] / duplicate_facts)
    rec = got["reconsolidator"]
    assert rec["rewrites"] == rec["cases"] and rec["facts_lost"] == 0 and rec["facts_kept"] == 1.0


def test_local_without_a_recorded_server_says_how_to_start_one(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HIPPOCAMPUS_HOME", str(tmp_path))
    with pytest.raises(SystemExit):
        main(["--local"])
    assert "local_llm.py serve" in capsys.readouterr().err


def test_prompts_dir_replaces_the_packaged_prompt_of_its_name(tmp_path, capsys):
    """--prompts-dir: the write decider's requests carry the folder's prompt (a marker in its system
    text), the report names the overridden prompts, and a folder that is not there is refused."""
    from hippocampus.processors.base import packaged_prompts

    folder = tmp_path / "prompts"
    folder.mkdir()
    packaged = (packaged_prompts() / "write_decider.yaml").read_text(encoding="utf-8")
    (folder / "write_decider.yaml").write_text(packaged.replace("system: |\n", "system: |\n  MARKER-7Q: tuned copy.\n", 1),
                                               encoding="utf-8")
    out = tmp_path / "eval.json"
    with OpenAIStub(chat=Responder()) as stub:
        args = ["--base-url", stub.base_url, "--model", "stub-model", "--only", "write_decider", "--limit", "4",
                "--no-rules", "--retry-delay", "0", "--prompts-dir", str(folder), "--json", str(out)]
        assert main(args) == 0
        systems = [m["content"] for _, body in stub.requests for m in body.get("messages", []) if m["role"] == "system"]
    assert systems and all("MARKER-7Q" in s for s in systems)
    report = json.loads(out.read_text())
    assert report["prompts_overridden"] == ["write_decider"] and report["prompts_dir"] == str(folder)
    assert "prompts from" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--only", "write_decider", "--prompts-dir", str(tmp_path / "missing")])
    assert main(["--only", "write_decider", "--limit", "2"]) == 0
    assert prompts_dir() is None  # the next run reads the packaged prompts again
