"""A ``QueryResult`` flattened into what a person reads: the answer and the sentence it is quoted
from, each source's passage, or the refusal in words with what was found instead; the figures
(support per claim, thresholds, trace) for whoever wants them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from verityrag.errors import InvalidInputError
from verityrag.types import ClaimSupport, Hit, QueryResult, ReplyCase
from verityrag.verify.strictness import strictness_policy

UNSUPPORTED_DROPPED = "Claims the verifier did not support (dropped from the answer)"
UNSUPPORTED_KEPT = "Claims the verifier did not support (kept; verification was informational)"

# Why a refusal happened, in words a user of the demo understands.
REASON_TEXT = {
    "no_evidence": "nothing relevant was retrieved",
    "sufficiency": "the retrieved evidence is not enough to answer (calibrated sufficiency gate)",
    "answerability": "the documents do not say: no passage answers the question",
    "grounding": "the drafted answer was not supported by the evidence it cites",
    "guard": "the learned guard judged the drafted answer unsupported",
    "reader": "the drafted answer does not say what the extractive reader finds in the evidence for this question",
    "verifier_error": "the verifier failed, so the system refused rather than answer unchecked",
    "corroboration": "fewer independent documents say the answer than the settings ask for",
    "conflict": "the documents disagree on the answer",
    "missing_hop": "a document leads to another that would answer, and none does",
}


# How refusals' explanations begin, which the case's headline already says.
_CASE_PREFIXES = ("the documents do not say: ", "not sure enough to answer: ", "the documents disagree: ")


@dataclass(frozen=True, slots=True)
class Marked:
    """A text with one part to mark: ``before + marked + after``; ``marked`` is empty when
    nothing is (the short answer was not found in the sentence, say)."""

    before: str
    marked: str = ""
    after: str = ""

    @property
    def text(self) -> str:
        return self.before + self.marked + self.after


def mark(text: str, start: int, end: int) -> Marked:
    """``text`` with ``text[start:end]`` marked; the whole text unmarked when the span is not in it."""
    if not 0 <= start < end <= len(text):
        return Marked(text)
    return Marked(text[:start], text[start:end], text[end:])


@dataclass(frozen=True, slots=True)
class SourceView:
    """A cited passage: its document's title and id, the passage with the cited sentence marked."""

    title: str
    doc_id: str
    chunk_id: str
    passage: Marked
    source: str | None = None


@dataclass(frozen=True, slots=True)
class FoundView:
    """A passage retrieved for a question that was refused: shown as what was found instead."""

    title: str
    doc_id: str
    text: str


@dataclass(frozen=True, slots=True)
class ResultView:
    question: str
    abstained: bool
    answer: str | None
    short_answer: str | None  # the span the reader found in the answer, when it found one
    reason: str | None
    reason_text: str | None
    grounding: float
    confidence: float
    latency_ms: float
    claims: list[dict[str, Any]]
    citations: list[dict[str, Any]]
    evidence: list[dict[str, Any]]  # the first max_evidence of the retrieved chunks
    trace: list[dict[str, Any]]
    unsupported_claims: list[str]
    unsupported_kept: bool  # True when a loose level kept them in the answer
    evidence_total: int = 0  # how many chunks the query retrieved
    quote: Marked | None = None  # the answer, its short answer marked in it
    sources: list[SourceView] = field(default_factory=list)  # one per cited passage
    found_instead: list[FoundView] = field(default_factory=list)  # a refusal's best passages
    decisions: list[dict[str, Any]] = field(default_factory=list)  # each gate: score vs threshold
    case: str = "answered"  # ReplyCase's value: which case the reply is
    said: str = ""  # the reply's case in words (QueryResult.headline)
    candidate: SourceView | None = None  # not sure enough: the passage that may say it, marked
    disagreeing: list[dict[str, str]] = field(default_factory=list)  # a conflict: each value, its source

    @property
    def evidence_label(self) -> str:
        shown, total = len(self.evidence), max(self.evidence_total, len(self.evidence))
        return (
            f"Evidence ({shown} chunks)" if shown == total else f"Evidence (first {shown} of {total} chunks)"
        )

    @property
    def unsupported_label(self) -> str:
        return UNSUPPORTED_KEPT if self.unsupported_kept else UNSUPPORTED_DROPPED

    @property
    def why(self) -> str:
        """Why a refusal, without the words that repeat its case ("the documents do not say: ")."""
        text = self.reason_text or ""
        for said in _CASE_PREFIXES:
            if text.startswith(said) and len(text) > len(said):
                return text[len(said) :]
        return text

    @property
    def headline(self) -> str:
        """The reply's case in words, and why for a refusal."""
        return f"{self.said}: {self.reason_text}" if self.abstained else self.said


