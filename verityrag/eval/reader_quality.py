"""The reader on its own: SQuAD EM / F1 with the gold paragraph given, and answerability.

- ``squad11``: SQuAD 1.1 dev with each question's own paragraph, the best span taken whatever
  the no-answer score (the standard SQuAD 1.1 protocol). Articles of SQuAD 2.0 dev ``split_a``
  are left out: their questions are SQuAD 1.1 dev questions verbatim and the reader trains on them.
- ``answerability``: SQuAD 2.0 questions (answerable and not) with their paragraph; AUROC of the
  reader's answer probability, and the SQuAD 2.0 EM / F1 with "no answer" when it is below a
  threshold (``threshold`` given, or the best one found on these questions, said so).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from verityrag.eval.metrics import auroc, exact_match, max_token_f1
from verityrag.models.span_reader import ReaderResult, SpanReader


@dataclass(frozen=True, slots=True)
class ReaderQuestion:
    question: str
    context: str
    golds: tuple[str, ...]  # empty: no answer
    title: str


def squad_questions(
    articles: Sequence[dict[str, Any]], titles: set[str] | None = None
) -> list[ReaderQuestion]:
    """Every question of ``articles`` (only those titled ``titles`` when given) with its paragraph."""
    return [
        ReaderQuestion(
            qa["question"], p["context"], tuple(dict.fromkeys(a["text"] for a in qa["answers"])), a["title"]
        )
        for a in articles
        if titles is None or a["title"] in titles
        for p in a["paragraphs"]
        for qa in p["qas"]
    ]


def read_all(reader: SpanReader, questions: Sequence[ReaderQuestion], batch: int = 16) -> list[ReaderResult]:
    """The reader's result for every question, batch by batch, with a progress bar."""
    out: list[ReaderResult] = []
    for b in tqdm(range(0, len(questions), batch), desc="reader eval", unit="batch", mininterval=10):
        out += reader.read_batch([(q.question, q.context) for q in questions[b : b + batch]], k=1)
    return out


def span_scores(questions: Sequence[ReaderQuestion], results: Sequence[ReaderResult]) -> dict[str, float]:
    """EM and F1 (percent) of the best span over the answerable questions, no-answer score ignored."""
    em, f1 = [], []
    for q, r in zip(questions, results, strict=True):
        if q.golds:
            text = r.best.text if r.best else ""
            em.append(exact_match(text, q.golds))
            f1.append(max_token_f1(text, q.golds))
    return {"questions": len(em), "exact_match": 100 * float(np.mean(em)), "f1": 100 * float(np.mean(f1))}


def squad2_scores(
    questions: Sequence[ReaderQuestion], results: Sequence[ReaderResult], threshold: float
) -> dict[str, float]:
    """SQuAD 2.0 EM / F1 (percent) answering only when the answer probability is >= ``threshold``."""
    em, f1, has, no = [], [], [], []
    for q, r in zip(questions, results, strict=True):
        answered = r.best is not None and r.answer_probability >= threshold
        if not q.golds:
            score = float(not answered)
            em.append(score)
            f1.append(score)
            no.append(score)
            continue
        text = r.best.text if answered and r.best else ""
        em.append(float(answered and exact_match(text, q.golds)))
        f1.append(max_token_f1(text, q.golds) if answered else 0.0)
        has.append(f1[-1])
    return {
        "threshold": threshold,
        "exact_match": 100 * float(np.mean(em)),
        "f1": 100 * float(np.mean(f1)),
        "has_answer_f1": 100 * float(np.mean(has)) if has else float("nan"),
        "no_answer_accuracy": 100 * float(np.mean(no)) if no else float("nan"),
    }


#: Resamples behind the fitted threshold: the F1-best threshold of one sample of ~800 questions
#: moves with a handful of them (the 3,828-step reader's was 0.986, where a one-sentence "how"
#: answer scored 0.983); the median of the resamples' best is the bagged, steadier choice.
THRESHOLD_RESAMPLES = 200


def squad2_f1_by_threshold(
    questions: Sequence[ReaderQuestion], results: Sequence[ReaderResult], grid: Sequence[float]
) -> np.ndarray:
    """[question, threshold] SQuAD 2.0 F1 (0..1) of each question answered only at or above each
    threshold of ``grid``: the same scores as :func:`squad2_scores`, for all thresholds at once."""
    thresholds = np.asarray(grid, dtype=np.float64)
    table = np.zeros((len(questions), len(thresholds)))
    for i, (q, r) in enumerate(zip(questions, results, strict=True)):
        answers = r.best is not None and r.answer_probability >= thresholds
        if q.golds:
            table[i] = np.where(answers, max_token_f1(r.best.text if r.best else "", q.golds), 0.0)
        else:
            table[i] = ~answers
    return table


def best_threshold(
    questions: Sequence[ReaderQuestion],
    results: Sequence[ReaderResult],
    resamples: int = THRESHOLD_RESAMPLES,
    seed: int = 0,
) -> float:
    """The answer-probability threshold with the best SQuAD 2.0 F1 on these questions: the median
    over ``resamples`` bootstrap samples of each one's best (0: the best on these questions as
    they are); the lowest on a tie within a sample."""
    grid = sorted({round(r.answer_probability, 4) for r in results} | {0.0, 1.0})
    if len(grid) > 400:
        grid = [float(x) for x in np.quantile(grid, np.linspace(0, 1, 400))]
    table = squad2_f1_by_threshold(questions, results, grid)
    if resamples <= 0:
        return float(grid[int(np.argmax(table.sum(axis=0)))])
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(len(questions), np.full(len(questions), 1 / len(questions)), size=resamples)
    best = np.asarray(grid)[np.argmax(counts @ table, axis=1)]
    return float(np.median(best))


def evaluate(
    reader: SpanReader, questions: Sequence[ReaderQuestion], threshold: float | None = None
) -> dict[str, Any]:
    """Span EM / F1, and when some questions have no answer: AUROC and SQuAD 2.0 scores."""
    t0 = time.perf_counter()
    results = read_all(reader, questions)
    seconds = time.perf_counter() - t0
    report: dict[str, Any] = {
        "questions": len(questions),
        "span": span_scores(questions, results),
        "ms_per_question": 1000 * seconds / max(1, len(questions)),
    }
    labels = [int(bool(q.golds)) for q in questions]
    if 0 < sum(labels) < len(labels):
        report["answerability_auroc"] = auroc([r.answer_probability for r in results], labels)
        fitted = threshold is None
        chosen = best_threshold(questions, results) if fitted else float(threshold)  # type: ignore[arg-type]
        report["squad2"] = squad2_scores(questions, results, chosen) | {"threshold_fitted_here": fitted}
    return report
