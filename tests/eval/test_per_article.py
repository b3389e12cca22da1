"""``python -m verityrag.eval --per-article``: each split_b article asked of a pipeline holding it alone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from verityrag import datasets
from verityrag.config import Settings
from verityrag.eval.__main__ import main
from verityrag.eval.per_article import (
    Article,
    ArticleQuestion,
    Outcome,
    article_titles,
    load_articles,
    run_per_article,
    summarise,
)


@pytest.mark.unit
def test_the_figures_count_right_answers_and_right_refusals() -> None:
    outcomes = [
        Outcome(answerable=True, answered=True, correct=True, reason=None, latency_ms=1.0, confidence=0.9),
        Outcome(answerable=True, answered=True, correct=False, reason=None, latency_ms=1.0, confidence=0.6),
        Outcome(True, answered=False, correct=False, reason="sufficiency", latency_ms=1.0, confidence=0.5),
        Outcome(False, answered=False, correct=False, reason="answerability", latency_ms=1.0, confidence=0.7),
        Outcome(answerable=False, answered=True, correct=False, reason=None, latency_ms=1.0, confidence=0.2),
    ]
    # right: the right answer and the refusal of the unanswerable question
    assert [o.right for o in outcomes] == [True, False, False, True, False]
    m = summarise(outcomes)
    assert m["coverage"] == pytest.approx(2 / 3)
    assert m["answered_and_correct"] == pytest.approx(1 / 3)
    assert m["unanswerable_abstention"] == pytest.approx(1 / 2)
    assert m["accuracy_of_all_answers"] == pytest.approx(1 / 3)  # one right of three answers given
    assert m["abstain_reasons"] == {"answerable": {"sufficiency": 1}, "unanswerable": {"answerability": 1}}


@pytest.mark.unit
def test_an_article_is_its_paragraphs_titled_as_the_article() -> None:
    article = Article("Steam_engine", ("First paragraph.", "Second one."), (ArticleQuestion("q?", ()),))
    docs = article.documents()
    assert [d.doc_id for d in docs] == ["Steam_engine-000", "Steam_engine-001"]
    assert {d.title for d in docs} == {"Steam engine"}
    odd = Article("Sky_(United_Kingdom)", ("Text.",), ()).documents()
    assert odd[0].doc_id == "Sky__United_Kingdom-000"


@pytest.mark.integration
def test_one_article_asked_of_a_fresh_pipeline(require_dataset: Callable[[str], Path]) -> None:
    require_dataset(datasets.SQUAD_V2_DEV)
    require_dataset(datasets.SQUAD_V2_SPLIT)
    article = load_articles(1)[0]
    assert article.title in datasets.load_json(datasets.SQUAD_V2_SPLIT)["split_b_titles"]
    assert any(not q.answers for q in article.questions)  # SQuAD 2.0's unanswerables are asked too
    report = run_per_article(Settings(), max_articles=1, max_questions=12, progress=False)
    assert report["metrics"]["questions"] == 12
    assert list(report["articles"]) == [article.title]
    assert report["settings"]["calibrated"] is False
    assert sum(b["n"] for b in report["confidence_calibration"]["bins"]) == 12


@pytest.mark.integration
def test_the_validation_articles_are_the_readers_and_never_split_b(
    require_dataset: Callable[[str], Path],
) -> None:
    require_dataset(datasets.SQUAD_V2_DEV)
    require_dataset(datasets.SQUAD_V2_SPLIT)
    validation = article_titles("validation")
    assert validation == ["Force", "French_and_Indian_War"]
    assert not set(validation) & set(article_titles("test"))


@pytest.mark.unit
def test_the_cli_refuses_options_it_would_ignore(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        main(["--per-article", "--max-test-questions", "5", "--out", str(tmp_path / "r.json")])
    assert "--per-article asks every question" in capsys.readouterr().err
    for options in (["--max-articles", "2"], ["--articles", "validation"]):
        with pytest.raises(SystemExit):
            main(options)
        assert "only apply with --per-article" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()
