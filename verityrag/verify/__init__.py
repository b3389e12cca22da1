"""Verification: claim-level grounding of an answer against the evidence it cites."""

from verityrag.verify.calibration import IsotonicCalibrator, confirm_threshold, pick_threshold
from verityrag.verify.claims import answer_claims, split_claims
from verityrag.verify.ensemble import DualNLIVerifier, EnsembleScorer, StackedScorer
from verityrag.verify.grounding import GroundingChecker, GroundingWeights
from verityrag.verify.llm_judge import LLMJudgeVerifier
from verityrag.verify.nli import CrossEncoderNLIVerifier, HFSequenceClassificationScorer, NLIVerifier
from verityrag.verify.protocols import NLIScorer, VerificationResult, Verifier
from verityrag.verify.stack import DeterministicVerifier, VerifierStack
from verityrag.verify.strictness import STRICTNESS_TABLE, apply_strictness, strictness_policy

__all__ = [
    "STRICTNESS_TABLE",
    "CrossEncoderNLIVerifier",
    "DeterministicVerifier",
    "DualNLIVerifier",
    "EnsembleScorer",
    "GroundingChecker",
    "GroundingWeights",
    "HFSequenceClassificationScorer",
    "IsotonicCalibrator",
    "LLMJudgeVerifier",
    "NLIScorer",
    "NLIVerifier",
    "StackedScorer",
    "VerificationResult",
    "Verifier",
    "VerifierStack",
    "answer_claims",
    "apply_strictness",
    "confirm_threshold",
    "pick_threshold",
    "split_claims",
    "strictness_policy",
]
