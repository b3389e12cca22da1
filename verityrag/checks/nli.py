"""``LearnedNLI``: the NLI verifier model trained here, served as int8 ONNX.

No NLI weights can be had offline, so python -m verityrag.train nli-data makes (premise, one-sentence
hypothesis) pairs from SQuAD 2.0 paragraphs (copied, restated, partial and merged
sentences against answer-swapped, other-paragraph, half-foreign and false-premise ones,
all with the same random rewording) and HaluEval, and python -m verityrag.train nli trains a
MiniLM cross-encoder on them (warm-started from Verity-Guard when it is there). At run time an
answer is scored sentence by sentence against the evidence trimmed for each sentence,
and the least supported sentence decides (:class:`SentenceSupportCheck`).

    from verityrag.verify import NLIVerifier
    NLIVerifier(LearnedNLI())            # VERITY_NLI_DIR or guard_work/nli
"""

from __future__ import annotations

from pathlib import Path

from verityrag.checks.base import SentenceSupportCheck

NLI_DIR_ENV = "VERITY_NLI_DIR"
DEFAULT_NLI_DIR = Path("guard_work/nli")
BUILD_NLI = "make models-nli"
#: Word budget of trimmed evidence, the same in training (python -m verityrag.train nli-data).
EVIDENCE_WORDS = 80

__all__ = ["DEFAULT_NLI_DIR", "EVIDENCE_WORDS", "NLI_DIR_ENV", "LearnedNLI"]


class LearnedNLI(SentenceSupportCheck):
    """The NLI cross-encoder, loaded from ``VERITY_NLI_DIR`` (default guard_work/nli)."""

    what = "the NLI verifier model"
    env_var = NLI_DIR_ENV
    default_dir = DEFAULT_NLI_DIR
    build_command = BUILD_NLI
    evidence_words = EVIDENCE_WORDS
