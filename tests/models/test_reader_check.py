"""The reader check's scoring rule and its errors (no model: spans are given)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from verityrag.checks.reader_check import ReaderCheck, reader_agreement
from verityrag.config import Settings
from verityrag.errors import InvalidInputError
from verityrag.models.folder import ModelFilesMissingError
from verityrag.models.span_reader import ReaderSpan, best_spans

pytestmark = pytest.mark.unit


def _span(text: str, probability: float) -> ReaderSpan:
    return ReaderSpan(text, 0, len(text), 0.0, probability)


def test_agreement_sums_the_probability_of_spans_the_answer_contains() -> None:
    spans = [_span("Frédéric Chopin", 0.6), _span("1810", 0.3), _span("Warsaw", 0.1)]
    assert reader_agreement(spans, "It was Frédéric Chopin, in 1810.") == pytest.approx(0.9)
    assert reader_agreement(spans, "the composer was born in Warsaw") == pytest.approx(0.1)
    assert reader_agreement(spans, "Liszt") == 0.0
    assert reader_agreement([], "anything") == 0.0


def test_agreement_matches_whole_normalised_tokens_only() -> None:
    spans = [_span("The Beatles", 0.5), _span("10", 0.5)]
    assert reader_agreement(spans, "beatles!") == pytest.approx(0.5)  # articles, case, punctuation
    assert reader_agreement(spans, "in 2010") == 0.0  # "10" is not a token of "2010"


def test_best_spans_stay_inside_the_evidence_and_the_length_limit() -> None:
    start = np.array([9.0, 1.0, 0.0, 3.0, 9.0], dtype=np.float32)  # 9s: outside [first, last]
    end = np.array([9.0, 0.0, 4.0, 1.0, 9.0], dtype=np.float32)
    spans = best_spans(start, end, first=1, last=3, k=10)
    assert spans[0] == (1, 2, 5.0)
    assert all(1 <= i <= j <= 3 for i, j, _ in spans)
    assert len(spans) == 6  # every (i <= j) pair of three tokens
    assert [s for _, _, s in spans] == sorted((s for _, _, s in spans), reverse=True)
    assert all(j - i < 1 for i, j, _ in best_spans(start, end, 1, 3, k=10, max_answer_tokens=1))
    assert best_spans(start, end, first=3, last=2, k=5) == []


def test_missing_reader_names_the_files_and_the_command(tmp_path: Path) -> None:
    with pytest.raises(ModelFilesMissingError, match="make models-reader") as err:
        ReaderCheck(tmp_path / "none").warm_up()
    assert "metadata.json" in err.value.missing


def test_reader_dir_comes_from_the_settings_an_entry_point_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERITYRAG_READER_DIR", str(tmp_path))
    assert ReaderCheck.from_settings(Settings.from_env()).model_dir == tmp_path
    assert ReaderCheck().model_dir != tmp_path  # the constructor reads no variable
    assert ReaderCheck.folder(Settings(reader_check_dir=str(tmp_path))) == tmp_path


def test_bad_input_is_refused_before_any_model_loads(tmp_path: Path) -> None:
    check = ReaderCheck(tmp_path / "none", threshold=0.2)
    with pytest.raises(InvalidInputError, match="answer"):
        check.score("Who?", "Some evidence.", "  ")
    with pytest.raises(InvalidInputError, match="question"):
        check.score("", "Some evidence.", "An answer.")
    with pytest.raises(InvalidInputError, match="threshold"):
        check.threshold = 1.5
    with pytest.raises(InvalidInputError, match="top_k"):
        ReaderCheck(tmp_path, top_k=0)


def test_without_a_reader_check_model_the_check_reads_with_the_shipped_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from verityrag.checks import reader_check

    monkeypatch.setattr(reader_check, "DEFAULT_READER_DIR", tmp_path / "not-built")
    check = ReaderCheck()
    assert check.model_dir == reader_check.SHIPPED_READER_DIR
    # Its folder records the reader's answer threshold, not an agreement one.
    assert check.reader.metadata.threshold != reader_check.EXTRACTIVE_READER_AGREEMENT
    assert check.threshold == reader_check.EXTRACTIVE_READER_AGREEMENT
    built = tmp_path / "built"
    built.mkdir()
    (built / "metadata.json").write_text("{}")
    monkeypatch.setattr(reader_check, "DEFAULT_READER_DIR", built)
    assert ReaderCheck().model_dir == built  # a built reader-check model comes first
    # Under the models root the settings name: its reader_check when built, else the shipped reader.
    root = tmp_path / "models"
    assert ReaderCheck.folder(Settings(models_dir=str(root))) == reader_check.SHIPPED_READER_DIR
    (root / "reader_check").mkdir(parents=True)
    (root / "reader_check" / "metadata.json").write_text("{}")
    assert ReaderCheck.folder(Settings(models_dir=str(root))) == root / "reader_check"


def test_llm_answers_turn_the_reader_check_on_unless_settings_say_not() -> None:
    from verityrag.checks.registry import requested_checks
    from verityrag.config import Settings

    assert requested_checks(Settings()) == {}
    assert requested_checks(Settings(), llm_answers=True) == {"reader": None}
    assert requested_checks(Settings(llm_reader_check=False), llm_answers=True) == {}
    assert requested_checks(Settings(reader_check=True, reader_threshold=0.3)) == {"reader": 0.3}
