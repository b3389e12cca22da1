"""Request and response bodies of the REST API (pydantic), each with an example for the OpenAPI page."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    Tag,
    WithJsonSchema,
    field_validator,
)

from verityrag.config import STRICTNESS_LEVELS, Strictness
from verityrag.index.filters import MAX_FILTER_KEYS, MAX_IN_VALUES
from verityrag.ingest.parsers import FileFormat
from verityrag.ingest.writer import METADATA_LIMITS
from verityrag.types import DOC_ID_PATTERN, DOC_ID_RULE, AbstainReason, ReplyCase

# In the spec too, so clients (and schemathesis) know what a server will refuse:
# a text needs a letter or digit, a question a non-space character.
HAS_WORD_CHARACTER = r"[^\W_]"
HAS_NON_SPACE = r"\S"
# What a 422 says when a field does not match its pattern: pydantic's message quotes the regex
# ("question: String should match pattern '\S'" for a blank question).
PATTERN_RULES: dict[str, str] = {
    HAS_NON_SPACE: "must contain a character other than whitespace",
    HAS_WORD_CHARACTER: "must contain a letter or digit",
    DOC_ID_PATTERN: f"is invalid: use {DOC_ID_RULE}",
}


def _json_integer(value: object) -> object:
    """JSON Schema's integer: 53 and 53.0 are integers; true and "53" are not (lax pydantic took them)."""
    if isinstance(value, bool | str):
        raise ValueError("must be an integer")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


_DOC_EXAMPLE: dict[str, Any] = {
    "doc_id": "steam-engine",
    "title": "Steam Engine",
    "text": "The steam engine converts heat into mechanical work. James Watt improved it in 1776.",
    "metadata": {"source": "encyclopedia"},
}


class DocumentIn(BaseModel):
    """One document to add, or to replace if its ``doc_id`` is already there."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [_DOC_EXAMPLE]})

    doc_id: str = Field(
        pattern=DOC_ID_PATTERN,
        description=f"Stable id; posting the same id again replaces the document. {DOC_ID_RULE}.",
    )
    title: str = Field(default="", description="Shown with citations.")
    text: str = Field(
        pattern=HAS_WORD_CHARACTER,
        description="The document text, with at least one letter or digit (limit: max_document_chars).",
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="Free-form JSON, stored with the document and returned unchanged: at most "
        f"{METADATA_LIMITS.depth} levels deep, {METADATA_LIMITS.keys:,} keys (all levels) and "
        f"{METADATA_LIMITS.bytes:,} bytes as JSON. A string `source` is shown with citations.",
    )


class DocumentBatchIn(BaseModel):
    """Several documents in one call. Every one is validated before any is written."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"documents": [_DOC_EXAMPLE]}]})

    documents: list[DocumentIn] = Field(min_length=1, max_length=10_000)


def _document_form(value: Any) -> str:
    return "batch" if isinstance(value, dict) and "documents" in value else "single"


# Tags that pydantic puts into an error's location; the API strips them so the field path reads as sent.
UNION_TAGS = frozenset({"single", "batch"})

DocumentsIn = Annotated[
    Annotated[DocumentIn, Tag("single")] | Annotated[DocumentBatchIn, Tag("batch")],
    Discriminator(_document_form),
]


INGEST_EXAMPLES: dict[str, Any] = {
    "one": {"summary": "One document", "value": _DOC_EXAMPLE},
    "batch": {
        "summary": "A batch",
        "value": {
            "documents": [
                _DOC_EXAMPLE,
                {"doc_id": "watt", "title": "James Watt", "text": "Watt was a Scottish engineer."},
            ]
        },
    },
}


class IngestedDocument(BaseModel):
    doc_id: str
    n_chunks: int = Field(description="Chunks the document was split into (each is indexed and citable).")
    replaced: bool = Field(description="True if a document with this id was there before and was replaced.")


class IngestOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"documents": [{"doc_id": "steam-engine", "n_chunks": 1, "replaced": False}]}]
        }
    )

    documents: list[IngestedDocument]


class DocumentOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{**_DOC_EXAMPLE, "n_chunks": 1, "ingested_at": "2025-12-02T07:14:00.123Z"}]
        }
    )

    doc_id: str
    title: str
    text: str
    metadata: dict[str, Any]
    n_chunks: int
    ingested_at: str | None = Field(
        default=None, description="When this version was ingested (UTC); null if not recorded."
    )


class DocumentSummaryOut(BaseModel):
    doc_id: str
    title: str
    metadata: dict[str, Any]
    n_chunks: int
    ingested_at: str | None = Field(
        default=None, description="When this version was ingested (UTC); null if not recorded."
    )
    chars: int = Field(default=0, description="The length of the document's text, in characters.")


