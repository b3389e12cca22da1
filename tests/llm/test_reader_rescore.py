"""scripts/reader_rescore_llm.py: recorded LLM answers re-scored by another reader check."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytestmark = pytest.mark.unit


class LengthReader:
    """Scores an answer 1.0 when it is longer than the evidence's first word, else 0.0; threshold 0.5."""

    threshold = 0.5
    model_dir = Path("stub")

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def warm_up(self) -> LengthReader:
        return self

    def score(self, question: str, evidence: str, answer: str) -> float:
        self.seen.append((question, evidence, answer))
        return float(len(answer) > len(evidence.split()[0]))


def _record(kind: str, answered: bool, correct: bool, answer: str, score: float | None) -> dict[str, Any]:
    evidence = [{"n": n, "text": f"chunk{n} text"} for n in range(1, 5)]
    return {
        "kind": kind,
        "question": f"q-{answer}",
        "gold_answers": ["x"] if kind == "answerable" else [],
        "answered": answered,
        "correct": correct,
        "answer": answer,
        "evidence": evidence,
        "reader_score": score,
    }


@pytest.fixture(scope="module")
def rr(load_script: Callable[[str], ModuleType]) -> ModuleType:
    return load_script("reader_rescore_llm")


def test_rescore_reads_the_top_three_chunks_and_counts_reproduced_scores(rr: ModuleType) -> None:
    records = [
        _record("answerable", True, True, "a long right answer", 1.0),  # reproduced
        _record("answerable", True, False, "no", 1.0),  # changes to 0.0
        _record("held_out", False, False, "", None),  # not answered: untouched
    ]
    reader = LengthReader()
    assert rr.rescore(records, reader) == 1
    assert [r["reader_score"] for r in records] == [1.0, 0.0, None]
    assert reader.seen[0] == (
        "q-a long right answer",
        "chunk1 text chunk2 text chunk3 text",
        "a long right answer",
    )


def test_main_rewrites_the_reader_section_and_the_answers(
    rr: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = [
        _record("answerable", True, True, "a long right answer", 0.0),
        _record("unanswerable_in_domain", True, False, "no", 1.0),
    ]
    answers = tmp_path / "answers.jsonl.gz"
    with gzip.open(answers, "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"reader": {"threshold": 0.1}}))
    monkeypatch.setattr(rr, "ReaderCheck", lambda folder: LengthReader())
    reader_dir = ["--reader-dir", str(tmp_path)]  # what the fake reads (else the settings' folder)
    assert rr.main(["--report", str(report), "--answers", str(answers), *reader_dir]) == 0
    section = json.loads(report.read_text())["reader"]
    assert section["threshold"] == 0.5
    assert section["without_reader"]["answered"] == 2
    assert section["with_reader"]["answered_by_kind"] == {"answerable": 1}
    assert section["rescored"]["recorded_scores_reproduced"] == 0
    with gzip.open(answers, "rt") as f:
        assert [json.loads(line)["reader_score"] for line in f] == [1.0, 0.0]


def test_main_refuses_a_report_run_without_the_reader(rr: ModuleType, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"metrics": {}}))
    with pytest.raises(SystemExit):
        rr.main(["--report", str(report), "--answers", str(tmp_path / "none.gz")])
