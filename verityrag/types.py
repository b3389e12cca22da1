"""Value objects passed between stages. Frozen; a ``Document`` is validated on construction."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Any

from verityrag.errors import InvalidInputError

DOC_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:\-/]{0,199}$"
_DOC_ID_RE = re.compile(DOC_ID_PATTERN)
DOC_ID_RULE = (
    "1-200 characters from letters, digits and . _ : - /, starting with a letter or digit, "
    "with no empty, '.' or '..' path segment"
)


def validate_doc_id(doc_id: object) -> str:
    if not isinstance(doc_id, str):
        raise InvalidInputError("doc_id", f"must be a string, got {type(doc_id).__name__}")
    # fullmatch: the pattern's $ also matches before a final newline ("abc\n" passed).
    # No . or .. segment: HTTP clients resolve them, so DELETE /documents/a/../b deletes "b"; no
    # empty one ("x//y", "slash/"): clients and proxies merge or drop them, naming another id.
    if not _DOC_ID_RE.fullmatch(doc_id) or any(part in ("", ".", "..") for part in doc_id.split("/")):
        raise InvalidInputError("doc_id", f"{doc_id!r} is invalid: use {DOC_ID_RULE}")
    return doc_id


def is_valid_doc_id(doc_id: object) -> bool:
    """Whether ``validate_doc_id`` accepts ``doc_id``."""
    try:
        validate_doc_id(doc_id)
    except InvalidInputError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Document:
    """A document as ingested. ``text`` must hold at least one word character."""

    doc_id: str
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validate_doc_id(self.doc_id)
        if not isinstance(self.title, str):
            raise InvalidInputError("title", f"must be a string, got {type(self.title).__name__}")
        if not isinstance(self.text, str):
            raise InvalidInputError("text", f"must be a string, got {type(self.text).__name__}")
        if not any(ch.isalnum() for ch in self.text):
            raise InvalidInputError("text", "is empty or has no word characters")
        if not isinstance(self.metadata, dict):
            raise InvalidInputError("metadata", "must be a dict")

    @classmethod
    def as_stored(cls, doc_id: str, title: str, text: str, metadata: dict[str, Any]) -> Document:
        """A document read back from a store, under the id it was stored with.

        The id rules were tightened after stores were written (a final newline, a ``.`` or
        ``..`` segment are refused since session 18), and an acknowledged document must
        survive an upgrade: a store holding one made the pipeline fail to start. Such a
        document keeps its id; every other check still runs.
        """
        try:
            return cls(doc_id, title, text, metadata)
        except InvalidInputError as exc:
            if exc.field != "doc_id" or not isinstance(doc_id, str):
                raise
        checked = cls("legacy-id", title, text, metadata)  # every other check, on a valid id
        doc = object.__new__(cls)
        for name in cls.__slots__:
            object.__setattr__(doc, name, doc_id if name == "doc_id" else getattr(checked, name))
        return doc


@dataclass(frozen=True, slots=True)
class Chunk:
    """A passage of a document, the unit that is indexed and cited."""

    chunk_id: str
    doc_id: str
    title: str
    text: str
    position: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Hit:
    """A retrieved chunk with every score that led to it (kept for the trace and features)."""

    chunk: Chunk
    score: float
    bm25_score: float = 0.0
    dense_score: float = 0.0
    bm25_rank: int | None = None
    dense_rank: int | None = None
    rerank_score: float | None = None

    @property
    def chunk_id(self) -> str:
        return self.chunk.chunk_id


class AbstainReason(enum.StrEnum):
    """Why the system refused to answer. Recorded on every abstention."""

    NO_EVIDENCE = "no_evidence"
    SUFFICIENCY = "sufficiency"
    ANSWERABILITY = "answerability"
    GROUNDING = "grounding"
    GUARD = "guard"
    READER = "reader"
    VERIFIER_ERROR = "verifier_error"
    # Fewer independent documents agree on the answer than ``Settings.min_sources`` asks for.
    CORROBORATION = "corroboration"
    # Documents disagree: the reader found answers of the same kind in different documents, each
    # well supported (``Settings.report_conflicts``); the explanation names both and their sources.
    CONFLICT = "conflict"
    # The question needs a second document: a passage names what it names and another thing
    # (a bridge), and no document about that thing answers; the explanation names both.
    MISSING_HOP = "missing_hop"


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a stored document came from: its metadata's ``source`` (when that is a string;
    declared by whoever wrote it) and when this version was ingested (Unix seconds, recorded
    by the writer; None for a document stored before ingest times were recorded)."""

    doc_id: str
    source: str | None
    ingested_at: float | None


def source_key(doc_id: str, provenance: Provenance | None = None) -> str:
    """Who says what a document says: the source its metadata declares, else the document itself.
    Documents of one key are one source for conflicts and corroboration."""
    if provenance is not None and provenance.source:
        return f"source:{provenance.source}"
    return f"doc:{doc_id}"


@dataclass(frozen=True, slots=True)
class Citation:
    """Where an answer sentence comes from: a chunk, and the character span within its text;
    with the cited document's declared ``source`` and ingest time (Unix seconds), which the
    pipeline fills in from its store once the answer is found (None: not recorded)."""

    chunk_id: str
    doc_id: str
    title: str
    start: int
    end: int
    source: str | None = None
    ingested_at: float | None = None


