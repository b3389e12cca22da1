"""``LearnedGuard`` (Verity-Guard): is this answer supported by this evidence?

Implements the controller's ``AnswerGuard`` protocol (``threshold``,
``score(evidence, answer) -> probability``) with a cross-encoder trained here
(scripts/guard_train.py, HaluEval QA with sentence-style augmentation) and served as
int8 ONNX. The evidence is trimmed to the sentences most relevant to the answer, as in
training, and scored window by window (max). An answer of several sentences is
scored sentence by sentence (the model was trained on one-sentence answers), each
against the evidence trimmed for it, and the least supported sentence decides (min):
every sentence must be supported, and nothing is cut.

    from verityrag.agent.controller import AgentController
    AgentController(..., answer_guard=LearnedGuard())    # VERITY_GUARD_DIR or guard_work/guard
"""

from __future__ import annotations

from pathlib import Path

from verityrag.crossenc.learned import SentenceSupportCheck

GUARD_DIR_ENV = "VERITY_GUARD_DIR"
DEFAULT_GUARD_DIR = Path("guard_work/guard")
BUILD_GUARD = "make models-guard"
#: Word budget of trimmed evidence, the same in training (scripts/guard_data.py).
EVIDENCE_WORDS = 80

__all__ = ["DEFAULT_GUARD_DIR", "GUARD_DIR_ENV", "LearnedGuard"]


class LearnedGuard(SentenceSupportCheck):
    """The Verity-Guard cross-encoder, loaded from ``VERITY_GUARD_DIR`` (default guard_work/guard)."""

    what = "the Verity-Guard model"
    env_var = GUARD_DIR_ENV
    default_dir = DEFAULT_GUARD_DIR
    build_command = BUILD_GUARD
    evidence_words = EVIDENCE_WORDS
