"""The durable document store: SQLite in WAL mode, the source of truth for restarts.

Documents, chunks and their vectors are written in one transaction per call;
``put`` returns only after that transaction committed, so an acknowledged
document survives the process being killed. ``synchronous=NORMAL`` (the
default, ``durability="process"``) survives a process crash; ``"power"`` uses
``synchronous=FULL`` to also survive power loss at the cost of an fsync per write.

Every write also counts up the store's ``generation`` (in the same transaction): an index image
(:mod:`verityrag.index.image`) is of one generation. What changed since one is in the store too:
documents written after it have a larger ``seq``, and each deletion is logged with its
generation (``deletions``, trimmed once an image covers it), so a start after a crash opens the
last image and replays the writes since instead of re-indexing everything.

Each document row records when it was ingested (``ingested_at``, Unix seconds, set by the
store when the transaction writes it): citations and the trace show it. The column was added
without a schema version change: a store made before it gets the column on open (its rows
read as "unknown"), and an older VerityRAG still reads and writes a store that has it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from verityrag.errors import StorageError
from verityrag.types import Chunk, Document, Provenance

Durability = Literal["process", "power"]
# 2: a chunk's term frequencies are uint16, or uint32 when one exceeds 65535 (1 capped them at
# 65535, so BM25 after a restart differed from BM25 before it). A version-1 store is a valid
# version-2 store (every row uint16): opening one marks it 2, and an older VerityRAG then
# refuses it rather than misread a uint32 row.
# 3: deletions are logged (an index image replays them). Opening a version-2 store marks it 3
# and notes the generation the log starts at: an older VerityRAG, which would delete without
# logging, then refuses the store instead of leaving an image's replay wrong.
SCHEMA_VERSION = "3"
_UPGRADABLE = {"1", "2"}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL,
    seq INTEGER NOT NULL,
    ingested_at REAL
);
CREATE TABLE IF NOT EXISTS chunks (
    chunk_id TEXT PRIMARY KEY,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    start INTEGER NOT NULL,
    end INTEGER NOT NULL,
    vector BLOB NOT NULL,
    -- the chunk's analyzed terms (space-separated) and their frequencies (uint16, or uint32
    -- when one exceeds 65535), as the index analyzed them: restore rebuilds BM25 without
    -- re-analyzing any text
    terms TEXT,
    tfs BLOB
);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks(doc_id, position);
CREATE INDEX IF NOT EXISTS documents_by_seq ON documents(seq);
-- each deletion and the generation that made it, from DELETIONS_LOGGED_FROM on
CREATE TABLE IF NOT EXISTS deletions (doc_id TEXT NOT NULL, generation INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS deletions_by_generation ON deletions(generation);
"""


#: The meta key counting the store's write transactions.
GENERATION_KEY = "generation"
#: The meta key of the largest ``seq`` ever given: a document written after another always has a
#: larger one, even when the one with the largest was deleted (``MAX(seq) + 1`` gave its number
#: again, and a replay from an image that held it would have missed the new document).
LAST_SEQ_KEY = "last_seq"
#: The meta key of the store's identity (random, made with the store): an index image records it
#: and is opened only beside the store it was made of, not another data folder's.
STORE_ID_KEY = "store_id"
#: The meta key of the generation from which every deletion is in the log.
DELETIONS_LOGGED_FROM = "deletions_logged_from"
#: The meta key of the last generation that rewrote stored vectors or term counts in place
#: (:meth:`SQLiteDocumentStore.replace_vectors`): those writes cannot be replayed.
REWRITTEN_AT = "rewritten_at"


@dataclass(frozen=True, slots=True)
class StoredDocument:
    document: Document
    chunks: list[Chunk]
    vectors: npt.NDArray[np.float32]
    term_counts: list[dict[str, int]] | None = None  # None when stored without them


