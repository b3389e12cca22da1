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

from __future__ import annotations

from typing import TYPE_CHECKING

from verityrag._lazy import lazy_exports

if TYPE_CHECKING:
    from verityrag.checks.answer_check import AnswerCheck as AnswerCheck
    from verityrag.checks.answerability import LearnedAnswerability as LearnedAnswerability
    from verityrag.checks.claims import answer_claims as answer_claims
    from verityrag.checks.claims import split_claims as split_claims
    from verityrag.checks.ensemble import DualNLIVerifier as DualNLIVerifier
    from verityrag.checks.ensemble import EnsembleScorer as EnsembleScorer
    from verityrag.checks.ensemble import StackedScorer as StackedScorer
    from verityrag.checks.grounding import GroundingChecker as GroundingChecker
    from verityrag.checks.grounding import GroundingWeights as GroundingWeights
    from verityrag.checks.guard import LearnedGuard as LearnedGuard
    from verityrag.checks.learned_nli import LearnedNLI as LearnedNLI
    from verityrag.checks.llm_judge import LLMJudgeVerifier as LLMJudgeVerifier
    from verityrag.checks.nli_verifier import CrossEncoderNLIVerifier as CrossEncoderNLIVerifier
    from verityrag.checks.nli_verifier import HFSequenceClassificationScorer as HFSequenceClassificationScorer
    from verityrag.checks.nli_verifier import NLIVerifier as NLIVerifier
    from verityrag.checks.precision_thresholds import IsotonicCalibrator as IsotonicCalibrator
    from verityrag.checks.precision_thresholds import confirm_threshold as confirm_threshold
    from verityrag.checks.precision_thresholds import pick_threshold as pick_threshold
    from verityrag.checks.protocols import NLIScorer as NLIScorer
    from verityrag.checks.protocols import VerificationResult as VerificationResult
    from verityrag.checks.protocols import Verifier as Verifier
    from verityrag.checks.reader_check import ReaderCheck as ReaderCheck
    from verityrag.checks.registry import CHECK_ATTRIBUTES as CHECK_ATTRIBUTES
    from verityrag.checks.registry import load_check as load_check
    from verityrag.checks.registry import requested_checks as requested_checks
    from verityrag.checks.stack import DeterministicVerifier as DeterministicVerifier
    from verityrag.checks.stack import VerifierStack as VerifierStack
    from verityrag.checks.strictness import STRICTNESS_TABLE as STRICTNESS_TABLE
    from verityrag.checks.strictness import apply_strictness as apply_strictness
    from verityrag.checks.strictness import strictness_policy as strictness_policy
    from verityrag.checks.thresholds import ThresholdFit as ThresholdFit
    from verityrag.checks.thresholds import fit_thresholds as fit_thresholds
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "verityrag.checks.answer_check": ("AnswerCheck",),
            "verityrag.checks.answerability": ("LearnedAnswerability",),
            "verityrag.checks.claims": (
                "answer_claims",
                "split_claims",
            ),
            "verityrag.checks.ensemble": (
                "DualNLIVerifier",
                "EnsembleScorer",
                "StackedScorer",
            ),
            "verityrag.checks.grounding": (
                "GroundingChecker",
                "GroundingWeights",
            ),
            "verityrag.checks.guard": ("LearnedGuard",),
            "verityrag.checks.learned_nli": ("LearnedNLI",),
            "verityrag.checks.llm_judge": ("LLMJudgeVerifier",),
            "verityrag.checks.nli_verifier": (
                "CrossEncoderNLIVerifier",
                "HFSequenceClassificationScorer",
                "NLIVerifier",
            ),
            "verityrag.checks.precision_thresholds": (
                "IsotonicCalibrator",
                "confirm_threshold",
                "pick_threshold",
            ),
            "verityrag.checks.protocols": (
                "NLIScorer",
                "VerificationResult",
                "Verifier",
            ),
            "verityrag.checks.reader_check": ("ReaderCheck",),
            "verityrag.checks.registry": (
                "CHECK_ATTRIBUTES",
                "load_check",
                "requested_checks",
            ),
            "verityrag.checks.stack": (
                "DeterministicVerifier",
                "VerifierStack",
            ),
            "verityrag.checks.strictness": (
                "STRICTNESS_TABLE",
                "apply_strictness",
                "strictness_policy",
            ),
            "verityrag.checks.thresholds": (
                "ThresholdFit",
                "fit_thresholds",
            ),
        },
    )

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
