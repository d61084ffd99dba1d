"""scripts/eval_qa.py end to end on a tiny LoCoMo-shaped file, the model and the judge scripted by
the local OpenAI-compatible stub from the prompts' content: the accuracy and token F1 the table must
show, a failed question counted (not a crash), --loop's rounds and recall calls, and the refusal
to run without an endpoint."""

from __future__ import annotations

import json
import re

import pytest

from scripts.eval_qa import normalise_answer, parse_verdict, select_questions, summarise, token_f1
from tests.openai_stub import Fault, OpenAIStub

SAMPLE = {
    "sample_id": "conv-q",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "Did you go anywhere last weekend?"},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Yes, I hiked up Mount Tamalpais with my sister."},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "I adopted a grey kitten called Pixel."},
        ],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "My new job at the bakery starts next Monday."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "Congratulations! Pixel says hi."},
        ],
    },
    "qa": [
        {"question": "Which mountain did Ben hike?", "answer": "Mount Tamalpais", "evidence": ["D1:2"], "category": 4},
        {"question": "What is the name of Ana's kitten?", "answer": "Pixel", "evidence": ["D:1:3"], "category": 1},
        {"question": "When did Ben start his new job?", "answer": "26 June 2023", "evidence": ["D2:1"], "category": 2},
        {"question": "What might Ben bake at work?", "answer": "bread", "evidence": ["D2:01"], "category": 3},
        {"question": "An adversarial one", "adversarial_answer": "no", "evidence": ["D1:1"], "category": 5},
        {"question": "Evidence of a missing turn", "answer": "x", "evidence": ["D9:9"], "category": 4},
    ],
}
ANSWERS = {  # what the scripted model answers: right, right in more words, a wrong date, unknown
    "Which mountain did Ben hike?": "Mount Tamalpais",
    "What is the name of Ana's kitten?": "A kitten named Pixel",
    "When did Ben start his new job?": "20 June 2023",
    "What might Ben bake at work?": "unknown",
}


class Script:
    """The stub's brain: answers by question, judges by whether the gold answer's words are in the answer,
    and plans recall (one need, then "I can answer")."""

    def __init__(self) -> None:
        self.kinds: list[str] = []
        self.answer_prompts: list[str] = []

    def __call__(self, body: dict) -> str:
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        if "RecallPlanner" in system:
            self.kinds.append("plan")
            if '"r1"' in user:
                return json.dumps({"can_answer": True, "need": "", "reason": "enough"})
            return json.dumps({"can_answer": False, "need": "what Ben and Ana said", "reason": "nothing yet"})
        if system.startswith("You grade"):
            self.kinds.append("judge")
            gold = re.search(r"Gold answer: (.*)", user).group(1)
            said = re.search(r"Generated answer: (.*)", user).group(1)
            return "CORRECT" if normalise_answer(gold) in normalise_answer(said) else "WRONG"
        self.kinds.append("answer")
        self.answer_prompts.append(user)
        return ANSWERS[re.search(r"Question: (.*)", user).group(1)]


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    from scripts.eval_qa import main

    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def total_row(out: str) -> list[str]:
    return next(line for line in out.splitlines() if line.startswith("total")).split()


# ------------------------------------------------------------------ pure parts
def test_token_f1_is_squad_style():
    assert normalise_answer("The Mount, Tamalpais!") == "mount tamalpais"
    assert token_f1("Mount Tamalpais", "mount tamalpais.") == 1.0
    assert token_f1("A kitten named Pixel", "Pixel") == pytest.approx(0.5)  # precision 1/3, recall 1
    assert token_f1("20 June 2023", "26 June 2023") == pytest.approx(2 / 3)
    assert token_f1("unknown", "bread") == 0.0 and token_f1("", "") == 1.0 and token_f1("the", "bread") == 0.0


def test_verdicts_and_the_deterministic_subset():
    assert parse_verdict("CORRECT.") is True and parse_verdict("Verdict: incorrect") is False
    assert parse_verdict("WRONG, the date differs") is False and parse_verdict("maybe") is None
    chosen, skipped = select_questions([SAMPLE], per_category=1, seed=3)
    assert skipped == 1 and [q["category"] for q in chosen] == ["4", "1", "2", "3"]  # file order; cat 5 never
    assert chosen[1]["evidence"] == ["D1:3"] and chosen[3]["evidence"] == ["D2:1"]
    two = select_questions([SAMPLE], questions=2, seed=7)[0]
    assert two == select_questions([SAMPLE], questions=2, seed=7)[0] and len(two) == 2


