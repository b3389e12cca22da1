"""numba's ``njit(cache=True, nogil=True)`` that still compiles where no cache folder is writable.

numba caches compiled code beside the source (``__pycache__``) or in the user's cache folder
(``~/.cache/numba``); when neither is writable (a read-only install run by a user whose HOME is
not writable) ``njit(cache=True)`` raises at import, so nothing of VerityRAG could start until
``NUMBA_CACHE_DIR`` was set. Here the cache then moves to a folder of this user's under the
system's temporary folder, and when even that fails the code is compiled without a cache.
Here in ``embed``, the lowest layer that compiles code; the index's kernels use it too.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numba

__all__ = ["compiled", "fallback_cache_dir"]

F = TypeVar("F", bound=Callable[..., Any])


def fallback_cache_dir() -> Path:
    """Where the compiled code is cached when numba finds no writable place of its own."""
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"verityrag-numba-cache-{uid}"


def compiled(func: F) -> F:
    """``func`` compiled in nopython mode, releasing the GIL, its machine code cached on disk."""
    jitted: Any
    try:
        jitted = numba.njit(cache=True, nogil=True)(func)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        jitted = _with_fallback_cache(func)
    return jitted  # type: ignore[no-any-return]


def _with_fallback_cache(func: Callable[..., Any]) -> Any:
    config: Any = numba.config
    if not config.CACHE_DIR:
        folder = fallback_cache_dir()
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError:
            return numba.njit(nogil=True)(func)
        config.CACHE_DIR = str(folder)
        try:
            return numba.njit(cache=True, nogil=True)(func)
        except RuntimeError:
            pass
    return numba.njit(nogil=True)(func)
