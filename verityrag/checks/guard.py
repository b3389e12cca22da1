"""``LearnedGuard`` (Verity-Guard): is this answer supported by this evidence?

Implements the controller's ``AnswerGuard`` protocol (``threshold``,
``score(evidence, answer) -> probability``) with a cross-encoder trained here
(python -m verityrag.train guard, HaluEval QA with sentence-style augmentation) and served as
int8 ONNX. The evidence is trimmed to the sentences most relevant to the answer, as in
training, and scored window by window (max). An answer of several sentences is
scored sentence by sentence (the model was trained on one-sentence answers), each
against the evidence trimmed for it, and the least supported sentence decides (min):
every sentence must be supported, and nothing is cut.

    from verityrag.agent.controller import AgentController
    AgentController(..., answer_guard=LearnedGuard())    # <models root>/guard
    LearnedGuard.from_settings(Settings.from_env())      # VERITYRAG_GUARD_DIR, else that
    LearnedGuard(answers_from="gemma")  # the threshold fitted on a small LLM's answers

The right threshold depends on who writes the answers. ``metadata.json`` records the
default (at most 10% of HaluEval's validation answers flagged: short human-written
answers) and, under ``metrics.threshold_by_validation_source``, the same rule applied to
other answer sources (``gemma``: gemma-3-270m's answers, python -m verityrag.train gemma-answers).
For the guard rebuilt in session 15 they are 0.946 (HaluEval) and 0.055 (gemma): at the
HaluEval threshold it flags 62.5% of gemma's *supported* test answers
(scripts/results/crossenc_guard.json).
"""

from __future__ import annotations

from pathlib import Path

from verityrag.checks.learned_check import SentenceSupportCheck
from verityrag.errors import InvalidInputError, ModelLoadError
from verityrag.models.folder import model_folder

DEFAULT_GUARD_DIR = model_folder("guard")
BUILD_GUARD = "make models-guard"
#: Word budget of trimmed evidence, the same in training (python -m verityrag.train guard-data).
EVIDENCE_WORDS = 80
#: ``metadata.json`` metrics key: answer source -> threshold fitted on its validation answers.
THRESHOLDS_BY_SOURCE_KEY = "threshold_by_validation_source"

__all__ = ["DEFAULT_GUARD_DIR", "THRESHOLDS_BY_SOURCE_KEY", "LearnedGuard"]


class LearnedGuard(SentenceSupportCheck):
    """The Verity-Guard cross-encoder, loaded from ``model_dir`` (``Settings.guard_dir``,
    ``VERITYRAG_GUARD_DIR``; default ``guard`` under the models root, :mod:`verityrag.models.folder`).

    ``threshold``: a fixed decision threshold. ``answers_from``: instead, the threshold the
    model folder records for answers from that source (e.g. ``"gemma"``); an unknown source
    is an error naming the recorded ones. Neither: the metadata's default threshold.
    """

    what = "the Verity-Guard model"
    folder_name = DEFAULT_GUARD_DIR.name
    settings_field = "guard_dir"
    build_command = BUILD_GUARD
    evidence_words = EVIDENCE_WORDS

    def __init__(
        self,
        model_dir: Path | str | None = None,
        threshold: float | None = None,
        answers_from: str | None = None,
    ) -> None:
        if threshold is not None and answers_from is not None:
            raise InvalidInputError("answers_from", "give a threshold or an answer source, not both")
        super().__init__(model_dir, threshold)
        self.answers_from = answers_from

    def recorded_threshold(self) -> float:
        if self.answers_from is None:
            return super().recorded_threshold()
        metrics = self.scorer.metadata.metrics
        recorded = (metrics.get(THRESHOLDS_BY_SOURCE_KEY) if isinstance(metrics, dict) else None) or {}
        metadata_file = str(self.model_dir / "metadata.json")
        if not isinstance(recorded, dict):
            raise ModelLoadError(
                self.what,
                [(metadata_file, f"metrics.{THRESHOLDS_BY_SOURCE_KEY} is not a mapping: {recorded!r}")],
            )
        if self.answers_from not in recorded:
            known = ", ".join(sorted(recorded)) or "none"
            raise InvalidInputError(
                "answers_from",
                f"{self.model_dir}/metadata.json records no threshold for {self.answers_from!r} answers "
                f"(recorded: {known}); `make models-guard` fits them",
            )
        value = recorded[self.answers_from]
        # Read past the threshold setter: check here what it would, naming the file, not later
        # as a bare float() error or a threshold no score can reach.
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
            raise ModelLoadError(
                self.what,
                [
                    (
                        metadata_file,
                        f"metrics.{THRESHOLDS_BY_SOURCE_KEY}.{self.answers_from} is {value!r}, "
                        "not a threshold in [0, 1]; `make models-guard` fits them",
                    )
                ],
            )
        return float(value)
