"""Verifying an answer against its evidence: is every claim supported, by whom, and how strictly.

- claim-level grounding (:class:`GroundingChecker`): is every claim supported by the chunks it cites?
- the verifiers users bring (:mod:`verityrag.verify.nli_verifier`, :mod:`verityrag.verify.detectors`,
  :class:`LLMJudgeVerifier`) and the NLI model trained here (:class:`LearnedNLI`), their ensembles,
  and :class:`VerifierStack` (cheapest first);
- strictness levels (:mod:`verityrag.verify.strictness`): what each does with unsupported sentences;
- provenance and corroboration by independent sources (:mod:`verityrag.verify.sources`).

Models load lazily, never at import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verityrag._lazy import lazy_exports

if TYPE_CHECKING:
    from verityrag.verify.claims import answer_claims as answer_claims
    from verityrag.verify.claims import split_claims as split_claims
    from verityrag.verify.ensemble import DualNLIVerifier as DualNLIVerifier
    from verityrag.verify.ensemble import EnsembleScorer as EnsembleScorer
    from verityrag.verify.ensemble import StackedScorer as StackedScorer
    from verityrag.verify.grounding import GroundingChecker as GroundingChecker
    from verityrag.verify.grounding import GroundingWeights as GroundingWeights
    from verityrag.verify.learned_nli import LearnedNLI as LearnedNLI
    from verityrag.verify.llm_judge import LLMJudgeVerifier as LLMJudgeVerifier
    from verityrag.verify.nli_verifier import CrossEncoderNLIVerifier as CrossEncoderNLIVerifier
    from verityrag.verify.nli_verifier import HFSequenceClassificationScorer as HFSequenceClassificationScorer
    from verityrag.verify.nli_verifier import NLIVerifier as NLIVerifier
    from verityrag.verify.protocols import NLIScorer as NLIScorer
    from verityrag.verify.protocols import VerificationResult as VerificationResult
    from verityrag.verify.protocols import Verifier as Verifier
    from verityrag.verify.stack import DeterministicVerifier as DeterministicVerifier
    from verityrag.verify.stack import VerifierStack as VerifierStack
    from verityrag.verify.strictness import STRICTNESS_TABLE as STRICTNESS_TABLE
    from verityrag.verify.strictness import apply_strictness as apply_strictness
    from verityrag.verify.strictness import strictness_policy as strictness_policy
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "verityrag.verify.claims": ("answer_claims", "split_claims"),
            "verityrag.verify.ensemble": ("DualNLIVerifier", "EnsembleScorer", "StackedScorer"),
            "verityrag.verify.grounding": ("GroundingChecker", "GroundingWeights"),
            "verityrag.verify.learned_nli": ("LearnedNLI",),
            "verityrag.verify.llm_judge": ("LLMJudgeVerifier",),
            "verityrag.verify.nli_verifier": (
                "CrossEncoderNLIVerifier",
                "HFSequenceClassificationScorer",
                "NLIVerifier",
            ),
            "verityrag.verify.protocols": ("NLIScorer", "VerificationResult", "Verifier"),
            "verityrag.verify.stack": ("DeterministicVerifier", "VerifierStack"),
            "verityrag.verify.strictness": ("STRICTNESS_TABLE", "apply_strictness", "strictness_policy"),
        },
    )

__all__ = [
    "STRICTNESS_TABLE",
    "CrossEncoderNLIVerifier",
    "DeterministicVerifier",
    "DualNLIVerifier",
    "EnsembleScorer",
    "GroundingChecker",
    "GroundingWeights",
    "HFSequenceClassificationScorer",
    "LLMJudgeVerifier",
    "LearnedNLI",
    "NLIScorer",
    "NLIVerifier",
    "StackedScorer",
    "VerificationResult",
    "Verifier",
    "VerifierStack",
    "answer_claims",
    "apply_strictness",
    "split_claims",
    "strictness_policy",
]