class DocumentListOut(BaseModel):
    """A page of the stored documents, ordered by doc_id, without their text."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "total": 1,
                    "offset": 0,
                    "limit": 50,
                    "next_offset": None,
                    "documents": [
                        {
                            "doc_id": "steam-engine",
                            "title": "Steam Engine",
                            "metadata": {"source": "encyclopedia"},
                            "n_chunks": 1,
                            "ingested_at": "2025-12-02T07:14:00.123Z",
                        }
                    ],
                }
            ]
        }
    )

    total: int = Field(description="Documents the filter passes (all of them without one).")
    offset: int
    limit: int
    next_offset: int | None = Field(description="The offset of the next page; null on the last page.")
    documents: list[DocumentSummaryOut]


class IngestedFile(IngestedDocument):
    title: str = Field(
        description="The file's own title (PDF/DOCX properties, HTML <title>, first heading) "
        "or its name without extension."
    )
    source: str = Field(description="The file name, kept as the document's metadata `source`.")
    format: FileFormat
    chars: int = Field(description="Characters of text extracted from the file.")


class FilesIngestOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "documents": [
                        {
                            "doc_id": "steam.pdf",
                            "n_chunks": 12,
                            "replaced": False,
                            "title": "Steam Power",
                            "source": "steam.pdf",
                            "format": "pdf",
                            "chars": 9120,
                        }
                    ]
                }
            ]
        }
    )

    documents: list[IngestedFile]


class CollectionOut(BaseModel):
    name: str = Field(description="The `collection` metadata value; empty: documents without one.")
    documents: int


class CollectionsOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"collections": [{"name": "demo", "documents": 605}]}]}
    )

    collections: list[CollectionOut]


class DeletedCollectionOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"name": "demo", "deleted_documents": 605}]})

    name: str
    deleted_documents: int


class DeletedOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"doc_id": "steam-engine", "deleted": True}]})

    doc_id: str
    deleted: bool


_FILTER_SCALAR: dict[str, Any] = {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]}
FILTER_DESCRIPTION = (
    "Only documents whose metadata matches: each key's top-level value must equal the given "
    'string, number or boolean, be one of `{"$in": [...]}`, or be none of `{"$nin": [...]}` '
    "(which a document without the key passes); all keys must hold. A document holding a list "
    "under a key matches when any element does (and fails `$nin` when any element is listed). "
    f"At most {MAX_FILTER_KEYS} keys and {MAX_IN_VALUES} values per `$in` or `$nin`."
)
#: The filter's JSON schema; the values are checked by ``MetadataFilter.from_dict`` (a 422 names the key).
FILTER_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {
            "type": "object",
            "maxProperties": MAX_FILTER_KEYS,
            "propertyNames": {"minLength": 1},
            "additionalProperties": {
                "anyOf": [
                    *_FILTER_SCALAR["anyOf"],
                    *(
                        {
                            "type": "object",
                            "properties": {
                                operator: {
                                    "type": "array",
                                    "minItems": 1,
                                    "maxItems": MAX_IN_VALUES,
                                    "items": _FILTER_SCALAR,
                                }
                            },
                            "required": [operator],
                            "additionalProperties": False,
                        }
                        for operator in ("$in", "$nin")
                    ),
                ]
            },
        },
        {"type": "null"},
    ],
    "title": "Filter",
    "description": FILTER_DESCRIPTION,
}
MetadataFilterIn = Annotated[dict[str, Any] | None, WithJsonSchema(FILTER_SCHEMA)]


class QueryIn(BaseModel):
    """A question, with optional per-request overrides of the pipeline's settings."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"question": "Who improved the steam engine?"},
                {
                    "question": "Who improved the steam engine?",
                    "k": 3,
                    "verify": True,
                    "strictness": "strict",
                },
                {
                    "question": "Who improved the steam engine?",
                    "filter": {"source": "encyclopedia", "year": {"$in": [2024, 2025]}},
                },
            ]
        },
    )

    question: str = Field(
        min_length=1,
        pattern=HAS_NON_SPACE,
        description="The question (limit: the pipeline's max_query_chars).",
    )
    k: int | None = Field(default=None, ge=1, le=100, description="Evidence chunks to keep (top_k).")
    verify: StrictBool | None = Field(default=None, description="Run verification for this request.")
    strictness: Strictness | None = Field(
        default=None,
        description=f"How strictly answers must be grounded: {', '.join(STRICTNESS_LEVELS[:-1])} "
        f"or {STRICTNESS_LEVELS[-1]}; thresholds in docs/verification.md "
        "(verityrag.verify.strictness.STRICTNESS_TABLE).",
    )

    min_sources: int | None = Field(
        default=None,
        ge=1,
        le=10,
        description="Independent documents (different declared sources, not near copies) that "
        "must say the answer, else it abstains (reason `corroboration`); 1: no corroboration.",
    )

    filter: MetadataFilterIn = None
    collection: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="Which documents to ask: a collection's name (the `collection` metadata key), "
        "`all`, or `auto` (the default): your documents when there are any, the bundled `demo` "
        "collection only when nothing else is there. A `filter` naming `collection` decides "
        "instead (with a name here too: 422).",
    )

    # A validator, not an annotated type: keeps k's minimum/maximum in the JSON schema.
    _k_is_a_json_integer = field_validator("k", "min_sources", mode="before")(_json_integer)


