"""``ReaderCheck``: does the answer say what an extractive reader finds in the evidence for this question?

The support checks (grounding, Verity-Guard, NLI) never see the question, so an answer
copied from the evidence passes them even when it answers a different question. Session 4
found that 24% of gemma-3-270m's answers to HaluEval questions are such copied-but-wrong
sentences. This check reads the question: the extractive reader
(:class:`~verityrag.crossenc.reader.SpanReader`, trained on SQuAD 2.0 here) proposes its
``top_k`` answer spans in the evidence (trimmed to the question, as in its training), and
the score is the share of their probability on spans that the answer contains, as whole
normalised tokens (the SQuAD answer match). An answer that contains the reader's
answer scores near 1; one that says something else scores near 0.

Implements the controller's ``ReaderAgreementCheck`` protocol (``threshold``,
``score(question, evidence, answer)``):

    AgentController(..., answer_reader=ReaderCheck())   # VERITY_READER_DIR or guard_work/reader

The reader is a MiniLM that learned from ~7k SQuAD 2.0 and ~6.6k HaluEval QA answers
(``make models-reader``), so it is often wrong itself: the threshold in ``metadata.json`` is
the one python -m verityrag.train reader-check fitted on gemma's labelled validation answers, and its
figures (scripts/results/answer_reader.json, README) say what it costs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from verityrag.checks.base import ThresholdedCheck
from verityrag.crossenc.evidence import trim_evidence
from verityrag.crossenc.reader import TOP_K, ReaderSpan, SpanReader
from verityrag.errors import InvalidInputError
from verityrag.text.answers import contains_gold

READER_DIR_ENV = "VERITY_READER_DIR"
DEFAULT_READER_DIR = Path("guard_work/reader_check")
BUILD_READER = "make models-reader"
#: Word budget of the evidence the reader reads, as in its training data (python -m verityrag.train answerability-data).
EVIDENCE_WORDS = 80

__all__ = ["DEFAULT_READER_DIR", "READER_DIR_ENV", "ReaderCheck", "reader_agreement"]


def reader_agreement(spans: Sequence[ReaderSpan], answer: str) -> float:
    """The probability of the reader's spans that ``answer`` contains (whole normalised tokens)."""
    return float(sum(s.probability for s in spans if contains_gold(answer, [s.text])))


class ReaderCheck(ThresholdedCheck):
    """The reader check, loaded from ``VERITY_READER_DIR`` (default guard_work/reader).

    ``threshold``: None means the one in ``metadata.json``. The ONNX session loads on the
    first ``score`` or on :meth:`warm_up`, which also checks that every file is there.
    """

    what = "the extractive reader"

    def __init__(
        self, model_dir: Path | str | None = None, threshold: float | None = None, top_k: int = TOP_K
    ) -> None:
        if top_k < 1:
            raise InvalidInputError("top_k", f"must be >= 1, got {top_k}")
        super().__init__(threshold)
        self.model_dir = Path(model_dir or os.environ.get(READER_DIR_ENV) or DEFAULT_READER_DIR)
        self.reader = SpanReader(self.model_dir, what=self.what, build_command=BUILD_READER)
        self.top_k = top_k

    def recorded_threshold(self) -> float:
        """The one ``metadata.json`` records (fitted by python -m verityrag.train reader-check)."""
        return self.reader.metadata.threshold

    def warm_up(self) -> ReaderCheck:
        self.reader.warm_up()
        return self

    def spans(self, question: str, evidence: str) -> list[ReaderSpan]:
        """The reader's best spans for ``question`` in ``evidence`` (trimmed to the question first)."""
        return self.reader.top_spans(question, trim_evidence(question, evidence, EVIDENCE_WORDS), self.top_k)

    def score(self, question: str, evidence: str, answer: str) -> float:
        if not question.strip():
            raise InvalidInputError("question", "is empty")
        if not answer.strip():
            raise InvalidInputError("answer", "is empty")
        return reader_agreement(self.spans(question, evidence), answer)
