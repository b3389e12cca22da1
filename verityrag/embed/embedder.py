"""The embedder contract: ``encode(texts) -> float32 [n, d]``, rows L2-normalised."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

FloatMatrix = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors. ``fingerprint`` changes whenever the vectors would."""

    @property
    def dim(self) -> int: ...

    def fingerprint(self) -> str: ...

    def encode(self, texts: Sequence[str]) -> FloatMatrix: ...


def l2_normalise(matrix: FloatMatrix) -> FloatMatrix:
    """Scale rows to unit length; all-zero rows (text with no terms) stay zero."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.maximum(norms, 1e-12, out=norms)
    return np.asarray(matrix / norms, dtype=np.float32)
