"""``python -m verityrag.eval --real-llm``: configuration errors and the per-attempt figures."""

from __future__ import annotations

from typing import Any

import pytest

from verityrag.eval.__main__ import main
from verityrag.eval.llm_eval import llm_metrics, reader_metrics

pytestmark = pytest.mark.unit


def test_real_llm_without_key_exits_2_naming_the_env_var(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    assert main(["--real-llm", "gemini", "--no-progress"]) == 2
    assert "GEMINI_API_KEY" in capsys.readouterr().err


def test_real_llm_unknown_provider_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--real-llm", "cohere"])
    assert exc.value.code == 2


@pytest.mark.parametrize("flag", ["--answerability", "--guard"])
def test_real_llm_refuses_learned_gate_flags_it_would_ignore(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--real-llm", "local", flag, "--no-progress"]) == 2
    assert "not supported with --real-llm" in capsys.readouterr().err


def test_real_llm_reader_without_a_reader_folder_names_the_command(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VERITYRAG_READER_DIR", str(tmp_path / "empty"))
    assert main(["--real-llm", "local", "--reader", "--no-progress", "--out", str(tmp_path / "r.json")]) == 2
    assert "make models-reader" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_reader_metrics_turn_low_scoring_answers_into_abstentions() -> None:
    def rec(kind: str, answered: bool, correct: bool, score: float | None) -> dict[str, Any]:
        return {
            "kind": kind,
            "gold_answers": ["x"] if kind == "answerable" else [],
            "answered": answered,
            "correct": correct,
            "reader_score": score,
        }

    records = [
        rec("answerable", True, True, 0.9),
        rec("answerable", True, True, 0.01),  # a right answer the reader disagrees with
        rec("answerable", True, False, 0.0),
        rec("unanswerable_in_domain", True, False, 0.5),
        rec("held_out", False, False, None),
    ]
    m = reader_metrics(records, threshold=0.05)
    assert m["answerable"] == 3
    assert m["without_reader"] == {
        "answered": 4,
        "answered_wrong": 2,
        "answerable_correct": 2,
        "answered_by_kind": {"answerable": 3, "unanswerable_in_domain": 1},
    }
    assert m["with_reader"] == {
        "answered": 2,
        "answered_wrong": 1,
        "answerable_correct": 1,
        "answered_by_kind": {"answerable": 1, "unanswerable_in_domain": 1},
    }


def _attempt(n: int, text: str, supported: bool, refused: bool = False) -> dict[str, Any]:
    return {
        "attempt": n,
        "text": text,
        "sentences": [] if refused else [{"text": text, "cites": [1], "chunk_ids": ["c"]}],
        "verdicts": [] if refused else [{"supported": supported}],
        "refused": refused,
        "accepted": supported,
        "generate_ms": 100.0,
        "prompt_tokens": 50,
        "completion_tokens": 10,
    }


def _record(
    kind: str, gold: list[str], attempts: list[dict[str, Any]], answered: bool, correct: bool
) -> dict[str, Any]:
    accepted = any(a["accepted"] for a in attempts)
    return {
        "kind": kind,
        "gold_answers": gold,
        "reached_llm": True,
        "answered": answered,
        "correct": correct,
        "latency_ms": 500.0,
        "llm": {
            "attempt_log": attempts,
            "accepted": accepted,
            "chosen_attempt": next((a["attempt"] for a in attempts if a["accepted"]), None),
            "abstain_reason": None if accepted else "rejected",
            "attempts": len(attempts),
        },
    }


def test_llm_metrics_counts_what_the_verifier_caught_at_each_attempt() -> None:
    records = [
        # wrong, caught; then right, passed
        _record(
            "answerable", ["1889"], [_attempt(1, "in 1912", False), _attempt(2, "in 1889", True)], True, True
        ),
        # wrong and passed (a miss)
        _record("answerable", ["Paris"], [_attempt(1, "in Lyon", True)], True, False),
        # right but rejected three times
        _record("answerable", ["Fuji"], [_attempt(k, "Fuji", False) for k in (1, 2, 3)], False, False),
        # an unanswerable question: any answer is wrong; caught
        _record("held_out", [], [_attempt(1, "Bob", False)], False, False),
    ]
    m = llm_metrics(records, 3)
    assert m["by_attempt"]["1"] == {
        "generated": 4,
        "passed_verifier": 1,
        "rejected": 3,
        "refused": 0,
        "uncited_sentences": 0,
        "wrong": 3,
        "wrong_caught": 2,
        "wrong_passed": 1,
        "correct_rejected": 1,
        "correct_passed": 0,
    }
    assert m["by_attempt"]["2"]["correct_passed"] == 1
    assert m["by_attempt"]["3"]["generated"] == 1
    assert m["accepted_at_attempt"] == {"1": 1, "2": 1}
    assert m["unverified_first_attempt"] == {
        "answered": 4,
        "wrong": 3,
        "answerable_correct": 1,
        "answerable": 3,
    }
    assert m["verified"] == {"answered": 2, "wrong": 1, "answerable_correct": 1}
    assert m["completion_tokens_per_second"] == pytest.approx(100.0)
