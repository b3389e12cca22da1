"""Every check of an answer: each a small object with a score, a threshold and ``warm_up()``.

- claim-level grounding (:class:`GroundingChecker`): is every claim supported by the chunks it cites?
- the learned checks trained here: :class:`LearnedAnswerability` (question, evidence),
  :class:`LearnedGuard` (evidence, answer), :class:`ReaderCheck` (question, evidence, answer) and
  :class:`LearnedNLI` (a pair scorer for the verifier stack);
- the verifiers users bring (:mod:`verityrag.checks.nli_verifier`, :mod:`verityrag.checks.detectors`,
  :class:`LLMJudgeVerifier`), their ensembles, and :class:`VerifierStack` (cheapest first);
- strictness levels, and how thresholds are chosen (:mod:`verityrag.checks.thresholds` for the
  learned checks, :mod:`verityrag.checks.precision_thresholds` for a stated precision).

:mod:`verityrag.checks.registry` loads the learned checks by stage. Models load lazily, never at import.
"""

from verityrag.checks.answer_check import AnswerCheck
from verityrag.checks.answerability import LearnedAnswerability
from verityrag.checks.claims import answer_claims, split_claims
from verityrag.checks.ensemble import DualNLIVerifier, EnsembleScorer, StackedScorer
from verityrag.checks.grounding import GroundingChecker, GroundingWeights
from verityrag.checks.guard import LearnedGuard
from verityrag.checks.learned_nli import LearnedNLI
from verityrag.checks.llm_judge import LLMJudgeVerifier
from verityrag.checks.nli_verifier import CrossEncoderNLIVerifier, HFSequenceClassificationScorer, NLIVerifier
from verityrag.checks.precision_thresholds import IsotonicCalibrator, confirm_threshold, pick_threshold
from verityrag.checks.protocols import NLIScorer, VerificationResult, Verifier
from verityrag.checks.reader_check import ReaderCheck
from verityrag.checks.registry import CHECK_ATTRIBUTES, load_check, requested_checks
from verityrag.checks.stack import DeterministicVerifier, VerifierStack
from verityrag.checks.strictness import STRICTNESS_TABLE, apply_strictness, strictness_policy
from verityrag.checks.thresholds import ThresholdFit, fit_thresholds

__all__ = [
    "CHECK_ATTRIBUTES",
    "STRICTNESS_TABLE",
    "AnswerCheck",
    "CrossEncoderNLIVerifier",
    "DeterministicVerifier",
    "DualNLIVerifier",
    "EnsembleScorer",
    "GroundingChecker",
    "GroundingWeights",
    "HFSequenceClassificationScorer",
    "IsotonicCalibrator",
    "LLMJudgeVerifier",
    "LearnedAnswerability",
    "LearnedGuard",
    "LearnedNLI",
    "NLIScorer",
    "NLIVerifier",
    "ReaderCheck",
    "StackedScorer",
    "ThresholdFit",
    "VerificationResult",
    "Verifier",
    "VerifierStack",
    "answer_claims",
    "apply_strictness",
    "confirm_threshold",
    "fit_thresholds",
    "load_check",
    "pick_threshold",
    "requested_checks",
    "split_claims",
    "strictness_policy",
]
