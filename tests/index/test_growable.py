"""GrowableArray: append-only buffers that readers can hold while a writer grows them."""

from __future__ import annotations

import numpy as np
import pytest

from verityrag.index._growable import GrowableArray

pytestmark = pytest.mark.unit


def test_extend_returns_first_row_and_grows_capacity() -> None:
    arr = GrowableArray(np.int32, capacity=2)
    assert arr.extend([1, 2]) == 0
    assert arr.extend([3, 4, 5]) == 2
    assert arr.size == 5
    assert len(arr.buf) >= 5
    assert arr.buf[:5].tolist() == [1, 2, 3, 4, 5]


def test_extend_past_capacity_leaves_old_buffer_reference_intact() -> None:
    arr = GrowableArray(np.float32, width=3, capacity=2)
    arr.extend(np.ones((2, 3)))
    held = arr.buf
    arr.extend(np.full((3, 3), 2.0))
    assert arr.buf is not held
    assert held.tolist() == [[1.0] * 3] * 2
    assert arr.buf[:5, 0].tolist() == [1.0, 1.0, 2.0, 2.0, 2.0]


def test_reserve_fills_new_rows_with_fill_value() -> None:
    arr = GrowableArray(np.int64, capacity=1, fill=-7)
    arr.reserve(5)
    assert (arr.buf == -7).all()
    assert arr.size == 0