def unsupported_kept(result: QueryResult) -> bool:
    """Whether the answer kept its unsupported claims: verification was informational (``loose``).

    Read from the trace: the grounding step's ``enforced``, else the strictness the LLM step
    ran at. Neither recorded: dropped, the behaviour of every level but ``loose``.
    """
    for step in result.trace:
        if step.stage == "grounding" and "enforced" in step.details:
            return not bool(step.details["enforced"])
    for step in result.trace:
        if step.stage == "llm_generation" and step.details.get("strictness"):
            try:
                return not strictness_policy(step.details["strictness"]).drops_unsupported
            except InvalidInputError:  # a level this version does not know: not decisive
                continue
    return False


MAX_FOUND = 3  # passages shown with a refusal
MAX_FOUND_CHARS = 400


def quote_of(result: QueryResult) -> Marked | None:
    """The answer with its short answer marked: at the offsets the reader gave (relative to the
    cited sentence of the same chunk), else where the text first occurs, else unmarked."""
    if result.answer is None:
        return None
    answer, short = result.answer, result.short_answer
    if short is None:
        return Marked(answer)
    for cit in result.citations:
        if cit.chunk_id == short.chunk_id and cit.start <= short.start and short.end <= cit.end:
            at = short.start - cit.start
            if answer[at : at + len(short.text)] == short.text:
                return mark(answer, at, at + len(short.text))
    at = answer.find(short.text)
    return mark(answer, at, at + len(short.text)) if at >= 0 else Marked(answer)


def sources_of(result: QueryResult) -> list[SourceView]:
    """One view per cited passage (the chunk's text from the evidence; the cited span marked)."""
    chunks = {h.chunk_id: h.chunk for h in result.evidence}
    out = []
    for cit in result.citations:
        chunk = chunks.get(cit.chunk_id)
        passage = mark(chunk.text, cit.start, cit.end) if chunk is not None else Marked(result.answer or "")
        out.append(SourceView(cit.title, cit.doc_id, cit.chunk_id, passage, cit.source))
    return out


def found_of(evidence: tuple[Hit, ...] | list[Hit]) -> list[FoundView]:
    """The best few retrieved passages, one per document, cut at a sentence near MAX_FOUND_CHARS."""
    out: list[FoundView] = []
    seen = set()
    for hit in evidence:
        if hit.chunk.doc_id in seen:
            continue
        seen.add(hit.chunk.doc_id)
        out.append(FoundView(hit.chunk.title, hit.chunk.doc_id, _shorten(hit.chunk.text)))
        if len(out) == MAX_FOUND:
            break
    return out


