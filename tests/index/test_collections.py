"""Which documents a question asks: the collection choice over metadata (verityrag.index.collections)."""

from __future__ import annotations

import pytest

from verityrag.errors import InvalidInputError
from verityrag.index.collections import collection_sizes, scoped_filter
from verityrag.index.filters import MetadataFilter, MetadataIndex

pytestmark = pytest.mark.unit


def _index(**metadata: dict[str, object]) -> MetadataIndex:
    index = MetadataIndex()
    index.put_many(metadata.items())
    return index


def _asks(collection: str | None, index: MetadataIndex, flt: dict[str, object] | None = None) -> set[str]:
    scoped = scoped_filter(collection, MetadataFilter.from_dict(flt), index)
    return set(index.doc_ids()) if scoped is None else index.matching(scoped)


DEMO_ONLY = {"d1": {"collection": "demo"}, "d2": {"collection": "demo", "lang": "en"}}
MIXED = {**DEMO_ONLY, "mine": {"lang": "en"}, "m2": {"collection": "manuals", "lang": "de"}}


def test_by_default_your_documents_when_there_are_any_else_the_demo() -> None:
    assert _asks(None, _index(**DEMO_ONLY)) == {"d1", "d2"}
    assert _asks("auto", _index(**MIXED)) == {"mine", "m2"}
    assert _asks(None, _index(**MIXED), {"lang": "en"}) == {"mine"}
    assert _asks(None, _index(mine={})) == {"mine"}


def test_all_a_name_and_a_filter_naming_the_collection() -> None:
    index = _index(**MIXED)
    assert _asks("all", index) == {"d1", "d2", "mine", "m2"}
    assert _asks("demo", index) == {"d1", "d2"}
    assert _asks("manuals", index, {"lang": "de"}) == {"m2"}
    assert _asks("nothing", index) == set()
    assert _asks(None, index, {"collection": "demo"}) == {"d1", "d2"}  # the filter says which
    with pytest.raises(InvalidInputError, match="either here or in the filter"):
        scoped_filter("demo", MetadataFilter.from_dict({"collection": "manuals"}), index)
    with pytest.raises(InvalidInputError, match="collection: must be a name"):
        scoped_filter(" ", None, index)


def test_documents_without_a_collection_are_yours() -> None:
    assert collection_sizes(_index(**MIXED)) == {"demo": 2, "manuals": 1, "yours": 1}
    assert collection_sizes(_index(**DEMO_ONLY)) == {"demo": 2}
    assert collection_sizes(_index(a={}, b={"x": 1})) == {"yours": 2}
    named = _index(**MIXED, t={"collection": "yours"})
    assert collection_sizes(named)["yours"] == 2  # named so, or in none
    assert _asks("yours", named) == {"mine", "t"}
    assert _asks("yours", _index(a={}, b={"x": 1})) == {"a", "b"}
