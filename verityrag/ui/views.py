"""A ``QueryResult`` flattened into what a person reads: answer or refusal, support per claim, trace."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from verityrag.errors import InvalidInputError
from verityrag.types import ClaimSupport, QueryResult
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
}


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
    def headline(self) -> str:
        if self.abstained:
            return f"Abstained ({self.reason}): {self.reason_text}"
        return f"Answered (grounding {self.grounding:.2f}, confidence {self.confidence:.2f})"


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


def result_view(result: QueryResult, max_evidence: int = 5) -> ResultView:
    reason = result.abstain_reason.value if result.abstain_reason is not None else None
    return ResultView(
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
    "Learned checks: none. VERITYRAG_ANSWERABILITY_CHECK=1, VERITYRAG_GUARD_CHECK=1 and "
    "VERITYRAG_READER_CHECK=1 turn them on (`make models` builds their models)."
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
