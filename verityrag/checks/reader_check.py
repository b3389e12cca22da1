"""``ReaderCheck``: does the answer say what an extractive reader finds in the evidence for this question?

The support checks (grounding, Verity-Guard, NLI) never see the question, so an answer
copied from the evidence passes them even when it answers a different question. Session 4
found that 24% of gemma-3-270m's answers to HaluEval questions are such copied-but-wrong
sentences. This check reads the question: the extractive reader
(:class:`~verityrag.models.span_reader.SpanReader`, trained on SQuAD 2.0 here) proposes its
``top_k`` answer spans in the evidence (trimmed to the question, as in its training), and
the score is the share of their probability on spans that the answer contains, as whole
normalised tokens (the SQuAD answer match). An answer that contains the reader's
answer scores near 1; one that says something else scores near 0.

Implements the controller's ``ReaderCheckModel`` protocol (``threshold``,
``score(question, evidence, answer)``):

    AgentController(..., reader_check=ReaderCheck())   # <models root>/reader_check when built, else the shipped reader
    ReaderCheck.from_settings(Settings.from_env())     # VERITYRAG_READER_DIR, else that (VERITYRAG_MODELS_DIR's)

The reader-check model (``make models-reader``) is a MiniLM that learned from ~7k SQuAD 2.0 and
~6.6k HaluEval QA answers; the threshold in its ``metadata.json`` is the one python -m
verityrag.train reader-check fitted on gemma's labelled validation answers, and its figures
(scripts/results/reader_check.json, docs/results.md) say what it costs. Without it, the check
reads with the extractive reader the package ships (the answer path's own, trained on 116k SQuAD
examples), whose folder records its *answer* threshold, not an agreement one: the check then
uses :data:`EXTRACTIVE_READER_AGREEMENT`, fixed before it was measured on any LLM answer
(docs/decisions/0057 for its figures on an instruct model's answers).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from verityrag.checks.learned_check import ThresholdedCheck
from verityrag.errors import InvalidInputError
from verityrag.models.evidence import trim_evidence
from verityrag.models.folder import SHIPPED_READER_DIR, model_folder
from verityrag.models.span_reader import TOP_K, ReaderSpan, SpanReader
from verityrag.text.answers import contains_gold

if TYPE_CHECKING:
    from verityrag.config import Settings

#: The reader-check model's folder under the models root (``make models-reader`` builds it).
READER_CHECK_FOLDER = "reader_check"
DEFAULT_READER_DIR = model_folder(READER_CHECK_FOLDER)
#: The extractive reader shipped in the package: the check's reader when no reader-check model is built.
#: The agreement threshold with an extractive reader's folder (which records none): half of the
#: reader's span probability on spans the answer contains.
EXTRACTIVE_READER_AGREEMENT = 0.5
BUILD_READER = "make models-reader"
#: Word budget of the evidence the reader reads, as in its training data (python -m verityrag.train answerability-data).
EVIDENCE_WORDS = 80

__all__ = [
    "DEFAULT_READER_DIR",
    "EXTRACTIVE_READER_AGREEMENT",
    "SHIPPED_READER_DIR",
    "ReaderCheck",
    "default_reader_dir",
    "reader_agreement",
]


def reader_agreement(spans: Sequence[ReaderSpan], answer: str) -> float:
    """The probability of the reader's spans that ``answer`` contains (whole normalised tokens)."""
    return float(sum(s.probability for s in spans if contains_gold(answer, [s.text])))


def default_reader_dir(models_root: Path | str = "") -> Path:
    """<models root>/reader_check when it was built, else the shipped reader (the default root:
    :data:`DEFAULT_READER_DIR`)."""
    built = model_folder(READER_CHECK_FOLDER, models_root) if models_root else DEFAULT_READER_DIR
    return built if (built / "metadata.json").is_file() else SHIPPED_READER_DIR


class ReaderCheck(ThresholdedCheck):
    """The reader check, loaded from ``model_dir`` (default: :func:`default_reader_dir`, the
    environment unread; an entry point passes the folder its settings name, :meth:`from_settings`).

    ``threshold``: None means the one a reader-check folder's ``metadata.json`` records, or
    :data:`EXTRACTIVE_READER_AGREEMENT` for an extractive reader's folder. The ONNX session loads
    on the first ``score`` or on :meth:`warm_up`, which also checks that every file is there.
    """

    what = "the extractive reader"

    def __init__(
        self, model_dir: Path | str | None = None, threshold: float | None = None, top_k: int = TOP_K
    ) -> None:
        if top_k < 1:
            raise InvalidInputError("top_k", f"must be >= 1, got {top_k}")
        super().__init__(threshold)
        self.model_dir = Path(model_dir) if model_dir else default_reader_dir()
        self.reader = SpanReader(self.model_dir, what=self.what, build_command=BUILD_READER)
        self.top_k = top_k

    @classmethod
    def folder(cls, settings: Settings) -> Path:
        """``settings.reader_check_dir`` (``VERITYRAG_READER_DIR``), else :func:`default_reader_dir`
        under ``settings.models_dir``."""
        if settings.reader_check_dir:
            return Path(settings.reader_check_dir)
        return default_reader_dir(settings.models_dir)

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> Self:
        """The check in :meth:`folder` of ``settings``; ``kwargs`` go to the constructor."""
        return cls(cls.folder(settings), **kwargs)

    @property
    def records_agreement_threshold(self) -> bool:
        """Whether the folder is a reader-check export, whose metadata records an agreement threshold
        (python -m verityrag.train reader-check says how it was fitted in its data's ``threshold``);
        an extractive reader's folder records its answer threshold instead."""
        return "threshold" in self.reader.metadata.data

    def recorded_threshold(self) -> float:
        """The one a reader-check folder records; else :data:`EXTRACTIVE_READER_AGREEMENT`."""
        return (
            self.reader.metadata.threshold
            if self.records_agreement_threshold
            else EXTRACTIVE_READER_AGREEMENT
        )

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