class ClaimOut(BaseModel):
    claim: str
    support: float = Field(ge=0.0, le=1.0)


class GroundingOut(BaseModel):
    overall_score: float = Field(description="The minimum over claims: as grounded as the weakest claim.")
    claims: list[ClaimOut]


class CitationOut(BaseModel):
    chunk_id: str
    doc_id: str
    title: str
    start: int = Field(description="Start of the cited span within the chunk's text.")
    end: int = Field(description="End (exclusive) of the cited span within the chunk's text.")
    source: str | None = Field(
        default=None, description="The document's declared source (its metadata's `source`), if any."
    )
    ingested_at: str | None = Field(
        default=None, description="When the cited document was ingested (UTC); null if not recorded."
    )


class ShortAnswerOut(BaseModel):
    text: str = Field(description="The answer span, as the document gives it.")
    chunk_id: str
    start: int = Field(description="Start of the span within the chunk's text.")
    end: int = Field(description="End (exclusive) of the span within the chunk's text.")
    probability: float = Field(
        ge=0.0, le=1.0, description="The reader's confidence that the evidence answers."
    )


class TraceStepOut(BaseModel):
    stage: str
    duration_ms: float
    details: dict[str, Any]


_ANSWER_EXAMPLE: dict[str, Any] = {
    "question": "Who improved the steam engine?",
    "answer": "James Watt improved it in 1776.",
    "short_answer": {
        "text": "James Watt",
        "chunk_id": "steam-engine#0",
        "start": 53,
        "end": 63,
        "probability": 0.96,
    },
    "abstained": False,
    "abstain_reason": None,
    "case": "answered",
    "headline": "Answered, sure (confidence 0.93)",
    "explanation": None,
    "candidate": None,
    "confidence": 0.93,
    "grounding": {
        "overall_score": 0.91,
        "claims": [{"claim": "James Watt improved it in 1776.", "support": 0.91}],
    },
    "unsupported_claims": [],
    "citations": [
        {
            "chunk_id": "steam-engine#0",
            "doc_id": "steam-engine",
            "title": "Steam Engine",
            "start": 53,
            "end": 84,
            "source": "encyclopedia",
            "ingested_at": "2025-12-02T07:14:00.123Z",
        }
    ],
    "trace": [
        {"stage": "attempt_0", "duration_ms": 0.8, "details": {"strategy": "original", "probability": 0.93}},
        {"stage": "grounding", "duration_ms": 0.1, "details": {"score": 0.91, "threshold": 0.5}},
        {"stage": "answer", "duration_ms": 0.0, "details": {"probability": 0.93}},
    ],
    "latency_ms": 0.9,
}
_ABSTAIN_EXAMPLE: dict[str, Any] = {
    **_ANSWER_EXAMPLE,
    "question": "What is the capital of Mongolia?",
    "answer": None,
    "short_answer": None,
    "abstained": True,
    "abstain_reason": "sufficiency",
    "case": "not_found",
    "headline": "Not found in the documents",
    "explanation": "the documents found do not cover the question well enough to answer it",
    "confidence": 0.9,
    "grounding": {"overall_score": 0.0, "claims": []},
    "citations": [],
    "trace": [
        {"stage": "attempt_0", "duration_ms": 0.7, "details": {"strategy": "original", "probability": 0.01}},
        {"stage": "abstain", "duration_ms": 0.0, "details": {"reason": "sufficiency", "probability": 0.01}},
    ],
}


