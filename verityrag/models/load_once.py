"""``LoadsOnce``: a model loaded on first use, once, whichever thread asks first.

The base of everything here that serves a model it loads lazily (ONNX sessions, Hugging Face
models, spaCy): ``warm_up()`` takes the lock only while nothing is loaded, calls ``_load()`` once,
and the threads that waited find it done.
"""

from __future__ import annotations

import threading
from typing import Self


class LoadsOnce:
    """``warm_up()`` runs ``_load()`` once (idempotent, thread-safe) and returns the object.

    ``_load`` publishes what ``_is_loaded`` reads last, so a thread that sees it loaded sees
    everything loaded with it; a ``_load`` that raises leaves it unloaded, to be tried again.
    """

    _lock: threading.Lock

    def _is_loaded(self) -> bool:
        raise NotImplementedError

    def _load(self) -> None:
        raise NotImplementedError

    def warm_up(self) -> Self:
        """Load the model (idempotent, thread-safe)."""
        if not self._is_loaded():
            with self._lock:
                if not self._is_loaded():
                    self._load()
        return self
