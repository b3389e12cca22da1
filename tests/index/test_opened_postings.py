"""Postings opened from an index image: each term's posting made when first asked for, the
same arrays as the packed ones, a writer's newer posting kept, everything made for a walk."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from verityrag.index.snapshot import OpenedPostings, PackedPostings, Posting

pytestmark = pytest.mark.unit


def _postings() -> dict[str, Posting]:
    return {
        "ferry": Posting(np.array([0, 3, 9, 0], np.int32), np.array([1, 2, 1, 0], np.uint16), 3),
        "mill": Posting(np.array([4], np.int32), np.array([70_000], np.uint32), 1),  # wide frequencies
        "oban": Posting(np.array([1, 2], np.int32), np.array([5, 1], np.uint16), 2),
    }


def _opened() -> OpenedPostings:
    return pickle.loads(pickle.dumps(PackedPostings.pack(_postings()))).unpack()


def test_a_term_is_made_when_first_asked_for_with_the_packed_lists() -> None:
    opened = _opened()
    assert dict.__len__(opened) == 0  # nothing made at the start
    ferry = opened.get("ferry")
    assert ferry is not None
    assert (ferry.slots.tolist(), ferry.tfs.tolist(), ferry.n) == ([0, 3, 9], [1, 2, 1], 3)
    mill = opened["mill"]
    assert (mill.tfs.dtype, mill.tfs.tolist()) == (np.dtype(np.uint32), [70_000])
    assert opened.get("ferry") is ferry  # made once
    assert dict.__len__(opened) == 2
    assert opened.get("absent") is None
    assert "oban" in opened
    assert "absent" not in opened
    with pytest.raises(KeyError):
        opened["absent"]


def test_a_writers_newer_posting_is_kept_and_a_walk_makes_the_rest() -> None:
    opened = _opened()
    newer = Posting(np.array([1, 2, 7], np.int32), np.array([5, 1, 1], np.uint16), 3)
    assert opened.get("oban") is not None
    opened["oban"] = newer
    opened["pier"] = Posting(np.array([8], np.int32), np.array([1], np.uint16), 1)  # a new term
    assert opened.get("oban") is newer
    assert sorted(opened) == ["ferry", "mill", "oban", "pier"]
    assert len(opened) == 4
    assert opened["oban"] is newer  # the walk made the others, not this one again
    assert {t: p.slots[: p.n].tolist() for t, p in opened.items()} == {
        "ferry": [0, 3, 9],
        "mill": [4],
        "oban": [1, 2, 7],
        "pier": [8],
    }
    again = pickle.loads(pickle.dumps(opened))
    assert type(again) is dict
    assert again.keys() == opened.keys()