@dataclass(frozen=True, slots=True)
class CitedSentence:
    text: str
    citations: tuple[Citation, ...]


@dataclass(frozen=True, slots=True)
class ClaimSupport:
    """How well one claim of the answer is supported by the evidence it cites (0..1)."""

    claim: str
    support: float
    details: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GroundingReport:
    """Overall score is the minimum over claims: an answer is only as grounded as its weakest claim."""

    overall_score: float
    claims: tuple[ClaimSupport, ...] = ()


@dataclass(frozen=True, slots=True)
class TraceStep:
    """One stage of answering a query: its name, duration and the figures it decided on."""

    stage: str
    duration_ms: float
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ShortAnswer:
    """The answer span the reader found: ``text`` is ``chunk.text[start:end]`` of chunk ``chunk_id``;
    ``probability`` is the reader's confidence that the evidence answers the question at all. A
    verdict the documents decide and no passage writes ("Yes", "No" to a question about two
    things) has ``start == end``: where the sentence that decided it starts."""

    text: str
    chunk_id: str
    start: int
    end: int
    probability: float


class ReplyCase(enum.StrEnum):
    """Which case a reply is, as a person reads it at a glance (the abstain reason says which
    check refused; several checks refuse for one case)."""

    ANSWERED = "answered"
    # Nothing in the documents answers the question.
    NOT_FOUND = "not_found"
    # A passage may say the answer (``QueryResult.candidate``), not surely enough to answer.
    NOT_SURE = "not_sure"
    # Documents give different answers; the explanation names both and their sources.
    SOURCES_DISAGREE = "sources_disagree"
    # The question names something no passage found names (another clinic, another product).
    UNKNOWN_NAME = "unknown_name"


#: A reply's case in words, read at a glance; an answer's adds how sure (:func:`sureness`).
CASE_HEADLINES: dict[ReplyCase, str] = {
    ReplyCase.ANSWERED: "Answered",
    ReplyCase.NOT_FOUND: "Not found in the documents",
    ReplyCase.NOT_SURE: "Found something, not sure enough to answer",
    ReplyCase.SOURCES_DISAGREE: "The sources disagree",
    ReplyCase.UNKNOWN_NAME: "The documents do not name what the question asks about",
}


#: An answer's confidence (the probability that it is right) from which it is "sure", and
#: "fairly sure"; under that, "not sure".
SURE = 0.85
FAIRLY_SURE = 0.6


def sureness(confidence: float) -> str:
    """How sure an answer is, in words: its confidence is the probability that it is right."""
    if confidence >= SURE:
        return "sure"
    if confidence >= FAIRLY_SURE:
        return "fairly sure"
    return "not sure: read the quoted sentence"


@dataclass(frozen=True, slots=True)
class QueryResult:
    question: str
    answer: str | None
    abstained: bool
    abstain_reason: AbstainReason | None
    grounding: GroundingReport
    confidence: float
    sentences: tuple[CitedSentence, ...] = ()
    evidence: tuple[Hit, ...] = ()
    trace: tuple[TraceStep, ...] = ()
    # Sentences of an LLM answer its verifier did not support: dropped from ``answer`` by the
    # strictness level, or kept in it under ``loose``. Empty for an extractive answer.
    unsupported_claims: tuple[str, ...] = ()
    # The span of the evidence that answers, when the extractive reader found one (``answer``
    # then holds the sentence(s) around it); None for an abstention or an LLM answer.
    short_answer: ShortAnswer | None = None
    # Why the question was refused, in words a user can be shown (None for an answer).
    explanation: str | None = None
    # Which case the reply is (None: answered, or for a refusal not found in the documents).
    case: ReplyCase | None = None
    # A refusal not sure enough: the span a passage may give, which the reply names.
    candidate: ShortAnswer | None = None

    def __post_init__(self) -> None:
        if self.case is None:
            derived = (
                ReplyCase.ANSWERED
                if not self.abstained
                else ReplyCase.SOURCES_DISAGREE
                if self.abstain_reason is AbstainReason.CONFLICT
                else ReplyCase.NOT_FOUND
            )
            object.__setattr__(self, "case", derived)

    @property
    def citations(self) -> tuple[Citation, ...]:
        seen: dict[tuple[str, int, int], Citation] = {}
        for sentence in self.sentences:
            for cit in sentence.citations:
                seen.setdefault((cit.chunk_id, cit.start, cit.end), cit)
        return tuple(seen.values())

    @property
    def latency_ms(self) -> float:
        return sum(step.duration_ms for step in self.trace)

    @property
    def headline(self) -> str:
        """The reply's case in words ("Answered, sure (confidence 0.91)", "The sources disagree");
        ``explanation`` says why."""
        case = self.case or ReplyCase.NOT_FOUND
        if case is ReplyCase.ANSWERED:
            return f"Answered, {sureness(self.confidence)} (confidence {self.confidence:.2f})"
        return CASE_HEADLINES[case]
