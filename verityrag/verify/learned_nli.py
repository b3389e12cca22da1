"""``LearnedNLI``: the NLI verifier model trained here, served as int8 ONNX.

No NLI weights can be had offline, so python -m verityrag.train nli-data makes (premise, one-sentence
hypothesis) pairs from SQuAD 2.0 paragraphs (copied, restated, partial and merged
sentences against answer-swapped, other-paragraph, half-foreign and false-premise ones,
all with the same random rewording) and HaluEval, and python -m verityrag.train nli trains a
MiniLM cross-encoder on them (warm-started from Verity-Guard when it is there). At run time an
answer is scored sentence by sentence against the evidence trimmed for each sentence,
and the least supported sentence decides (:class:`SentenceSupportCheck`).

    from verityrag.verify import NLIVerifier
    NLIVerifier(LearnedNLI())            # <models root>/nli
    NLIVerifier(LearnedNLI.from_settings(Settings.from_env()))  # VERITYRAG_NLI_DIR, else that
"""

from __future__ import annotations

from verityrag.checks.learned_check import SentenceSupportCheck
from verityrag.models.folder import model_folder

DEFAULT_NLI_DIR = model_folder("nli")
BUILD_NLI = "make models-nli"
#: Word budget of trimmed evidence, the same in training (python -m verityrag.train nli-data).
EVIDENCE_WORDS = 80

__all__ = ["DEFAULT_NLI_DIR", "EVIDENCE_WORDS", "LearnedNLI"]


class LearnedNLI(SentenceSupportCheck):
    """The NLI cross-encoder, loaded from ``model_dir`` (``Settings.nli_dir``, ``VERITYRAG_NLI_DIR``;
    default ``nli`` under the models root, :mod:`verityrag.models.folder`)."""

    what = "the NLI verifier model"
    folder_name = DEFAULT_NLI_DIR.name
    settings_field = "nli_dir"
    build_command = BUILD_NLI
    evidence_words = EVIDENCE_WORDS