class SQLiteDocumentStore:
    """Documents with their chunks and vectors. Thread-safe; one connection behind a lock."""

    def __init__(self, path: str | Path, durability: Durability = "process") -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self.last_generation: int | None = None  # the generation this object's latest write made
        folder = self.path.parent
        if folder.exists() and not folder.is_dir():  # the caller's setting: say so, not FileExistsError
            raise StorageError(f"the data folder {folder} is a file: give a folder (it is made if missing)")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot make the data folder {folder}: {exc.strerror}") from exc
        try:
            self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self.closed = False
            self._conn.execute("PRAGMA journal_mode=WAL")
            sync = "FULL" if durability == "power" else "NORMAL"
            self._conn.execute(f"PRAGMA synchronous={sync}")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.executescript(_SCHEMA)
            columns = {row[1] for row in self._conn.execute("PRAGMA table_info(documents)")}
            if "ingested_at" not in columns:  # a store made before ingest times were recorded
                self._conn.execute("ALTER TABLE documents ADD COLUMN ingested_at REAL")
        except sqlite3.DatabaseError as exc:
            raise StorageError(f"cannot open the document store at {self.path}: {exc}") from exc
        stored = self.get_meta("schema_version")
        if stored is None or stored in _UPGRADABLE:
            if self.get_meta(DELETIONS_LOGGED_FROM) is None:
                self.set_meta(DELETIONS_LOGGED_FROM, str(self.generation()))
            self.set_meta("schema_version", SCHEMA_VERSION)
        elif stored != SCHEMA_VERSION:
            raise StorageError(
                f"{self.path} has schema version {stored}; this VerityRAG reads {SCHEMA_VERSION}"
            )
        if self.get_meta(STORE_ID_KEY) is None:
            self.set_meta(STORE_ID_KEY, uuid.uuid4().hex)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
            self.closed = True

    @contextmanager
    def _connection(self, action: str) -> Iterator[sqlite3.Connection]:
        """The connection under the lock; a SQLite failure is a StorageError saying what failed."""
        with self._lock:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise StorageError(_failure(action, self.path, exc)) from exc

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: committed when the block ends, rolled back if it raises."""
        with self._connection("writing to") as conn:
            try:
                conn.execute("BEGIN IMMEDIATE")
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                # BEGIN itself fails while another process holds the write lock past the busy
                # timeout: nothing to roll back then, and ROLLBACK's own error ("no transaction
                # is active") replaced the reason, as a bare sqlite3 error.
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    # ------------------------------------------------------------------- meta
    @property
    def store_id(self) -> str:
        """The store's identity, made with it (a store copied elsewhere keeps it)."""
        return self.get_meta(STORE_ID_KEY) or ""

    def generation(self) -> int:
        """How many writes the store has committed (0 for a store from before they were counted)."""
        return int(self.get_meta(GENERATION_KEY) or 0)

    def _next_generation(self, conn: sqlite3.Connection) -> int:
        """Count this write transaction (call inside it): the generation it makes, also kept as
        :attr:`last_generation` (what this object's latest write made, whoever else writes)."""
        row = conn.execute("SELECT value FROM meta WHERE key=?", (GENERATION_KEY,)).fetchone()
        generation = (int(row[0]) if row else 0) + 1
        conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (GENERATION_KEY, str(generation))
        )
        self.last_generation = generation
        return generation

    def get_meta(self, key: str) -> str | None:
        with self._connection("reading") as conn:
            row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self._connection("writing to") as conn:
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    # ----------------------------------------------------------------- writes
    def put_many(
        self,
        items: Sequence[tuple[Document, Sequence[Chunk], npt.NDArray[np.float32]]],
        term_counts: Sequence[Sequence[Mapping[str, int]]] | None = None,
        ingested_at: float | None = None,
    ) -> None:
        """Insert or replace documents with their chunks, vectors and (optionally) analyzed
        term counts per chunk, in one transaction: all of ``items`` are stored, or none. Their doc
        ids are distinct (the writer checks a batch before it is prepared).

        ``ingested_at`` (Unix seconds, default now) is recorded on every document written."""
        when = time.time() if ingested_at is None else ingested_at
        # The rows made first, outside the lock and the transaction; then one statement a table.
        documents, chunk_rows = [], []
        for i, (doc, chunks, vectors) in enumerate(items):
            terms: list[tuple[str | None, bytes | None]] = (
                [(None, None)] * len(chunks)
                if term_counts is None
                else [_encode_terms(tc) for tc in term_counts[i]]
            )
            documents.append((doc.doc_id, doc.title, doc.text, json.dumps(doc.metadata), when))
            chunk_rows += [
                (c.chunk_id, doc.doc_id, c.position, c.start, c.end, vec.tobytes(), *t)
                for c, vec, t in zip(chunks, np.asarray(vectors, dtype=np.float32), terms, strict=True)
            ]
        with self._transaction() as conn:
            self._next_generation(conn)
            first = self._last_seq(conn) + 1
            # A document written before is replaced: its row deleted first (its chunks with it).
            conn.executemany("DELETE FROM documents WHERE doc_id=?", [(d[0],) for d in documents])
            conn.executemany(
                "INSERT INTO documents(doc_id, title, text, metadata, ingested_at, seq) VALUES (?,?,?,?,?,?)",
                [(*row, seq) for seq, row in enumerate(documents, start=first)],
            )
            conn.executemany(
                "INSERT INTO chunks(chunk_id, doc_id, position, start, end, vector, terms, tfs)"
                " VALUES (?,?,?,?,?,?,?,?)",
                chunk_rows,
            )
            last = first + len(documents) - 1
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (LAST_SEQ_KEY, str(last)))

    def delete(self, doc_id: str) -> bool:
        with self._transaction() as conn:
            cur = conn.execute("DELETE FROM documents WHERE doc_id=?", (doc_id,))
            if cur.rowcount > 0:
                generation = self._next_generation(conn)
                conn.execute("INSERT INTO deletions(doc_id, generation) VALUES (?, ?)", (doc_id, generation))
        return cur.rowcount > 0

    def replace_vectors(
        self,
        vectors_by_chunk: dict[str, npt.NDArray[np.float32]],
        meta: dict[str, str] | None = None,
        term_counts_by_chunk: Mapping[str, Mapping[str, int]] | None = None,
    ) -> None:
        """Overwrite stored vectors (after the embedder changed) and term counts (after the
        analyzer changed), with ``meta`` in the same transaction."""
        with self._transaction() as conn:
            generation = self._next_generation(conn)
            if vectors_by_chunk or term_counts_by_chunk:
                conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (REWRITTEN_AT, str(generation))
                )
            conn.executemany(
                "UPDATE chunks SET vector=? WHERE chunk_id=?",
                [(v.astype(np.float32).tobytes(), cid) for cid, v in vectors_by_chunk.items()],
            )
            conn.executemany(
                "UPDATE chunks SET terms=?, tfs=? WHERE chunk_id=?",
                [(*_encode_terms(tc), cid) for cid, tc in (term_counts_by_chunk or {}).items()],
            )
            conn.executemany(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", list((meta or {}).items())
            )

    def forget_deletions_through(self, generation: int) -> None:
        """Drop the logged deletions up to ``generation`` (an index image holds them now). The log
        then begins after ``generation``: an older image put back (a mixed backup restore) cannot
        replay the deletions since it, so it is passed over rather than bring them back."""
        with self._transaction() as conn:
            conn.execute("DELETE FROM deletions WHERE generation <= ?", (generation,))
            row = conn.execute("SELECT value FROM meta WHERE key=?", (DELETIONS_LOGGED_FROM,)).fetchone()
            logged_from = max(generation, int(row[0]) if row else 0)
            conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                (DELETIONS_LOGGED_FROM, str(logged_from)),
            )

    # ------------------------------------------------------------------ reads
    def last_seq(self) -> int:
        """The ``seq`` of the latest document written (documents written later have larger ones)."""
        with self._connection("reading") as conn:
            return self._last_seq(conn)

    @staticmethod
    def _last_seq(conn: sqlite3.Connection) -> int:
        # A store from before the key was kept has only its rows to say.
        (largest,) = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM documents").fetchone()
        row = conn.execute("SELECT value FROM meta WHERE key=?", (LAST_SEQ_KEY,)).fetchone()
        return max(int(largest), int(row[0]) if row else 0)

    def changes_since(self, generation: int) -> list[str] | None:
        """The ids of the documents deleted after store generation ``generation`` (oldest first;
        a document written again since is among them too), or None when the writes since cannot
        be replayed: deletions from before the log began, or stored vectors rewritten in place.
        The documents written since are :meth:`iter_documents` past the ``seq`` of then."""
        with self._connection("reading") as conn:
            meta = dict(
                conn.execute(
                    "SELECT key, value FROM meta WHERE key IN (?, ?)", (DELETIONS_LOGGED_FROM, REWRITTEN_AT)
                ).fetchall()
            )
            if (
                int(meta.get(DELETIONS_LOGGED_FROM, 0)) > generation
                or int(meta.get(REWRITTEN_AT, -1)) > generation
            ):
                return None
            rows = conn.execute(
                "SELECT doc_id FROM deletions WHERE generation > ? ORDER BY generation", (generation,)
            ).fetchall()
        return [row[0] for row in rows]

    def count(self) -> int:
        with self._connection("reading") as conn:
            (n,) = conn.execute("SELECT COUNT(*) FROM documents").fetchone()
        return int(n)

    def get(self, doc_id: str) -> Document | None:
        with self._connection("reading") as conn:
            row = conn.execute(
                "SELECT doc_id, title, text, metadata FROM documents WHERE doc_id=?", (doc_id,)
            ).fetchone()
        if row is None:
            return None
        return Document.as_stored(row[0], row[1], row[2], json.loads(row[3]))

    def provenance(self, doc_ids: Sequence[str]) -> dict[str, Provenance]:
        """Source (the metadata's ``source``, when a string) and ingest time of each of ``doc_ids``
        that is stored; absent ones are left out, and a row stored before ingest times were
        recorded has ``ingested_at=None``. SQLite's JSON functions read the source."""
        wanted = list(dict.fromkeys(doc_ids))
        out: dict[str, Provenance] = {}
        with self._connection("reading") as conn:
            for first in range(0, len(wanted), 500):  # SQLite's bound-parameter limit
                part = wanted[first : first + 500]
                rows = conn.execute(
                    "SELECT doc_id, ingested_at,"
                    " CASE WHEN json_valid(metadata) AND json_type(metadata, '$.source') = 'text'"
                    " THEN json_extract(metadata, '$.source') END"
                    f" FROM documents WHERE doc_id IN ({','.join('?' * len(part))})",
                    part,
                ).fetchall()
                for doc_id, ingested_at, source in rows:
                    out[doc_id] = Provenance(doc_id, source, ingested_at)
        return out

    def summaries(self, doc_ids: Sequence[str]) -> dict[str, tuple[str, dict[str, Any], float | None, int]]:
        """Title, metadata, ingest time and length in characters of each of ``doc_ids`` that is
        stored (no text)."""
        wanted = list(dict.fromkeys(doc_ids))
        out: dict[str, tuple[str, dict[str, Any], float | None, int]] = {}
        with self._connection("reading") as conn:
            for first in range(0, len(wanted), 500):  # SQLite's bound-parameter limit
                part = wanted[first : first + 500]
                rows = conn.execute(
                    "SELECT doc_id, title, metadata, ingested_at, length(text) FROM documents"
                    f" WHERE doc_id IN ({','.join('?' * len(part))})",
                    part,
                ).fetchall()
                for doc_id, title, metadata, ingested_at, chars in rows:
                    out[doc_id] = (title, json.loads(metadata), ingested_at, int(chars or 0))
        return out

    def titled(self, words: str) -> set[str]:
        """The stored documents whose title holds ``words`` (case and accents of ASCII aside)."""
        with self._connection("reading") as conn:
            rows = conn.execute(
                "SELECT doc_id FROM documents WHERE instr(lower(title), ?) > 0", (words.lower(),)
            ).fetchall()
        return {doc_id for (doc_id,) in rows}

    def iter_documents(
        self, dim: int, batch_size: int = 2000, after_seq: int = 0
    ) -> Iterator[StoredDocument]:
        """Every document in ingest order with its chunks and vectors (for restore), streamed: two
        cursors in step (documents by seq; chunks by document seq, then position, read through
        the indexes without a sort), so a million chunks never sit in memory at once.

        ``after_seq``: only the documents written after the one with that ``seq``."""
        with self._connection("reading") as conn:
            docs = conn.execute(
                "SELECT doc_id, title, text, metadata FROM documents WHERE seq > ? ORDER BY seq", (after_seq,)
            )
            # CROSS JOIN keeps documents the outer loop: rows come in seq order from the index,
            # never gathered into a temporary sorted table (vectors and all).
            rows = conn.cursor().execute(
                "SELECT c.doc_id, c.chunk_id, c.position, c.start, c.end, c.vector, c.terms, c.tfs"
                " FROM documents d CROSS JOIN chunks c ON c.doc_id = d.doc_id WHERE d.seq > ?"
                " ORDER BY d.seq, c.position",
                (after_seq,),
            )
            pending = rows.fetchone()
            while batch := docs.fetchmany(batch_size):
                for doc_id, title, text, metadata in batch:
                    entries = []
                    while pending is not None and pending[0] == doc_id:
                        entries.append(pending[1:])
                        pending = rows.fetchone()
                    yield _stored(doc_id, title, text, metadata, entries, dim)


