"""The dense scan of a sparse query compiled with numba: ``target += weight[r] * block[r, :]``
for each of the query's nonzero dimensions ``r``, in one pass over each column row.

numpy does each row in two calls (the product into a scratch array, then the sum), so every
row's values went through memory three times as float32, where the int8 columns are a quarter
of that. Here each int8 (or float32) value is read once and its product added at once, with the
same float32 operations in the same order per slot (a row's product rounded, then added, rows in
order): the same sums, bit for bit. The numpy loop stays the reference (differential tests) and
serves without numba.
"""

from __future__ import annotations

from typing import Any

try:
    from verityrag.embed._jit import compiled
except ImportError:  # pragma: no cover - numba is in requirements.txt; the numpy loop serves
    AVAILABLE = False
else:
    AVAILABLE = True


def add_rows(block: Any, rows: Any, weights: Any, cols: int, target: Any) -> None:
    """``target[j] += float32(block[r, j]) * weights[r]`` for ``j < cols``, each ``r`` of ``rows`` in order."""
    for r in rows:
        w = weights[r]
        values = block[r]
        for j in range(cols):
            target[j] += values[j] * w


if AVAILABLE:
    add_rows = compiled(add_rows)