def test_a_failed_question_counts_as_wrong_and_zero_f1():
    rows = [{"category": "4", "correct": True, "f1": 1.0, "answer_s": 2.0, "evidence_in_prompt": 1.0},
            {"category": "4", "error": "LLMError: down", "f1": 0.0, "evidence_in_prompt": 1.0}]
    total = summarise(rows)["total"]
    assert total["judge acc"] == 0.5 and total["token F1"] == 0.5 and total["failed"] == 1 and total["answer s"] == 2.0


# ------------------------------------------------------------------ end to end
def test_the_table_shows_what_the_judge_and_f1_say_and_a_failed_question(data, tmp_path, capsys):
    script, out_json = Script(), tmp_path / "qa.json"
    with OpenAIStub(chat=script) as stub:
        stub.faults.append(Fault(status=400))  # the first request: question 1's answer fails, the run goes on
        code, out, err = run(capsys, "--data", str(data), "--base-url", stub.base_url, "--model", "stub-answerer",
                             "--json", str(out_json))
    assert code == 0 and "FAILED" in err and err.count("[") >= 4
    assert script.kinds.count("answer") == 3 and script.kinds.count("judge") == 2  # "unknown" needs no judge
    assert "[1:56 pm on 8 May, 2023] Ana: I adopted" in script.answer_prompts[0]  # the session's real date
    # 1 of 4 correct (failed, right, wrong date, unknown); F1 (0 + 0.5 + 2/3 + 0) / 4; 1 failed
    cells = total_row(out)
    assert cells[1:4] == ["4", "0.250", "0.292"] and cells[-2] == "1"
    assert "judge: stub-answerer" in out and "eval_qa.judge.v1 sha256:" in out and "(remote)" not in out
    assert "1 skipped: no usable evidence" in out
    report = json.loads(out_json.read_text(encoding="utf-8"))
    by_q = {r["question"]: r for r in report["rows"]}
    assert by_q["Which mountain did Ben hike?"]["error"].startswith("LLMError") and by_q["Which mountain did Ben hike?"]["f1"] == 0.0
    assert by_q["When did Ben start his new job?"]["correct"] is False and by_q["What might Ben bake at work?"]["judged_by"].startswith("rule")
    assert all(r["evidence_in_prompt"] == 1.0 for r in report["rows"])  # 5 turns all fit in the top 10
    assert report["summary"]["2"]["judge acc"] == 0.0 and report["summary"]["1"]["token F1"] == 0.5
    assert report["summary"]["1"]["judge acc"] == 1.0 and report["summary"]["4"]["failed"] == 1
    assert report["meta"]["judge_model"] == "stub-answerer" and report["meta"]["model"] == "stub-answerer"


def test_loop_records_rounds_and_recall_calls(data, tmp_path, capsys):
    script, out_json = Script(), tmp_path / "loop.json"
    with OpenAIStub(chat=script) as stub:
        code, out, _ = run(capsys, "--data", str(data), "--base-url", stub.base_url, "--model", "m", "--loop",
                           "--categories", "4,2", "--judge-base-url", stub.base_url, "--judge-model", "judge-m", "--json", str(out_json))
    assert code == 0 and script.kinds.count("plan") == 4  # two rounds a question
    loop = json.loads(out_json.read_text(encoding="utf-8"))["meta"]["loop"]
    assert loop["avg_rounds"] == 2.0 and loop["avg_recall_calls"] == 1.0 and loop["avg_planner_calls"] == 2.0
    assert "2.00 rounds, 1.00 recall calls" in out and "judge: judge-m" in out
    assert total_row(out)[1:3] == ["2", "0.500"]


def test_no_endpoint_is_refused_but_retrieval_only_runs(data, capsys):
    with pytest.raises(SystemExit) as refused:
        run(capsys, "--data", str(data))
    assert refused.value.code == 2 and "no offline answerer" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run(capsys, "--data", str(data), "--retrieval-only", "--loop")
    assert "--loop asks the answering model" in capsys.readouterr().err
    code, out, _ = run(capsys, "--data", str(data), "--retrieval-only")
    assert code == 0 and "retrieval only" in out and "judge acc" not in out and total_row(out)[1:3] == ["4", "1.000"]
