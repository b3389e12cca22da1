"""``GroundingVerifier``: the claim-level :class:`GroundingChecker` behind the ``Verifier`` protocol.

The default verifier of LLM answers when no verification stack is configured: cheap
(a fraction of a millisecond per sentence), deterministic, and strict about numbers
and names, which is where a small model invents most. It does not see negation or
swapped roles (see :class:`~verityrag.verify.grounding.GroundingChecker`).
"""

from __future__ import annotations

from collections.abc import Sequence

from verityrag.errors import InvalidInputError
from verityrag.types import Chunk, Citation, CitedSentence
from verityrag.verify.grounding import GroundingChecker
from verityrag.verify.protocols import VerificationResult, check_verify_arguments

__all__ = ["GroundingVerifier"]


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
        check_verify_arguments(sentences, documents)
        chunks = {
            f"doc{i}": Chunk(f"doc{i}", f"doc{i}", "", text, i, 0, len(text))
            for i, text in enumerate(documents)
        }
        cites = tuple(Citation(c.chunk_id, c.doc_id, "", 0, len(c.text)) for c in chunks.values())
        results: list[VerificationResult] = []
        for sentence in sentences:
            if not chunks:
                results.append(
                    VerificationResult(sentence, 0.0, False, self.stage, "no evidence to check against")
                )
                continue
            report = self.checker.check([CitedSentence(sentence, cites)], chunks)
            weakest = min(report.claims, key=lambda c: c.support, default=None)
            supported = report.overall_score >= self.threshold
            reason = ""
            if weakest is not None and not supported:
                reason = _explain(weakest.claim, weakest.details)
            results.append(
                VerificationResult(
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
            )
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
