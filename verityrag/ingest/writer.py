"""The write path: validate, chunk, embed, commit (durable store first, then the index), and restore.

:class:`DocumentWriter` owns the durable store. Once a write returns, the documents are both
persisted and searchable; one lock keeps the store and the index in the same order. A call
is all or nothing: ``write_many`` commits its whole batch in one store transaction, so a crash
or an error leaves every document of it stored, or none. On start a store's documents are
restored into the index without re-embedding, unless the embedder changed (then every chunk
is re-embedded and the new vectors stored in one transaction).

Metadata is held to what every reader of it can serve (:data:`METADATA_LIMITS`): an accepted
document can always be read back (docs/decisions/0038-metadata-limits-and-readable-documents.md).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from verityrag.config import Settings
from verityrag.embed.embedder import Embedder
from verityrag.embed.hashing import HashingEmbedder
from verityrag.errors import InvalidInputError, StorageError
from verityrag.index.filters import AnyFilter, MetadataIndex, as_filter
from verityrag.index.image import ImageOf, image_of, read_image, write_image
from verityrag.index.live import LiveIndex, completed_image_state
from verityrag.index.protocol import AnyIndex, Upsert, check_unique_ids
from verityrag.index.store import SQLiteDocumentStore, StoredDocument
from verityrag.ingest.collector_pause import collector_paused
from verityrag.ingest.parallel import PARALLEL_MIN_DOCUMENTS, Prepared, Preparer, WorkerPool
from verityrag.text.analyzer import Analyzer
from verityrag.text.unicode import check_utf8
from verityrag.types import Chunk, Document, Provenance, is_valid_doc_id

logger = logging.getLogger(__name__)

#: The longest title a document may have (an uploaded file's is cut to a fifth of it).
MAX_DOCUMENT_TITLE_CHARS = 1_000

DATA_DIR_ENV = "VERITYRAG_DATA_DIR"
# ``data_dir=IN_MEMORY`` (or None) keeps everything in memory: only the entry points read
# VERITYRAG_DATA_DIR (data_dir_from_env); the eval and the demos pass IN_MEMORY to say so.
IN_MEMORY = ""
STORE_FILENAME = "verityrag.sqlite3"
#: The index image beside the store (verityrag.index.image): what a restart opens instead of re-indexing.
IMAGE_DIR = "index_image"
DocumentLike = Document | Mapping[str, Any] | tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class MetadataLimits:
    """What a document's metadata may hold. ``depth``: containers nested in one another (the
    metadata object itself is level 1); ``keys``: object keys at every level together;
    ``bytes``: its JSON in UTF-8. The API's response serializer stops at 255 levels (pydantic),
    so metadata deeper than that was stored and then unreadable; these limits sit well inside."""

    depth: int = 32
    keys: int = 1_000
    bytes: int = 64 * 1024


METADATA_LIMITS = MetadataLimits()
_LARGEST_FLOAT = int(sys.float_info.max)


def check_metadata_shape(metadata: object, limits: MetadataLimits = METADATA_LIMITS) -> None:
    """Refuse metadata over ``limits`` (depth and key count; the size is checked on its JSON),
    naming the limit. Iterative: metadata thousands of levels deep raises no RecursionError."""
    stack: list[tuple[object, int]] = [(metadata, 1)]
    keys = 0
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Iterable[object] = value.values()
            keys += len(value)
        elif isinstance(value, list | tuple):
            children = value
        else:
            if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _LARGEST_FLOAT:
                # A JSON number past the float range: stored, it was unreadable by every filter
                # and listing, and stopped the next start (OverflowError) until removed by hand.
                raise InvalidInputError("metadata", "holds an integer beyond the range of a number (1.8e308)")
            continue
        if depth > limits.depth:
            raise InvalidInputError(
                "metadata", f"nests more than {limits.depth} levels deep; the limit is {limits.depth} levels"
            )
        if keys > limits.keys:
            raise InvalidInputError(
                "metadata",
                f"has more than {limits.keys:,} keys; the limit is {limits.keys:,} keys (all levels)",
            )
        stack.extend((child, depth + 1) for child in children)


@dataclass(frozen=True, slots=True)
class IngestResult:
    doc_id: str
    n_chunks: int
    replaced: bool


def as_document(item: DocumentLike) -> Document:
    """Accept a ``Document``, a mapping with doc_id/title/text[/metadata], or a (doc_id, title, text) tuple."""
    if isinstance(item, Document):
        return item
    if isinstance(item, Mapping):
        missing = [k for k in ("doc_id", "text") if k not in item]
        if missing:
            raise InvalidInputError(missing[0], "is required")
        metadata = item.get("metadata")
        if metadata is None:
            metadata = {}
        elif isinstance(metadata, Mapping):
            metadata = dict(metadata)
        # Anything else goes to Document as it is, which names the field: dict() of a string or
        # a number raised a bare ValueError or TypeError.
        return Document(item["doc_id"], item.get("title", ""), item["text"], metadata)
    if isinstance(item, tuple) and len(item) == 3:
        return Document(*item)
    raise InvalidInputError("document", f"expected a Document, mapping or 3-tuple, got {type(item).__name__}")


def resolve_data_dir(data_dir: str | os.PathLike[str] | None) -> Path | None:
    """``data_dir`` as a path; None (or ``IN_MEMORY``): no durable store. The environment is the
    entry points' to read (:func:`data_dir_from_env`), never a constructor's."""
    return Path(data_dir) if data_dir else None


def data_dir_from_env(environ: Mapping[str, str] | None = None) -> Path | None:
    """The folder ``VERITYRAG_DATA_DIR`` names, None when it is unset or empty: what the entry
    points (the API, the MCP server, the launcher, the CLI) pass as a pipeline's ``data_dir``."""
    named = (os.environ if environ is None else environ).get(DATA_DIR_ENV, "")
    return Path(named) if named else None