class QueryOut(BaseModel):
    """An answer with its evidence, or an abstention with its reason. Both are a 200."""

    model_config = ConfigDict(json_schema_extra={"examples": [_ANSWER_EXAMPLE, _ABSTAIN_EXAMPLE]})

    question: str
    answer: str | None = Field(description="The cited sentence(s) that answer, or null when it abstained.")
    short_answer: ShortAnswerOut | None = Field(
        default=None, description="The answer span the reader found inside `answer` (null for an LLM answer)."
    )
    abstained: bool
    abstain_reason: str | None = Field(
        description=f"Why it abstained: {', '.join(r.value for r in AbstainReason)}."
    )
    case: ReplyCase = Field(
        description="Which case the reply is, for a person: `answered`; `not_found` (nothing in the "
        "documents answers); `not_sure` (a passage may say the answer, `candidate`, not surely enough to "
        "answer); `sources_disagree` (documents give different answers: `explanation` names both and "
        "their sources); `unknown_name` (the question names something no passage found names). "
        "`abstain_reason` says which check refused.",
    )
    headline: str = Field(
        description="The case in words, read at a glance: 'Answered, sure (confidence 0.93)', "
        "'Not found in the documents', 'Found something, not sure enough to answer', 'The sources "
        "disagree', 'The documents do not name what the question asks about'.",
    )
    explanation: str | None = Field(
        default=None, description="Why it abstained, in words a user can be shown."
    )
    candidate: ShortAnswerOut | None = Field(
        default=None,
        description="For `not_sure`: the span a passage may give, read under the bar for an answer "
        "(its passage is `candidate.chunk_id`); null otherwise.",
    )
    confidence: float = Field(
        ge=0.0,
        le=1.0,
        description="The probability that this reply is right: for an answer, that it holds the "
        "answer; for an abstention, that the documents do not answer the question. Fitted on "
        "labelled questions when the server calibrated (make run does, on the bundled questions); "
        "uncalibrated, the model shipped for the default gate and reader (fitted the same way on the "
        "bundled corpus); with an LLM answer uncalibrated, or another reader, the sufficiency gate's "
        "probability that the evidence holds an answer.",
    )
    grounding: GroundingOut
    unsupported_claims: list[str] = Field(
        description="Sentences of an LLM answer its verifier did not support: dropped from `answer` at "
        "balanced, strict and paranoid, kept in it (and only listed) at loose. Empty for an extractive "
        "answer and for an abstention.",
    )
    citations: list[CitationOut]
    trace: list[TraceStepOut]
    latency_ms: float


class HealthOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"status": "ok", "version": "0.1.0", "documents": 605, "reason": None}]
        }
    )

    status: Literal["ok", "unavailable"]
    version: str
    documents: int | None
    reason: str | None = Field(default=None, description="Why the pipeline is unavailable, when it is.")


class LearnedCheckOut(BaseModel):
    threshold: float = Field(description="A score under it abstains (reason: the check's name).")
    threshold_from: Literal["settings", "calibration", "metadata", "attached"] = Field(
        description="settings (VERITYRAG_<CHECK>_THRESHOLD), calibration (fitted on the labelled "
        "calibration questions by the main eval's rule), metadata (the model folder's own), or "
        "attached (set on the pipeline in code)."
    )
    model: str | None = Field(description="The model folder's name (its path is not shown).")
    sufficiency_threshold: float | None = Field(
        default=None,
        description="Answerability only, when calibration fitted both gates together: the sufficiency "
        "gate's threshold while this check is attached (it replaces the gate's own).",
    )


class StatsOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "documents": 605,
                    "chunks": 847,
                    "index_version": 2,
                    "embedder": "hashing:v1:dim=384:ngrams=1-2:analyzer:v2:stem=1:stop=152",
                    "persistent": True,
                    "learned_checks": {
                        "answerability": {
                            "threshold": 0.05,
                            "threshold_from": "calibration",
                            "model": "answerability_mpnet6",
                        }
                    },
                }
            ]
        }
    )

    documents: int
    chunks: int
    index_version: int
    embedder: str
    persistent: bool = Field(
        description="Whether documents persist in a data folder (VERITYRAG_DATA_DIR); its path is not shown."
    )
    learned_checks: dict[str, LearnedCheckOut] = Field(
        description="The learned checks the agent runs, in its order (answerability, guard, reader); "
        "turned on by VERITYRAG_ANSWERABILITY_CHECK / _GUARD_CHECK / _READER_CHECK."
    )


class ErrorDetail(BaseModel):
    field: str | None = Field(
        description="The offending field (dotted path), or null when no field is at fault."
    )
    message: str


class ErrorOut(BaseModel):
    """Every 4xx and 5xx response has this body."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"error": {"field": "strictness", "message": "Input should be ..."}}]}
    )

    error: ErrorDetail