def _stored(
    doc_id: str, title: str, text: str, metadata: str, entries: list[Any], dim: int
) -> StoredDocument:
    doc = Document.as_stored(doc_id, title, text, json.loads(metadata))
    chunks = [Chunk(cid, doc_id, title, text[s:e], pos, s, e) for cid, pos, s, e, *_ in entries]
    blob = b"".join(entry[4] for entry in entries)
    # Checked before the reshape, which raised a bare ValueError ("cannot reshape array").
    if len(blob) != len(entries) * dim * 4:
        raise StorageError(
            f"stored vectors of {doc_id!r} are {len(blob)} bytes for {len(entries)} chunks,"
            f" not {dim}-d float32 vectors"
        )
    vectors = np.frombuffer(blob, dtype=np.float32).reshape(len(entries), dim)
    counts = None
    if all(entry[5] is not None and entry[6] is not None for entry in entries):
        counts = [_decode_terms(entry[0], entry[5], entry[6]) for entry in entries]
    return StoredDocument(doc, chunks, vectors, counts)


def _failure(action: str, path: Path, exc: sqlite3.Error) -> str:
    message = f"{action} {path} failed: {exc}"
    if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
        message += " (another process is writing to it: give each process its own data folder)"
    return message


def _encode_terms(counts: Mapping[str, int]) -> tuple[str, bytes]:
    # Analyzer terms never contain whitespace, so a space-joined string is unambiguous;
    # this decodes several times faster than JSON, which matters for restoring 100k chunks.
    freqs = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
    # uint16 keeps the common row as small as before; a row with a larger count is uint32 (the
    # byte length tells them apart). uint32 cannot overflow: the chunk's text is stored too, and
    # SQLite caps a value at 1e9 bytes, fewer than 2**32 terms.
    dtype = np.uint16 if freqs.size == 0 or freqs.max() <= 0xFFFF else np.uint32
    return " ".join(counts), freqs.astype(dtype).tobytes()


def _decode_terms(chunk_id: str, terms: str, tfs: bytes) -> dict[str, int]:
    names = terms.split()
    width = len(tfs) // len(names) if names else 2
    dtype = {2: np.uint16, 4: np.uint32}.get(width)
    if dtype is None or len(tfs) != width * len(names):
        raise StorageError(
            f"stored term frequencies of chunk {chunk_id!r} are {len(tfs)} bytes for {len(names)} terms"
        )
    return dict(zip(names, np.frombuffer(tfs, dtype=dtype).tolist(), strict=True))
