"""Base of the learned checks the agent calls: a model folder, a threshold, lazy load."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from verityrag.errors import InvalidInputError
from verityrag.models.encoding import LongSide
from verityrag.models.evidence import trim_evidence
from verityrag.models.folder import model_folder
from verityrag.models.scorer import OnnxCrossEncoder
from verityrag.text.sentences import split_sentences

if TYPE_CHECKING:
    from verityrag.config import Settings


class ThresholdedCheck:
    """A decision threshold in [0, 1]: given, or (None) :meth:`recorded_threshold` on first read.

    ``recorded_threshold()`` is the one the model folder records for this check (the eval
    reports it beside the threshold it chooses).
    """

    def __init__(self, threshold: float | None = None) -> None:
        self._threshold: float | None = None
        if threshold is not None:
            self.threshold = threshold

    @property
    def threshold(self) -> float:
        if self._threshold is None:
            self._threshold = self.recorded_threshold()
        return self._threshold

    @threshold.setter
    def threshold(self, value: float) -> None:
        if not 0.0 <= value <= 1.0:
            raise InvalidInputError("threshold", f"must be in [0, 1], got {value}")
        self._threshold = value

    def recorded_threshold(self) -> float:
        raise NotImplementedError


class LearnedPairCheck(ThresholdedCheck):
    """A cross-encoder in ``model_dir``, with a decision threshold.

    ``model_dir``: None means ``folder_name`` under the default models root; the environment is
    never read here: an entry point passes the folder its settings name (:meth:`from_settings`).
    ``threshold``: None means the one in ``metadata.json`` (chosen when the model was
    built); reading it loads only the metadata. The ONNX session loads on the first
    ``score`` or on :meth:`warm_up`, which also checks that every file is there.
    """

    what = "learned check"
    #: The folder's name under the models root, and the ``Settings`` field that names another folder.
    folder_name = ""
    settings_field = ""
    build_command = "make models"
    #: Where this check's pairs carry the evidence; a folder that windows the other side is refused.
    long_side: LongSide | None = None

    def __init__(self, model_dir: Path | str | None = None, threshold: float | None = None) -> None:
        super().__init__(threshold)
        self.model_dir = Path(model_dir) if model_dir else model_folder(self.folder_name)
        self.scorer = OnnxCrossEncoder(
            self.model_dir, what=self.what, build_command=self.build_command, long_side=self.long_side
        )

    @classmethod
    def folder(cls, settings: Settings) -> Path:
        """The folder ``settings`` name for this check: its own field, else ``folder_name`` under
        ``settings.models_dir``."""
        named = getattr(settings, cls.settings_field)
        return Path(named) if named else model_folder(cls.folder_name, settings.models_dir)

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> Self:
        """The check in :meth:`folder` of ``settings``; ``kwargs`` go to the constructor."""
        return cls(cls.folder(settings), **kwargs)

    def recorded_threshold(self) -> float:
        """The threshold when none was given: the one ``metadata.json`` records."""
        return self.scorer.metadata.threshold

    def warm_up(self) -> LearnedPairCheck:
        """Check the files (clear error naming what is missing) and load the session."""
        self.scorer.warm_up()
        return self


def _states_something(sentence: str) -> bool:
    return _LIST_MARKER.fullmatch(sentence) is None


#: What a sentence splitter leaves of a numbered or bulleted list: "6.", "(3)", "*".
_LIST_MARKER = re.compile(r"\s*(\(?\d{1,2}[.)]|[*\u2022-])\s*")


class SentenceSupportCheck(LearnedPairCheck):
    """A support model trained on one-sentence hypotheses: (evidence, answer) -> P(supported).

    An answer is scored sentence by sentence, each against the evidence trimmed to the
    ``evidence_words`` words most relevant to it (as in training), and the least supported
    sentence decides (min): every sentence must be supported, and nothing is cut. A
    "sentence" that is only a list marker ("6.", "(3)", "*", what a splitter leaves of a
    numbered list) states nothing and is skipped, unless the whole answer is one. Also an
    ``NLIScorer`` (``score_pairs``) and an ``AnswerGuard`` (``score`` / ``threshold``).
    """

    evidence_words = 80
    long_side: LongSide | None = "first"

    def score(self, evidence: str, answer: str) -> float:
        return self.score_pairs([(evidence, answer)])[0]

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """(evidence, answer) pairs in one batch: min over each answer's sentences."""
        expanded: list[tuple[str, str]] = []
        owner: list[int] = []
        for i, (evidence, answer) in enumerate(pairs):
            if not answer.strip():
                raise InvalidInputError(f"pairs[{i}]", "the answer is empty")
            sentences = [s for s in split_sentences(answer) if _states_something(s)] or [answer]
            expanded += [(trim_evidence(s, evidence, self.evidence_words), s) for s in sentences]
            owner += [i] * len(sentences)
        scores = [1.0] * len(pairs)
        for i, s in zip(owner, self.scorer.score_pairs(expanded), strict=True):
            scores[i] = min(scores[i], s)
        return scores
