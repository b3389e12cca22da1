"""Base of the learned checks the agent calls: a model folder, a threshold, lazy load."""

from __future__ import annotations

import os
from pathlib import Path

from verityrag.crossenc.scorer import OnnxCrossEncoder
from verityrag.errors import InvalidInputError


class LearnedPairCheck:
    """A cross-encoder folder found by an env var (else a default), with a decision threshold.

    ``threshold``: None means the one in ``metadata.json`` (chosen when the model was
    built); reading it loads only the metadata. The ONNX session loads on the first
    ``score`` or on :meth:`warm_up`, which also checks that every file is there.
    """

    what = "learned check"
    env_var = ""
    default_dir = Path("guard_work")
    build_command = "make models"

    def __init__(self, model_dir: Path | str | None = None, threshold: float | None = None) -> None:
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise InvalidInputError("threshold", f"must be in [0, 1], got {threshold}")
        self.model_dir = Path(model_dir or os.environ.get(self.env_var) or self.default_dir)
        self._threshold = threshold
        self.scorer = OnnxCrossEncoder(self.model_dir, what=self.what, build_command=self.build_command)

    @property
    def threshold(self) -> float:
        if self._threshold is None:
            self._threshold = self.scorer.metadata.threshold
        return self._threshold

    @threshold.setter
    def threshold(self, value: float) -> None:
        if not 0.0 <= value <= 1.0:
            raise InvalidInputError("threshold", f"must be in [0, 1], got {value}")
        self._threshold = value

    def warm_up(self) -> LearnedPairCheck:
        """Check the files (clear error naming what is missing) and load the session."""
        self.scorer.warm_up()
        return self