@dataclass(frozen=True, slots=True)
class DocumentSummary:
    """A stored document without its text: what a listing shows."""

    doc_id: str
    title: str
    metadata: dict[str, Any]
    n_chunks: int
    ingested_at: float | None
    chars: int = 0  # the text's length


#: A page of a listing: the documents a filter passes in all, and the page's documents.
DocumentPage = tuple[int, list[DocumentSummary]]

#: Documents restored per index write (a batch's chunks, vectors and term counts are in memory).
RESTORE_BATCH = 5000

# A stored document to index: the document, its upsert, its chunks' term counts.
_StoredEntry = tuple[Document, Upsert, list[dict[str, int]]]


class DocumentWriter:
    """Writes documents into ``index`` (and the store in ``data_dir``, restored on construction)."""

    def __init__(
        self,
        index: AnyIndex,
        embedder: Embedder,
        analyzer: Analyzer,
        settings: Settings,
        data_dir: Path | None = None,
    ) -> None:
        self.index = index
        self.embedder = embedder
        self.analyzer = analyzer
        self.settings = settings
        self.data_dir = data_dir
        self._lock = threading.Lock()
        self._image_lock = threading.Lock()
        self._metadata: dict[str, dict[str, Any]] = {}  # per document, when there is no store
        self._ingested_at: dict[str, float] = {}  # likewise
        # Every document's filterable metadata (top-level scalars), for filters and listing.
        self.metadata_index = MetadataIndex()
        self._sorted_ids: tuple[int, list[str]] = (-1, [])  # (metadata_index.version, ids sorted)
        # A remote index (Elasticsearch) may hold documents from before this process, whose
        # metadata it does not keep: their ids are read once, at the first listing.
        self._ids_seeded = isinstance(index, LiveIndex)
        self.store: SQLiteDocumentStore | None = None
        if data_dir is not None and not isinstance(index, LiveIndex):
            raise InvalidInputError(
                "data_dir",
                f"is for the embedded index; {type(index).__name__} is its own durable store "
                f"(unset {DATA_DIR_ENV} or data_dir)",
            )
        # The store generation the index holds exactly (its restore, then each write of this
        # writer); None once it may not (another process wrote): no image is made of it then.
        self._indexed_generation: int | None = None
        self._workers = WorkerPool()  # bulk preparation on both cores, where it pays
        if data_dir is not None:
            self.store = SQLiteDocumentStore(data_dir / STORE_FILENAME, settings.durability)
            with collector_paused():  # a start makes the whole index's objects at once
                if not self._open_image():
                    self.restore(self.store)

    def validate(self, doc: Document) -> Document:
        """The checks ingest runs on a document; returns it as it is stored.

        Its metadata comes back as JSON reads it (tuples as lists, keys as strings): what the
        store keeps and a restart returns. Without this an in-memory pipeline returned the
        caller's own objects, ``{1: (2, 3)}``, where a stored one returned ``{'1': [2, 3]}``.
        """
        limit = self.settings.max_document_chars
        if len(doc.text) > limit:
            raise InvalidInputError(
                "text", f"is {len(doc.text):,} characters; the limit is {limit:,} (max_document_chars)"
            )
        if len(doc.title) > MAX_DOCUMENT_TITLE_CHARS:  # a title is shown with every citation and listing
            raise InvalidInputError(
                "title", f"is {len(doc.title):,} characters; the limit is {MAX_DOCUMENT_TITLE_CHARS:,}"
            )
        check_utf8("title", doc.title)
        check_utf8("text", doc.text)
        check_metadata_shape(doc.metadata)  # before json.dumps, which recurses
        try:  # stored and served as JSON: what cannot be written must not be accepted
            dumped = json.dumps(doc.metadata, ensure_ascii=False, allow_nan=False)
            size = len(dumped.encode("utf-8"))
        except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
            raise InvalidInputError("metadata", f"must be JSON with valid Unicode text ({exc})") from exc
        if size > METADATA_LIMITS.bytes:
            raise InvalidInputError(
                "metadata", f"is {size:,} bytes as JSON; the limit is {METADATA_LIMITS.bytes:,} bytes"
            )
        return dataclasses.replace(doc, metadata=json.loads(dumped))

    def preparer(self) -> Preparer:
        """How this writer chunks, embeds and analyzes a document (picklable: for the workers)."""
        return Preparer(
            self.embedder,
            self.analyzer,
            self.settings.chunk_max_words,
            self.settings.chunk_overlap_sentences,
        )

    def chunk(self, doc: Document) -> list[Chunk]:
        return self.preparer().chunk(doc)

    def prepare(self, docs: list[Document]) -> Prepared:
        """Chunk, embed (one encoder call for all their chunks) and analyze ``docs``, in process."""
        return self.preparer()(docs)

    def _prepare_all(self, docs: list[Document], batch_size: int, bar: Any) -> Prepared:
        """Every document prepared, ``batch_size`` per encoder call: by the worker processes when
        it pays (a large batch, the hashing embedder, two cores), else here."""
        batches = [docs[first : first + batch_size] for first in range(0, len(docs), batch_size)]
        if (
            len(docs) >= PARALLEL_MIN_DOCUMENTS
            and isinstance(self.embedder, HashingEmbedder)
            and self._workers.useful
        ):
            prepared = self._workers.prepare(self.preparer(), batches)
            bar.update(len(docs))
            return prepared
        prepared = []
        for batch in batches:
            prepared += self.prepare(batch)
            bar.update(len(batch))
        return prepared

    def commit(self, prepared: Prepared) -> None:
        # Durable store first (one transaction: all of ``prepared`` or none), then the index:
        # once this returns the documents are both persisted and searchable. One lock keeps
        # store and index in the same order.
        upserts = [(p.document.doc_id, p.chunks, p.vectors) for p in prepared]
        counts = [p.term_counts for p in prepared]  # analyzed once, for the store and the index
        with self._lock:
            now = time.time()
            if self.store is not None:
                items = [(p.document, p.chunks, p.vectors) for p in prepared]
                self.store.put_many(items, counts, ingested_at=now)
                self._wrote(self.store)
            else:  # the index keeps no metadata: without a store it lives here
                for doc, *_ in prepared:
                    self._metadata.pop(doc.doc_id, None)
                    if doc.metadata:
                        self._metadata[doc.doc_id] = dict(doc.metadata)
                    self._ingested_at[doc.doc_id] = now
            self.index.apply(upserts, term_counts=counts)
            # in one step: a listing or filter never sees part of a batch
            self.metadata_index.put_many((doc.doc_id, doc.metadata) for doc, *_ in prepared)

    def write_one(self, doc: Document) -> IngestResult:
        """Add or replace one document. Searchable (and persisted) when this returns."""
        doc = self.validate(doc)
        replaced = self.index.has_document(doc.doc_id)
        prepared = self.prepare([doc])
        self.commit(prepared)
        return IngestResult(doc.doc_id, len(prepared[0].chunks), replaced)

    def write_many(
        self, documents: Iterable[DocumentLike], batch_size: int = 512, progress: bool | None = None
    ) -> int:
        """Bulk ingest in one pass, all or nothing: every document is validated, chunked and
        embedded (``batch_size`` per encoder call) before one store transaction writes them all.

        A crash or an error leaves either the whole batch or none of it (the store committed
        512-document pieces before, so a killed 6,000-document batch left 512 stored). Memory:
        the batch's vectors and term counts are held until the commit; split a corpus of
        millions of chunks into several calls, each one all or nothing.
        """
        # A negative batch size made range() empty: nothing written, yet the count came back.
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError("batch_size", f"must be an integer >= 1, got {batch_size!r}")
        docs = [self.validate(as_document(item)) for item in documents]
        self._write_validated(docs, batch_size, progress)
        return len(docs)

    def write_batch(self, documents: Sequence[Document], name: str = "documents") -> list[IngestResult]:
        """:meth:`write_many` of a batch as the API sends one: an invalid document is named where
        it stands (``documents[3].text``), and each document comes back with its chunk count and
        whether it replaced one."""
        docs = []
        for i, doc in enumerate(documents):
            try:
                docs.append(self.validate(doc))
            except InvalidInputError as exc:
                raise InvalidInputError(f"{name}[{i}].{exc.field}", exc.problem) from exc
        replaced = [self.index.has_document(doc.doc_id) for doc in docs]
        prepared = self._write_validated(docs, 512, False, name)
        return [
            IngestResult(p.document.doc_id, len(p.chunks), r) for p, r in zip(prepared, replaced, strict=True)
        ]

    def _write_validated(
        self, docs: list[Document], batch_size: int, progress: bool | None, name: str = "documents"
    ) -> Prepared:
        check_unique_ids((d.doc_id for d in docs), name)  # the API's body names it so too
        show = len(docs) > 300 if progress is None else progress
        from tqdm.auto import tqdm

        bar = tqdm(total=len(docs), desc="ingest", unit="doc", disable=not show)
        with collector_paused():
            try:
                prepared = self._prepare_all(docs, batch_size, bar)
            finally:
                bar.close()
            if prepared:
                self.commit(prepared)
        return prepared

    def delete(self, doc_id: str) -> bool:
        """Remove a document from the store and both indexes. False if it was not there."""
        with self._lock:
            removed = self.store.delete(doc_id) if self.store is not None else False
            if removed:
                assert self.store is not None
                self._wrote(self.store)
            self._metadata.pop(doc_id, None)
            self._ingested_at.pop(doc_id, None)
            self.metadata_index.remove(doc_id)
            return self.index.delete(doc_id) or removed

    def provenance(self, doc_ids: Sequence[str]) -> dict[str, Provenance]:
        """Where each of ``doc_ids`` came from (its metadata's ``source``) and when it was
        ingested; a document not held (deleted meanwhile) is left out."""
        if self.store is not None:
            return self.store.provenance(doc_ids)
        out: dict[str, Provenance] = {}
        for doc_id in doc_ids:
            if doc_id in self._ingested_at:
                source = self._metadata.get(doc_id, {}).get("source")
                out[doc_id] = Provenance(
                    doc_id, source if isinstance(source, str) else None, self._ingested_at[doc_id]
                )
        return out

    def matching(self, spec: AnyFilter) -> set[str] | None:
        """The ids of the documents whose metadata the filter ``spec`` passes; None: no filter."""
        flt = as_filter(spec)
        return None if flt is None else self.metadata_index.matching(flt)

    def list_documents(
        self, spec: AnyFilter = None, offset: int = 0, limit: int = 50, title: str | None = None
    ) -> DocumentPage:
        """``(total, page)``: the documents the filter ``spec`` passes (all: None) and whose title
        holds ``title`` (any case; None or blank: any title), ordered by doc_id, ``limit`` of them
        from ``offset``; each with its title, metadata, chunks, ingest time and length."""
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidInputError("offset", f"must be an integer >= 0, got {offset!r}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError("limit", f"must be an integer >= 1, got {limit!r}")
        flt = as_filter(spec)
        if not self._ids_seeded:
            self.metadata_index.add_missing(self.index.doc_ids())
            self._ids_seeded = True
        if flt is None:
            version, ids = self._sorted_ids
            if version != self.metadata_index.version:
                version = self.metadata_index.version
                ids = sorted(self.metadata_index.doc_ids())
                self._sorted_ids = (version, ids)
        else:
            ids = sorted(self.metadata_index.matching(flt))
        if title is not None and title.strip():
            titled = self._titled(title.strip())
            ids = [doc_id for doc_id in ids if doc_id in titled]
        page = ids[offset : offset + limit]
        if self.store is not None:
            found = self.store.summaries(page)
        else:
            found = {}
            for doc_id in page:
                chunks = self.index.chunks_of(doc_id)
                if chunks:
                    found[doc_id] = (
                        chunks[0].title,
                        dict(self._metadata.get(doc_id, {})),
                        self._ingested_at.get(doc_id),
                        max(c.end for c in chunks),  # the text up to its last sentence
                    )
        out = []
        for doc_id in page:
            if doc_id not in found:  # deleted since the ids were read
                continue
            name, metadata, ingested_at, chars = found[doc_id]
            n_chunks = len(self.index.chunks_of(doc_id))
            out.append(DocumentSummary(doc_id, name, metadata, n_chunks, ingested_at, chars))
        return len(ids), out

    def _titled(self, words: str) -> set[str]:
        """The documents whose title holds ``words``, any case."""
        if self.store is not None:
            return self.store.titled(words)
        needle = words.lower()
        out = set()
        for doc_id in self.metadata_index.doc_ids():
            chunks = self.index.chunks_of(doc_id)
            if chunks and needle in chunks[0].title.lower():
                out.add(doc_id)
        return out

    def get(self, doc_id: str) -> Document | None:
        if self.store is not None:
            return self.store.get(doc_id)
        chunks = self.index.chunks_of(doc_id)
        if not chunks:
            return None
        # Rebuild the text at the chunks' offsets: overlapping sentences appear once and the
        # whitespace between sentences (all that chunks leave out) becomes spaces.
        text = ""
        for c in chunks:
            if c.end > len(text):
                text = text.ljust(c.start) + c.text[max(len(text) - c.start, 0) :]
        return Document(doc_id, chunks[0].title, text, dict(self._metadata.get(doc_id, {})))

    def _wrote(self, store: SQLiteDocumentStore) -> None:
        """After a write of this writer's: the index holds the store's next generation, unless
        another process wrote in between (then its writes are in the store, not the index)."""
        held = self._indexed_generation
        self._indexed_generation = (
            store.last_generation if held is not None and store.last_generation == held + 1 else None
        )

    def _image_made_with(self) -> dict[str, Any]:
        assert isinstance(self.index, LiveIndex)
        return {"index": self.index.image_settings(), "embedder": self.embedder.fingerprint()}

    def _open_image(self) -> bool:
        """Open the index image beside the store when it was made with these settings and is of
        the store's generation, or of an earlier one whose writes since the store can replay
        (:mod:`verityrag.index.image`: a start after a crash); False: restore from the store."""
        if self.store is None or self.data_dir is None or not isinstance(self.index, LiveIndex):
            return False
        if len(self.index):
            return False
        started = time.perf_counter()
        store, folder = self.store, self.data_dir / IMAGE_DIR
        newest = store.generation()
        image = image_of(folder)
        if image is not None and image.generation > newest:
            _check_store_not_behind(store, folder, image)  # else another store's image: rebuild
        of = None if image is None else image.generation
        # Behind the store (a crash since): whether the writes since can be replayed, and the
        # deletions among them, asked before the image is read (at 1M chunks that takes seconds).
        deleted: list[str] = []
        if of is not None and of < newest:
            changes = store.changes_since(of)
            if changes is None:
                logger.info("the store's writes since the index image cannot be replayed: rebuilding")
                return False
            deleted = changes
        opened = read_image(
            folder,
            newest,
            self._image_made_with(),
            store.store_id,
            complete=lambda state: (completed_image_state(state[0]), state[1]),
        )
        if opened is None or opened.generation != of:  # (another image written meanwhile)
            return False
        after_seq = opened.seq if opened.generation < newest else None
        index_state, metadata_index = opened.state
        self.index.load_image_state(index_state)
        self.metadata_index = metadata_index
        if after_seq is not None:
            for doc_id in deleted:
                self.metadata_index.remove(doc_id)
                self.index.delete(doc_id)
            replayed = self._replay(store.iter_documents(self.embedder.dim, after_seq=after_seq))
            logger.info(
                "replayed %d deletions and %d documents written since the index image",
                len(deleted),
                replayed,
            )
        # Exactly the store, unless another process wrote while it was read.
        self._indexed_generation = newest if store.generation() == newest else None
        logger.info(
            "opened the index image of %d documents (%d chunks) in %.2fs",
            self.index.n_documents,
            len(self.index),
            time.perf_counter() - started,
        )
        return True

    def _replay(self, written: Iterable[StoredDocument]) -> int:
        """Index the documents written since the image, as stored (the image was made with this
        embedder and analyzer, and so were they: a store whose vectors were rewritten since is
        not replayed); how many."""

        def entries() -> Iterator[_StoredEntry]:
            for stored in written:
                upsert = (stored.document.doc_id, stored.chunks, stored.vectors)
                yield stored.document, upsert, stored.term_counts or self.index.term_counts([upsert])[0]

        return self._index_in_batches(entries())

    def _index_in_batches(self, entries: Iterable[_StoredEntry]) -> int:
        """Index stored documents (each with its upsert and term counts) and their metadata,
        :data:`RESTORE_BATCH` at a time: a million chunks are never all in memory at once,
        besides the index itself; how many."""
        batch: list[Upsert] = []
        counts: list[list[dict[str, int]]] = []
        done = 0
        for document, upsert, term_counts in entries:
            batch.append(upsert)
            counts.append(term_counts)
            self.metadata_index.put(document.doc_id, document.metadata)
            done += 1
            if len(batch) >= RESTORE_BATCH:
                self.index.apply(batch, term_counts=counts)
                batch, counts = [], []
        if batch:
            self.index.apply(batch, term_counts=counts)
        return done

    def checkpoint(self) -> bool:
        """Write the index image for the store's generation beside the store (a clean stop, and
        in the background while running), so the next start opens it instead of re-indexing;
        True when the image on disk is of the store's generation as it was when this was called.

        Writers are held off only while the index's state is taken (a frozen copy: copies of what
        they change in place, the lengths of what they append to); the image is written from it
        while they go on. An index with an hnsw graph is written with writes held. Nothing is
        written for an index that may not hold the store exactly (another process wrote to it),
        or without a store."""
        if self.store is None or self.data_dir is None or not isinstance(self.index, LiveIndex):
            return False
        store, index, folder = self.store, self.index, self.data_dir / IMAGE_DIR
        # One image at a time (the folder is replaced by rename). The collector paused: at a
        # million chunks, the postings made and packed set off full collections that stopped
        # every thread, writers too, for 0.4 s at a time.
        with self._image_lock, collector_paused():
            with self._lock:
                generation = store.generation()
                if self._indexed_generation != generation:
                    logger.warning(
                        "no index image written: another process wrote to %s since this index was built",
                        store.path,
                    )
                    return False
                if image_of(folder) == (of := ImageOf(store.store_id, generation, index.n_documents)):
                    return True
                seq, made_with = store.last_seq(), self._image_made_with()
                frozen = index.frozen_image_state()
                if frozen is None:  # an hnsw graph: held for the whole write
                    with index.writes_held() as index_state:
                        write_image(folder, of, seq, made_with, (index_state, self.metadata_index))
                        store.forget_deletions_through(generation)  # the image holds them now
                    return True
                state = (frozen.state, self.metadata_index.frozen())
            write_image(folder, of, seq, made_with, state, frozen.arena_sizes)
            with self._lock:
                store.forget_deletions_through(generation)
        return True

    def restore(self, store: SQLiteDocumentStore) -> None:
        """Load the store's documents into the index (re-embedding only if the embedder changed),
        streamed in batches of :data:`RESTORE_BATCH` documents."""
        started = time.perf_counter()
        before = store.generation()
        fingerprint = self.embedder.fingerprint()
        stored_fp = store.get_meta("embedder")
        reembed = stored_fp is not None and stored_fp != fingerprint
        if reembed:
            logger.warning("embedder changed (%s -> %s): re-embedding stored chunks", stored_fp, fingerprint)
        dim = self.embedder.dim if not reembed else int(store.get_meta("embedder_dim") or 0)
        # Stored term counts are reusable only if the same analyzer made them.
        same_analyzer = store.get_meta("analyzer") == self.analyzer.fingerprint()
        new_vectors: dict[str, npt.NDArray[np.float32]] = {}
        new_counts: dict[str, dict[str, int]] = {}
        legacy: list[str] = []

        def entries() -> Iterator[_StoredEntry]:
            for stored in store.iter_documents(dim):
                doc_id, chunks = stored.document.doc_id, stored.chunks
                vectors = stored.vectors
                if reembed:
                    vectors = self.embedder.encode([c.text for c in chunks])
                    new_vectors.update(zip((c.chunk_id for c in chunks), vectors, strict=True))
                upsert = (doc_id, chunks, vectors)
                counts = stored.term_counts
                if not same_analyzer or counts is None:
                    counts = self.index.term_counts([upsert])[0]
                    if not same_analyzer:
                        # Counted again by this analyzer and stored under its fingerprint: left as
                        # they were, the next restore would read the old analyzer's counts as its.
                        new_counts.update(zip((c.chunk_id for c in chunks), counts, strict=True))
                if not is_valid_doc_id(doc_id):
                    legacy.append(doc_id)
                yield stored.document, upsert, counts

        self._index_in_batches(entries())
        if legacy:
            logger.warning(
                "%d stored document(s) have ids today's rules refuse (first: %r): kept and "
                "searchable; delete_document removes them, the REST API cannot address them; "
                "re-ingest them under valid ids",
                len(legacy),
                legacy[0],
            )
        meta = {
            "embedder": fingerprint,
            "embedder_dim": str(self.embedder.dim),
            "analyzer": self.analyzer.fingerprint(),
        }
        # Every new vector, count and the fingerprints that describe them in ONE transaction: a
        # crash while re-embedding leaves the old store intact, never half old, half new.
        store.replace_vectors(new_vectors, meta=meta, term_counts_by_chunk=new_counts)
        # Exactly the store, unless another process wrote while it was read.
        self._indexed_generation = store.last_generation if store.last_generation == before + 1 else None
        logger.info(
            "restored %d documents (%d chunks) from %s in %.2fs",
            self.index.n_documents,
            len(self.index),
            store.path,
            time.perf_counter() - started,
        )


def _check_store_not_behind(store: SQLiteDocumentStore, folder: Path, image: ImageOf) -> None:
    """Stop a start whose store is behind the index image beside it: the store was deleted,
    emptied or put back from an older copy, and serving it would drop documents without a word
    (then the next clean stop would overwrite the image, the last trace of them). An image of
    another store (another data folder's, copied in) is not this store's: it is passed over."""
    count = image.documents
    held = "documents" if count is None else f"{count:,} document{'' if count == 1 else 's'}"
    if store.count() == 0 and store.generation() == 0:
        raise StorageError(
            f"the document store {store.path} is missing or empty, but the index image beside it "
            f"({folder}) holds {held} of store generation {image.generation}: the store was deleted, "
            f"emptied or replaced. Stop the server and put the store back from a backup; or, to "
            f"start with no documents, remove {folder}"
        )
    if image.store_id in (None, store.store_id):
        raise StorageError(
            f"the document store {store.path} is at generation {store.generation()}, behind the index "
            f"image beside it ({folder}, generation {image.generation}, {held}): the store lost "
            f"writes or an older copy of it was put back. Put the newest copy back; or, to serve the "
            f"store as it is, remove {folder} (the index is then rebuilt from the store)"
        )
