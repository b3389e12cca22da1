"""Labelled questions for the model tests that calibrate a pipeline on the bundled corpus slice."""

from __future__ import annotations

from typing import Any


def labelled_questions(
    corpus_slice: list[dict[str, str]],
    test_questions: list[dict[str, Any]],
    answerable: int,
    unanswerable: int,
) -> list[tuple[str, list[str]]]:
    """The first ``answerable`` test questions about the slice's documents, then the first
    ``unanswerable`` ones the corpus cannot answer, as ``(question, gold answers)``."""
    in_slice = {d["doc_id"] for d in corpus_slice}
    about = [q for q in test_questions if q["answers"] and q["source_doc_id"] in in_slice][:answerable]
    cannot = [q for q in test_questions if not q["answers"]][:unanswerable]
    return [(q["question"], list(q["answers"])) for q in about + cannot]