def _shorten(text: str, limit: int = MAX_FOUND_CHARS) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = max(cut.rfind(". "), cut.rfind("? "), cut.rfind("! "))
    return (cut[: end + 1] if end > limit // 2 else cut.rstrip()) + " …"


def candidate_of(result: QueryResult) -> SourceView | None:
    """A refusal not sure enough: the passage that may say the answer, the span marked in it."""
    span = result.candidate
    if span is None:
        return None
    chunk = next((h.chunk for h in result.evidence if h.chunk_id == span.chunk_id), None)
    if chunk is None:
        return None
    return SourceView(chunk.title, chunk.doc_id, chunk.chunk_id, mark(chunk.text, span.start, span.end))


def disagreeing_of(result: QueryResult) -> list[dict[str, str]]:
    """A conflict's values, each with the document that gives it (from the refusal's trace)."""
    rows = []
    for step in result.trace:
        for found in step.details.get("conflict", []) if step.stage == "abstain" else []:
            if isinstance(found, dict) and "answer" in found:
                rows.append(
                    {"value": str(found["answer"]), "source": str(found.get("title") or found.get("doc_id"))}
                )
    return rows


def decisions_of(result: QueryResult) -> list[dict[str, Any]]:
    """Each step of the trace that compared a score with a threshold: what, the score, the threshold."""
    rows = []
    for step in result.trace:
        score = step.details.get("score", step.details.get("probability"))
        if "threshold" in step.details and isinstance(score, float | int):
            rows.append(
                {"step": step.stage, "score": round(float(score), 3), "threshold": step.details["threshold"]}
            )
    return rows


def result_view(result: QueryResult, max_evidence: int = 5) -> ResultView:
    reason = result.abstain_reason.value if result.abstain_reason is not None else None
    return ResultView(
        quote=quote_of(result),
        sources=sources_of(result),
        found_instead=found_of(result.evidence) if result.abstained else [],
        decisions=decisions_of(result),
        case=(result.case or ReplyCase.NOT_FOUND).value,
        said=result.headline,
        candidate=candidate_of(result),
        disagreeing=disagreeing_of(result),
        question=result.question,
        abstained=result.abstained,
        answer=result.answer,
        short_answer=result.short_answer.text if result.short_answer else None,
        reason=reason,
        reason_text=(result.explanation or REASON_TEXT.get(reason, reason)) if reason else None,
        grounding=result.grounding.overall_score,
        confidence=result.confidence,
        latency_ms=result.latency_ms,
        claims=[_claim_row(c) for c in result.grounding.claims],
        citations=[
            {"doc_id": c.doc_id, "title": c.title, "chunk_id": c.chunk_id, "chars": f"{c.start}-{c.end}"}
            for c in result.citations
        ],
        evidence=[
            {
                "rank": i + 1,
                "title": h.chunk.title,
                "chunk_id": h.chunk_id,
                "score": round(h.score, 4),
                "text": h.chunk.text,
            }
            for i, h in enumerate(result.evidence[:max_evidence])
        ],
        trace=[{"stage": s.stage, "ms": round(s.duration_ms, 2), "details": s.details} for s in result.trace],
        unsupported_claims=list(result.unsupported_claims),
        unsupported_kept=unsupported_kept(result),
        evidence_total=len(result.evidence),
    )


def _claim_row(claim: ClaimSupport) -> dict[str, Any]:
    """The claim, its support and its signals (0..1); ``sentence`` is which answer sentence, from 1."""
    row: dict[str, Any] = {"claim": claim.claim, "support": round(claim.support, 3)}
    for name, value in claim.details.items():
        # The verifier records the sentence as a 0-based index, a float like its scores.
        row[name] = int(value) + 1 if name == "sentence" else round(value, 3)
    return row


# Where a learned check's threshold came from (``VerityRAGPipeline.learned_checks``), in words.
THRESHOLD_FROM_TEXT = {
    "settings": "set in the settings",
    "calibration": "fitted on the calibration questions",
    "metadata": "from its model folder",
    "attached": "set in code",
}
CHECKS_OFF_TEXT = (
    "Optional learned checks: none are switched on. Three more models (a learned gate: does any "
    "passage answer this question; a support check: is the drafted answer supported; a reader "
    "check: does an LLM's answer say what the reader finds) can be switched on in the settings; "
    "the README says how. The reader that finds the answer's words is always on: its refusals say "
    "'the documents do not say'."
)
# How every answer is checked, whatever the settings: the About section of the app.
ABOUT_TEXT = (
    "Every question goes through the same steps. The best passages are retrieved (keywords and "
    "meaning together) and reranked. A gate, calibrated on questions with known answers, decides "
    "whether they are enough to answer; if not, the question is refused. A reader then looks for "
    "the exact words that answer the question; the answer is the sentence that holds them, quoted "
    "from the document. A grounding check compares the answer with the passage it cites and "
    "refuses what the passage does not support."
)


def learned_checks_line(checks: dict[str, dict[str, Any]]) -> str:
    """One line naming the learned checks the agent runs and where each threshold came from."""
    if not checks:
        return CHECKS_OFF_TEXT
    parts = []
    for stage, info in checks.items():
        source = THRESHOLD_FROM_TEXT.get(info["threshold_from"], info["threshold_from"])
        # Calibration may find that any threshold costs too much coverage: the check then only scores.
        effect = "; scores only, never refuses" if info["threshold"] == 0 else ""
        if info.get("sufficiency_threshold") is not None:
            effect += f"; fitted with the sufficiency gate at {info['sufficiency_threshold']:.3g}"
        parts.append(f"{stage} (threshold {info['threshold']:.3g}, {source}{effect})")
    return "Learned checks: " + ", ".join(parts) + "."


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def md_escape(text: str) -> str:
    """``text`` shown as it is in Streamlit markdown: every character markdown would act on escaped."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text).replace("\n", "  \n")


def marked_markdown(marked: Marked, style: str = "**:orange-background[{}]**") -> str:
    """``marked`` as markdown, its marked part in ``style`` (a format string with one ``{}``)."""
    inner = style.format(md_escape(marked.marked)) if marked.marked else ""
    return md_escape(marked.before) + inner + md_escape(marked.after)


def blockquote(markdown: str) -> str:
    """``markdown`` as one block quote, every line of it quoted: a blank line in a passage (a
    Markdown or HTML document's paragraphs) would otherwise end the quote and spill the rest."""
    return "\n".join(f"> {line}" if line.strip() else ">" for line in markdown.split("\n"))
