"""What the vector stores ask of a snapshot: which slots a reader sees.

:class:`~verityrag.index.snapshot.IndexSnapshot` is one; the stores (``_vectors``, ``_hnsw``)
sit below the snapshot that holds them, so they name this much of it and no more.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt


class VisibleSlots(Protocol):
    """A reader's view of the slots: those below ``n_slots`` that died after ``version``."""

    @property
    def version(self) -> int: ...

    @property
    def n_slots(self) -> int: ...

    @property
    def n_live(self) -> int: ...

    @property
    def n_dead(self) -> int: ...

    @property
    def died(self) -> npt.NDArray[np.int64]: ...

    def is_visible(self, slot: int) -> bool: ...

    def live_slots(self) -> npt.NDArray[np.int64]: ...
