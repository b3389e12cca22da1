"""The checks scored on recorded LLM answers (verityrag.eval.llm_checks): labels, thresholds, stacks,
the LLM path with a check added, strictness levels, and the command on a recorded file."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from verityrag.eval import llm_checks_cli
from verityrag.eval.llm_checks import (
    Check,
    LabelledAnswer,
    cross_fitted_thresholds,
    final_answers,
    first_attempts,
    grounding_check,
    score_checks,
    strictness_table,
)
from verityrag.eval.llm_checks_table import llm_checks_detail, llm_checks_summary

pytestmark = pytest.mark.unit

EVIDENCE = [
    {"n": 1, "chunk_id": "c1", "title": "Eiffel Tower", "text": "The tower was finished in 1889 in Paris."},
    {"n": 2, "chunk_id": "c2", "title": "Lyon", "text": "Lyon lies on the Rhone."},
]


def _ids(parity: int, count: int) -> list[str]:
    """Question ids whose cross-fitting fold is ``parity``."""
    found = []
    n = 0
    while len(found) < count:
        qid = f"q{n}"
        if hashlib.sha1(qid.encode()).digest()[0] & 1 == parity:
            found.append(qid)
        n += 1
    return found


def _attempt(
    k: int, sentences: Sequence[tuple[str, float]], accepted: bool, dropped: Sequence[str] = ()
) -> dict[str, Any]:
    return {
        "attempt": k,
        "refused": False,
        "accepted": accepted,
        "unsupported_claims": list(dropped),
        "sentences": [{"text": t, "cites": [1], "chunk_ids": ["c1"]} for t, _ in sentences],
        "verdicts": [{"sentence": t, "score": s, "supported": s >= 0.5} for t, s in sentences],
    }


def _record(
    qid: str,
    gold: list[str],
    attempts: list[dict[str, Any]],
    kind: str = "answerable",
    correct: bool | None = None,
) -> dict[str, Any]:
    chosen = next((a for a in attempts if a["accepted"]), None)
    answer = (
        " ".join(s["text"] for s in chosen["sentences"] if s["text"] not in chosen["unsupported_claims"])
        if chosen
        else None
    )
    return {
        "id": qid,
        "kind": kind,
        "question": "When was the tower finished?",
        "gold_answers": gold,
        "answered": chosen is not None,
        "answer": answer,
        "correct": bool(correct) if correct is not None else False,
        "latency_ms": 1000.0,
        "reached_llm": True,
        "evidence": EVIDENCE,
        "llm": {
            "attempt_log": attempts,
            "chosen_attempt": chosen["attempt"] if chosen else None,
            "accepted": chosen is not None,
        },
    }


def _records() -> list[dict[str, Any]]:
    """Eight questions over both folds: four right first answers, four wrong (one unanswerable)."""
    ids = _ids(0, 4) + _ids(1, 4)
    right = [
        _record(q, ["1889"], [_attempt(1, [("It was finished in 1889.", 0.9)], True)], correct=True)
        for q in ids[::2]
    ]
    wrong = [
        _record(ids[1], ["1889"], [_attempt(1, [("It was finished in 1912.", 0.4)], True)]),
        _record(ids[3], ["1889"], [_attempt(1, [("Lyon lies on the Rhone.", 0.95)], True)]),
        _record(
            ids[5],
            [],
            [_attempt(1, [("It was finished in 1889.", 0.9)], True)],
            kind="unanswerable_in_domain",
        ),
        _record(ids[7], ["1889"], [_attempt(1, [("In 1700.", 0.2)], False)]),
    ]
    return right + wrong


def _by_label(scores: dict[str, float]) -> Check:
    """A check that scores by the answer text (a stand-in for a model)."""
    return Check("by-text", lambda answers: [scores.get(a.text, 0.0) for a in answers], 0.5, "fixed")


def test_first_attempts_labels_right_and_wrong_answers() -> None:
    answers = first_attempts(_records())
    assert len(answers) == 8
    assert sum(a.right for a in answers) == 4
    unanswerable = next(a for a in answers if a.kind == "unanswerable_in_domain")
    assert not unanswerable.right  # a gold-looking answer to an unanswerable question is still wrong
    assert all(a.cited == EVIDENCE[0]["text"] for a in answers)  # the cited chunk, not all given ones


def test_a_refused_first_attempt_is_not_an_answer() -> None:
    refused = _attempt(1, [("I cannot answer.", 0.0)], False)
    refused["refused"] = True
    records = [_record("r", ["1889"], [refused, _attempt(2, [("In 1889.", 0.9)], True)], correct=True)]
    assert first_attempts(records) == []


def test_cross_fitted_threshold_of_a_fold_comes_from_the_other_fold() -> None:
    def answer(qid: str, right: bool) -> LabelledAnswer:
        return LabelledAnswer(qid, "answerable", "q", "a", ("a",), (1.0,), "e", "e", right, ("a",))

    zero, one = _ids(0, 10), _ids(1, 10)
    answers = [answer(q, True) for q in zero + one]
    scores = [0.1 * i for i in range(10)] + [10.0 + i for i in range(10)]
    t = cross_fitted_thresholds(scores, answers, budget=0.2)
    assert t[0] == 12.0  # fold 1's right scores 10..19: two of ten may fall below
    assert t[1] == pytest.approx(0.2)


def test_score_checks_rows_for_each_check_and_stack_with_the_llm_path() -> None:
    records = _records()
    perfect = _by_label({"It was finished in 1889.": 1.0})  # right answers, and the unanswerable one
    result = score_checks(records, [grounding_check("balanced"), perfect], max_stack=2)
    assert result["first_attempts"] == 8
    assert result["right"] == 4
    rows = {tuple(r["checks"]): r for r in result["rows"]}
    assert set(rows) == {("grounding",), ("by-text",), ("grounding", "by-text")}
    g = rows[("grounding",)]
    assert g["own"]["wrong_caught"] == 2
    assert g["own"]["right_rejected"] == 0
    assert 0.5 < g["auroc"] < 1.0
    p = rows[("by-text",)]["own"]
    assert (p["wrong_caught"], p["right_rejected"]) == (3, 0)  # misses only the unanswerable one
    stack = rows[("grounding", "by-text")]["own"]
    assert (stack["wrong_caught"], stack["right_rejected"]) == (3, 0)
    # The path answered seven (the 1700 answer was rejected); with the text check, five remain.
    assert result["llm_path_without_checks"]["answered"] == 7
    assert result["llm_path_without_checks"]["accuracy_of_all_answers"] == pytest.approx(4 / 7)
    path = rows[("by-text",)]["own"]["llm_path"]
    assert path["answered"] == 5
    assert path["answered_wrong"] == 1
    assert path["accuracy_of_all_answers"] == pytest.approx(4 / 5)


def test_score_checks_needs_right_and_wrong_answers() -> None:
    records = [r for r in _records() if r["correct"]]
    with pytest.raises(ValueError, match="both right and wrong"):
        score_checks(records, [grounding_check("balanced")])


def test_final_answers_hold_only_the_delivered_sentences() -> None:
    attempt = _attempt(
        1,
        [("Lyon lies on the Rhone.", 0.1), ("It was finished in 1889.", 0.9)],
        True,
        dropped=["Lyon lies on the Rhone."],
    )
    ((record, answer),) = final_answers([_record("d", ["1889"], [attempt], correct=True)])
    assert answer.sentences == ("It was finished in 1889.",)
    assert answer.sentence_scores == (0.9,)
    assert answer.right
    assert record["id"] == "d"


def test_strictness_table_counts_dropped_sentences_and_lost_gold() -> None:
    # A right answer whose gold sentence scores 0.6: kept at balanced (0.5), dropped at strict (0.7),
    # where the rest is still 80% of the answer's characters, so it stands without its gold.
    answer = LabelledAnswer(
        "x",
        "answerable",
        "q",
        "The tower stands on the Champ de Mars in Paris, beside the river Seine. In 1889.",
        ("The tower stands on the Champ de Mars in Paris, beside the river Seine.", "In 1889."),
        (0.95, 0.6),
        "e",
        "e",
        True,
        ("1889",),
    )
    table = strictness_table([answer])
    assert table["loose"]["sentences_dropped"] == 0
    assert table["loose"]["right_whole"] == 1
    assert table["balanced"]["right_whole"] == 1
    assert table["strict"]["sentences_dropped"] == 1
    assert table["strict"]["right_lost_gold"] == 1  # trimmed to the first sentence, which does not answer
    assert table["paranoid"]["right_refused"] == 1  # any unsupported sentence refuses


def test_the_command_scores_a_recorded_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in _records()), encoding="utf-8")
    monkeypatch.setattr(
        llm_checks_cli,
        "available_checks",
        lambda strictness: ([grounding_check(strictness)], ["guard: missing"]),
    )
    out = tmp_path / "out.json"
    assert (
        llm_checks_cli.main(
            ["--answers", str(answers), "--report", str(tmp_path / "none.json"), "--out", str(out)]
        )
        == 0
    )
    result = json.loads(out.read_text())
    assert result["first_attempts"] == 8
    assert result["skipped"] == ["guard: missing"]
    assert set(result["strictness_levels"]) == {"loose", "balanced", "strict", "paranoid"}
    assert result["latency"]["per_llm_question_ms"]["p50"] == 1000.0
    assert "grounding" in capsys.readouterr().out


def test_the_command_names_a_missing_answer_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert llm_checks_cli.main(["--answers", str(tmp_path / "nope.jsonl")]) == 2
    assert "make eval-llm" in capsys.readouterr().err


def test_the_tables_show_every_check_the_path_and_each_strictness_level() -> None:
    records = _records()
    checks = [grounding_check("balanced"), _by_label({"It was finished in 1889.": 1.0})]
    data = {
        **score_checks(records, checks, max_stack=2),
        "model": "tiny",
        "date": "today",
        "test_questions": len(records),
        "strictness": "balanced",
        "skipped": ["guard: missing metadata.json"],
        "strictness_levels": strictness_table(first_attempts(records)),
        "latency": {"per_llm_question_ms": {"p50": 1000.0, "p95": 3000.0}},
        "extractive_path": {"accuracy_of_all_answers": 0.59, "latency_ms": {"p50": 24.0, "p95": 30.0}},
    }
    summary = llm_checks_summary(data)
    assert "| grounding (0.50) |" in summary
    assert "| by-text (0.50) |" in summary
    assert "| none (the path as run: grounding at balanced) | - | - | - | 7 / 3 / 57% |" in summary
    assert "p50 1.0 s, p95 3.0 s; the extractive path: accuracy of all answers 59%" in summary
    detail = llm_checks_detail(data)
    assert "| grounding + by-text |" in detail
    assert all(f"| {level} |" in detail for level in ("loose", "balanced", "strict", "paranoid"))
    assert "Skipped, for want of their model: guard." in detail
