"""The two contracts of the checking side: pair scorers and sentence verifiers.

``NLIScorer`` is the narrow model contract (a cross-encoder, an ensemble, a lexical
baseline). ``Verifier`` is what the LLM answer strategies (``RejectAndRetry``, ``BestOfN``)
call: it judges answer sentences against the documents they rest on and says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from verityrag.errors import InvalidInputError


@runtime_checkable
class NLIScorer(Protocol):
    """Scores (premise, hypothesis) pairs: the probability the premise supports the hypothesis."""

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]: ...


@dataclass(frozen=True, slots=True)
class VerificationResult:
    """The verdict on one answer sentence.

    ``score`` is in 0..1 (probability of support); ``supported`` is the verdict after the
    verifier's threshold; ``stage`` names the check that decided it; ``error`` is set when the
    verifier could not decide (a transport error, a malformed verdict) and the policy applied.
    """

    sentence: str
    score: float
    supported: bool
    stage: str
    reason: str = ""
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Verifier(Protocol):
    """Judges each sentence against the documents (evidence texts) it is checked against."""

    def verify(self, sentences: Sequence[str], documents: Sequence[str]) -> list[VerificationResult]: ...


def check_verify_arguments(sentences: Sequence[str], documents: Sequence[str]) -> None:
    """Refuse what ``verify`` cannot judge, naming the field.

    A bare string is a ``Sequence[str]`` too: ``verify("A claim.", docs)`` would judge each
    character, and ``verify(claims, "the evidence")`` would check against single letters, so
    either silently gives wrong verdicts. A non-string item (``None``) would fail deep inside.
    """
    for name, value in (("sentences", sentences), ("documents", documents)):
        if isinstance(value, str):
            raise InvalidInputError(name, "must be a list of strings, got one string: wrap it in a list")
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise InvalidInputError(f"{name}[{i}]", f"must be a string, got {type(item).__name__}")
