"""Collections: a ``collection`` metadata key (decision 0055), and which one a question asks.

The served app starts with the bundled corpus in the ``demo`` collection, so it answers at once;
a user's own documents (any other collection, or none) must not be answered from it. A question
therefore asks, by default, the user's documents when there are any and the demo only when there
is nothing else; ``all`` asks everything, a name asks that collection. Documents added without a
collection are the ``yours`` collection (with any a user named so).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from verityrag.errors import InvalidInputError
from verityrag.index.filters import MetadataFilter, MetadataIndex

COLLECTION_KEY = "collection"
#: The bundled corpus's collection in the served app.
DEMO_COLLECTION = "demo"
#: The collection choice that asks every document.
ALL_COLLECTIONS = "all"
#: The default choice: your documents when there are any, else the demo.
YOURS_FIRST = "auto"
#: The collection of documents added without one.
OWN_COLLECTION = "yours"


def collection_sizes(index: MetadataIndex) -> dict[str, int]:
    """Documents per collection name; documents without one are counted under ``yours``."""
    named = {str(v): n for v, n in index.value_counts(COLLECTION_KEY).items() if isinstance(v, str)}
    # exact where a document lists several collections: the ones in none of them
    rest = len(index.matching(MetadataFilter((), ((COLLECTION_KEY, tuple(named)),)))) if named else len(index)
    if rest:
        named[OWN_COLLECTION] = named.get(OWN_COLLECTION, 0) + rest
    return named


def only_demo(sizes: Mapping[str, int]) -> bool:
    """Whether an index of these collection ``sizes`` holds no documents of the user's own: a
    question then asks the bundled demo (and the demo's sample questions are about what is there)."""
    return not any(n for name, n in sizes.items() if name != DEMO_COLLECTION)


def collection_filter(name: str, index: MetadataIndex) -> MetadataFilter | None:
    """The documents of the collection ``name``; of ``yours``, those in no other collection too
    (None: every document, when no other collection is named)."""
    if name != OWN_COLLECTION:
        return MetadataFilter(((COLLECTION_KEY, (name,)),), ())
    others = tuple(v for v in index.value_counts(COLLECTION_KEY) if v != OWN_COLLECTION)
    return MetadataFilter((), ((COLLECTION_KEY, others),)) if others else None


def scoped_filter(
    collection: str | None, flt: MetadataFilter | None, index: MetadataIndex
) -> MetadataFilter | None:
    """``flt`` narrowed to the chosen ``collection``: None or ``auto``: everything but the demo
    when anything else is there; ``all``: no narrowing; a name: that collection only. A filter
    that names ``collection`` itself is taken as it is (with ``auto``) or refused (with a name)."""
    choice = YOURS_FIRST if collection is None else collection.strip()
    if not choice:
        raise InvalidInputError("collection", f"must be a name, {ALL_COLLECTIONS!r} or {YOURS_FIRST!r}")
    names = {key for key, _ in (*flt.conditions, *flt.excluded)} if flt is not None else set()
    if choice == ALL_COLLECTIONS or (choice == YOURS_FIRST and COLLECTION_KEY in names):
        return flt
    if COLLECTION_KEY in names:
        raise InvalidInputError("collection", "give the collection either here or in the filter, not both")
    if choice != YOURS_FIRST:
        return narrowed(flt, collection_filter(choice, index))
    demo = index.count(COLLECTION_KEY, DEMO_COLLECTION)
    if demo == 0 or demo >= len(index):
        return flt
    return narrowed(flt, MetadataFilter((), ((COLLECTION_KEY, (DEMO_COLLECTION,)),)))


def narrowed(flt: MetadataFilter | None, by: MetadataFilter | None) -> MetadataFilter | None:
    """The documents both ``flt`` and ``by`` pass (either None: the other's)."""
    if by is None:
        return flt
    if flt is None:
        return by
    return MetadataFilter((*flt.conditions, *by.conditions), (*flt.excluded, *by.excluded))


class _Listed(Protocol):
    @property
    def doc_id(self) -> str: ...


class DocumentCollection(Protocol):
    """What removing a collection needs: a pipeline's listing and delete."""

    def list_documents(
        self, filter: MetadataFilter | None, offset: int = 0, limit: int = 50
    ) -> tuple[int, Sequence[_Listed]]: ...

    def delete_document(self, doc_id: str) -> bool: ...


def remove_collection(documents: DocumentCollection, index: MetadataIndex, name: str, page: int = 500) -> int:
    """Delete every document of the collection ``name`` (``index``: the documents' metadata); how
    many were deleted."""
    deleted = 0
    while True:  # pages from the start: each deleted document leaves the listing
        _, listed = documents.list_documents(collection_filter(name, index), 0, page)
        removed = sum(documents.delete_document(doc.doc_id) for doc in listed)
        if not removed:  # nothing left (or deleted meanwhile by someone else)
            return deleted
        deleted += removed
