"""``GroundingVerifier``: the claim-level :class:`GroundingChecker` behind the ``Verifier`` protocol.

The default verifier of LLM answers when no verification stack is configured: cheap
(a fraction of a millisecond per sentence), deterministic, and strict about numbers
and names, which is where a small model invents most. It does not see negation or
swapped roles (see :class:`~verityrag.verify.grounding.GroundingChecker`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from verityrag.errors import InvalidInputError
from verityrag.types import Chunk, Citation, CitedSentence, GroundingReport
from verityrag.verify.grounding import GroundingChecker
from verityrag.verify.protocols import VerificationResult, check_verify_arguments

__all__ = ["GroundingVerifier", "check_sentences"]


class GroundingVerifier:
    """Each sentence is checked against all ``documents`` together; supported when its
    weakest claim scores at least ``threshold`` (the agent's ``balanced`` level, 0.5, by default).
    """

    stage = "grounding"

    def __init__(self, checker: GroundingChecker | None = None, threshold: float = 0.5) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise InvalidInputError("threshold", f"must be in [0, 1], got {threshold!r}")
        self.checker = checker or GroundingChecker()
        self.threshold = threshold

    def __repr__(self) -> str:
        return f"GroundingVerifier(threshold={self.threshold})"

    def verify(self, sentences: Sequence[str], documents: Sequence[str]) -> list[VerificationResult]:
        return check_sentences(self.checker, sentences, documents, self.stage, self._result)

    def _result(self, sentence: str, report: GroundingReport) -> VerificationResult:
        weakest = min(report.claims, key=lambda c: c.support, default=None)
        supported = report.overall_score >= self.threshold
        reason = ""
        if weakest is not None and not supported:
            reason = _explain(weakest.claim, weakest.details)
        return VerificationResult(
            sentence=sentence,
            score=report.overall_score,
            supported=supported,
            stage=self.stage,
            reason=reason,
            details={
                "threshold": self.threshold,
                "claims": [{"claim": c.claim, "support": round(c.support, 4)} for c in report.claims],
            },
        )


def check_sentences(
    checker: GroundingChecker,
    sentences: Sequence[str],
    documents: Sequence[str],
    stage: str,
    judge: Callable[[str, GroundingReport], VerificationResult],
    *,
    prefix: str = "doc",
    skip_blank: bool = False,
) -> list[VerificationResult]:
    """Each sentence checked by ``checker`` against all ``documents`` together (chunks
    ``<prefix>0``, ``<prefix>1``, ...; blank ones left out when ``skip_blank``), its report turned
    into its result by ``judge``; with no evidence at all, every sentence fails."""
    check_verify_arguments(sentences, documents)
    chunks = {
        f"{prefix}{i}": Chunk(f"{prefix}{i}", f"{prefix}{i}", "", text, i, 0, len(text))
        for i, text in enumerate(documents)
        if text.strip() or not skip_blank
    }
    cites = tuple(Citation(c.chunk_id, c.doc_id, "", 0, len(c.text)) for c in chunks.values())
    results: list[VerificationResult] = []
    for sentence in sentences:
        if not chunks:
            results.append(VerificationResult(sentence, 0.0, False, stage, "no evidence to check against"))
            continue
        results.append(judge(sentence, checker.check([CitedSentence(sentence, cites)], chunks)))
    return results


def _explain(claim: str, details: dict[str, float]) -> str:
    """Which signal failed, in words the generator's feedback can pass on."""
    problems = []
    if details.get("numbers", 1.0) < 1.0:
        problems.append("a number or date in it is not in the evidence")
    if details.get("entities", 1.0) < 1.0:
        problems.append("a name in it is not in the evidence")
    if not problems:
        problems.append(f"only {details.get('lexical', 0.0):.0%} of its words are in the evidence")
    return f'claim "{claim}": ' + "; ".join(problems)
