"""Verification: claim-level grounding of an answer against the evidence it cites."""

from verityrag.verify.claims import answer_claims, split_claims
from verityrag.verify.grounding import GroundingChecker, GroundingWeights

__all__ = ["GroundingChecker", "GroundingWeights", "answer_claims", "split_claims"]
