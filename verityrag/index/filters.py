"""Metadata filters: ``{"key": value, "other": {"$in": [v1, v2]}, "third": {"$nin": [v3]}}`` on
documents' top-level metadata.

A :class:`MetadataFilter` holds the conditions (all must hold: exact match on a key, one of
``$in``'s values, or none of ``$nin``'s, which a document without the key passes, as in
MongoDB); a value is a string, a number or a boolean. A document whose metadata
holds a list under the key matches when any element does (as an Elasticsearch ``terms``
filter on an array field). :class:`MetadataIndex` maps each (key, value) of the documents
it is given to their ids, so a filter resolves to its documents by set operations, not a
scan; retrieval then searches only those documents' chunks (``doc_ids`` of the index
contract's searches).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verityrag.errors import InvalidInputError
from verityrag.text.unicode import is_utf8

__all__ = [
    "MAX_FILTER_KEYS",
    "MAX_IN_VALUES",
    "AnyFilter",
    "MetadataFilter",
    "MetadataIndex",
    "Scalar",
    "as_filter",
]

Scalar = str | int | float | bool
#: The most keys a filter may name, and values one ``$in`` may list.
MAX_FILTER_KEYS = 32
MAX_IN_VALUES = 1024

# A value as compared: booleans apart from numbers (JSON's true is not 1), 1 and 1.0 equal.
_Key = tuple[str, str | float | bool]


def _typed(value: object) -> _Key | None:
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # an integer past the float range: no filter matches it
            return None
        return ("n", number) if math.isfinite(number) else None
    if isinstance(value, str):
        return ("s", value)
    return None


@dataclass(frozen=True)
class MetadataFilter:
    """Conditions on metadata keys, all of which must hold. Build with :meth:`from_dict`.

    ``conditions``: a key holds one of these values; ``excluded``: it holds none of them."""

    conditions: tuple[tuple[str, tuple[Scalar, ...]], ...]
    excluded: tuple[tuple[str, tuple[Scalar, ...]], ...] = ()

    def __post_init__(self) -> None:
        named = len(self.conditions) + len(self.excluded)
        if not named:
            raise InvalidInputError("filter", "needs at least one key (no filter: None)")
        if named > MAX_FILTER_KEYS:
            raise InvalidInputError("filter", f"names {named} keys; the limit is {MAX_FILTER_KEYS}")
        for key, values in (*self.conditions, *self.excluded):
            if not isinstance(key, str) or not key:
                raise InvalidInputError("filter", "keys must be non-empty strings")
            if not is_utf8(key) or not all(is_utf8(v) for v in values if isinstance(v, str)):
                raise InvalidInputError("filter", "keys and values must be valid Unicode text")
            if not values:
                raise InvalidInputError(f"filter.{key}", "$in needs at least one value")
            if len(values) > MAX_IN_VALUES:
                raise InvalidInputError(
                    f"filter.{key}", f"$in lists {len(values)} values; the limit is {MAX_IN_VALUES}"
                )
            for value in values:
                if _typed(value) is None:
                    raise InvalidInputError(
                        f"filter.{key}",
                        f"{value!r} is not a string, a finite number or a boolean (the values a filter matches)",
                    )

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any] | None) -> MetadataFilter | None:
        """``{"lang": "en", "year": {"$in": [2023, 2024]}}`` -> a filter; None or ``{}`` -> None (no filter)."""
        if not spec:
            return None
        if not isinstance(spec, Mapping):
            raise InvalidInputError("filter", "must be an object of metadata keys")
        conditions: list[tuple[str, tuple[Scalar, ...]]] = []
        excluded: list[tuple[str, tuple[Scalar, ...]]] = []
        for key, cond in spec.items():
            if isinstance(cond, Mapping):
                if len(cond) != 1 or next(iter(cond)) not in ("$in", "$nin"):
                    raise InvalidInputError(
                        f"filter.{key}",
                        f"operators: one of $in or $nin is supported, got {', '.join(map(str, cond)) or 'none'}",
                    )
                operator, values = next(iter(cond.items()))
                if not isinstance(values, list | tuple):
                    raise InvalidInputError(f"filter.{key}", f"{operator} must be a list of values")
                (conditions if operator == "$in" else excluded).append((key, tuple(values)))
            else:
                conditions.append((key, (cond,)))
        return cls(tuple(conditions), tuple(excluded))

    def to_dict(self) -> dict[str, Any]:
        return {
            key: values[0] if len(values) == 1 else {"$in": list(values)} for key, values in self.conditions
        } | {key: {"$nin": list(values)} for key, values in self.excluded}

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        """Whether a document with ``metadata`` passes (the reference :class:`MetadataIndex` agrees with)."""

        def held(key: str) -> set[_Key | None]:
            value = metadata.get(key)
            return {_typed(v) for v in value} if isinstance(value, list) else {_typed(value)}

        for key, values in self.conditions:
            if held(key).isdisjoint(_typed(v) for v in values):
                return False
        return all(held(key).isdisjoint(_typed(v) for v in values) for key, values in self.excluded)


#: What the pipeline's ``filter`` arguments take: a filter, its dict form, or None (no filter).
AnyFilter = MetadataFilter | Mapping[str, Any] | None


def as_filter(spec: AnyFilter) -> MetadataFilter | None:
    """``spec`` as a :class:`MetadataFilter` (None, and an empty dict, for no filter)."""
    return spec if spec is None or isinstance(spec, MetadataFilter) else MetadataFilter.from_dict(spec)


# A document without indexed metadata: one empty sequence for all (a document's pairs are
# replaced, never changed in place).
_NO_PAIRS: tuple[tuple[str, _Key], ...] = ()


class MetadataIndex:
    """Document ids by (top-level key, value) of their metadata; thread-safe.

    Every document put is known (``doc_ids``), with or without metadata. Values that are not
    strings, finite numbers or booleans (objects, null) are not indexed: no filter matches them.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._postings: dict[tuple[str, _Key], set[str]] = {}
        self._pairs: dict[str, Sequence[tuple[str, _Key]]] = {}
        self.version = 0  # bumped by every change, for callers that cache what they read

    def __len__(self) -> int:
        return len(self._pairs)

    def put(self, doc_id: str, metadata: Mapping[str, Any]) -> None:
        self.put_many([(doc_id, metadata)])

    @staticmethod
    def _pairs_of(metadata: Mapping[str, Any]) -> list[tuple[str, _Key]]:
        pairs: list[tuple[str, _Key]] = []
        for key, value in metadata.items():
            for item in value if isinstance(value, list) else (value,):
                typed = _typed(item)
                if typed is not None:
                    pairs.append((key, typed))
        return pairs

    def put_many(self, items: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
        """Put every item in one step: a reader sees all of them or none."""
        pairs = [(doc_id, self._pairs_of(metadata)) for doc_id, metadata in items]
        with self._lock:
            for doc_id, doc_pairs in pairs:
                self._remove(doc_id)
                self._pairs[doc_id] = doc_pairs
                for pair in doc_pairs:
                    self._postings.setdefault(pair, set()).add(doc_id)
            self.version += 1

    def add_missing(self, doc_ids: Iterable[str]) -> None:
        """Know ``doc_ids`` (without metadata) where not known yet: documents an index held
        before this process wrote any, a known one is left as it is."""
        with self._lock:
            for doc_id in doc_ids:
                if doc_id not in self._pairs:
                    self._pairs[doc_id] = []
            self.version += 1

    def remove(self, doc_id: str) -> None:
        with self._lock:
            self._remove(doc_id)
            self.version += 1

    def _remove(self, doc_id: str) -> None:
        for pair in self._pairs.pop(doc_id, ()):
            held = self._postings.get(pair)
            if held is not None:
                held.discard(doc_id)
                if not held:
                    del self._postings[pair]

    def frozen(self) -> MetadataIndex:
        """A copy as the index stands, for an image written while writers go on: the documents'
        pairs only (one dict copy; their lists are replaced, never changed), which is all that
        is pickled."""
        twin = MetadataIndex.__new__(MetadataIndex)
        twin._lock = threading.Lock()
        with self._lock:
            twin._pairs, twin.version = self._pairs.copy(), self.version
        twin._postings = {}
        return twin

    def __getstate__(self) -> dict[str, Any]:
        # Pickled (an index image) as every document's id and the pairs of those that have
        # any; the per-pair sets are made again from them. A million documents without
        # metadata took 0.24 s to unpickle as a dict of empty lists; their ids alone, 0.06 s.
        with self._lock:
            pairs = self._pairs
            return {
                "doc_ids": list(pairs),
                "pairs": {doc_id: held for doc_id, held in pairs.items() if held},
                "version": self.version,
            }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._lock = threading.Lock()
        self.version = state["version"]
        if "_pairs" in state:  # an image of an older version: the dicts themselves
            self._pairs, self._postings = state["_pairs"], state["_postings"]
            return
        self._pairs = dict.fromkeys(state["doc_ids"], _NO_PAIRS)
        self._pairs.update(state["pairs"])
        self._postings = {}
        for doc_id, held in state["pairs"].items():
            for pair in held:
                self._postings.setdefault(pair, set()).add(doc_id)

    def doc_ids(self) -> list[str]:
        with self._lock:
            return list(self._pairs)

    def count(self, key: str, value: Scalar) -> int:
        """How many documents hold ``value`` under ``key``: one lookup, for a question's hot path."""
        typed = _typed(value)
        with self._lock:
            return len(self._postings.get((key, typed), ())) if typed is not None else 0

    def value_counts(self, key: str) -> dict[Scalar, int]:
        """How many documents hold each value under ``key`` (a list counts once per element)."""
        with self._lock:
            return {typed[1]: len(ids) for (k, typed), ids in self._postings.items() if k == key}

    def matching(self, flt: MetadataFilter) -> set[str]:
        """The ids of the documents ``flt`` passes."""
        with self._lock:
            result: set[str] | None = None
            for key, values in flt.conditions:
                found = self._holding(key, values)
                result = found if result is None else result & found
                if not result:
                    return set()
            if flt.excluded:
                result = set(self._pairs) if result is None else result
                for key, values in flt.excluded:
                    result -= self._holding(key, values)
            return set(result or ())

    def _holding(self, key: str, values: Iterable[Scalar]) -> set[str]:
        found: set[str] = set()
        for value in values:
            typed = _typed(value)
            if typed is not None:
                found |= self._postings.get((key, typed), set())
        return found
