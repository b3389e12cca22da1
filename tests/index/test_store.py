"""SQLiteDocumentStore: one transaction per write, ingest order kept, schema checked."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from verityrag.errors import StorageError
from verityrag.index.live import LiveIndex
from verityrag.index.store import SCHEMA_VERSION, SQLiteDocumentStore
from verityrag.types import Chunk, Document

pytestmark = pytest.mark.unit


def _item(doc_id: str, text: str, dim: int = 4) -> tuple[Document, list[Chunk], np.ndarray]:
    doc = Document(doc_id, f"Title {doc_id}", text, {"n": len(text)})
    half = text.index(" ")
    chunks = [
        Chunk(f"{doc_id}#0", doc_id, doc.title, text[:half], 0, 0, half),
        Chunk(f"{doc_id}#1", doc_id, doc.title, text[half + 1 :], 1, half + 1, len(text)),
    ]
    vectors = np.arange(2 * dim, dtype=np.float32).reshape(2, dim) + len(doc_id)
    return doc, chunks, vectors


def test_put_many_then_iter_documents_returns_documents_chunks_vectors_in_ingest_order(
    tmp_path: Path,
) -> None:
    store = SQLiteDocumentStore(tmp_path / "s.db")
    items = [_item("b", "bee buzz"), _item("a", "ant crawl"), _item("c", "cat purr")]
    store.put_many(items[:2])
    store.put_many(items[2:])
    got = list(store.iter_documents(dim=4))
    assert [s.document.doc_id for s in got] == ["b", "a", "c"]
    for stored, (doc, chunks, vectors) in zip(got, items, strict=True):
        assert stored.document == doc
        assert stored.chunks == chunks
        assert np.array_equal(stored.vectors, vectors)
    assert store.count() == 3


def test_put_many_existing_doc_replaces_it_and_moves_it_last(tmp_path: Path) -> None:
    store = SQLiteDocumentStore(tmp_path / "s.db")
    store.put_many([_item("a", "ant crawl"), _item("b", "bee buzz")])
    store.put_many([_item("a", "ant sleeps now")])
    assert store.count() == 2
    assert store.get("a") == _item("a", "ant sleeps now")[0]
    assert [s.document.doc_id for s in store.iter_documents(dim=4)] == ["b", "a"]


def test_delete_removes_document_and_its_chunks(tmp_path: Path) -> None:
    store = SQLiteDocumentStore(tmp_path / "s.db")
    store.put_many([_item("a", "ant crawl"), _item("b", "bee buzz")])
    assert store.delete("a") is True
    assert store.delete("a") is False
    assert store.get("a") is None
    assert [s.document.doc_id for s in store.iter_documents(dim=4)] == ["b"]
    (n_chunks,) = sqlite3.connect(tmp_path / "s.db").execute("SELECT COUNT(*) FROM chunks").fetchone()
    assert n_chunks == 2


def test_put_many_failing_item_rolls_back_whole_batch(tmp_path: Path) -> None:
    store = SQLiteDocumentStore(tmp_path / "s.db")
    doc, chunks, _ = _item("bad", "bad item")
    with pytest.raises(ValueError, match="zip"):
        store.put_many([_item("a", "ant crawl"), (doc, chunks, np.zeros((1, 4), np.float32))])
    assert store.count() == 0
    store.put_many([_item("a", "ant crawl")])  # the store is still usable
    assert store.count() == 1


def test_reopen_store_keeps_documents_and_meta(tmp_path: Path) -> None:
    store = SQLiteDocumentStore(tmp_path / "s.db", durability="power")
    store.put_many([_item("a", "ant crawl")])
    store.set_meta("embedder", "x")
    store.close()
    reopened = SQLiteDocumentStore(tmp_path / "s.db")
    assert reopened.get("a") == _item("a", "ant crawl")[0]
    assert reopened.get_meta("embedder") == "x"
    assert reopened.get_meta("missing") is None


def test_open_store_with_other_schema_version_raises(tmp_path: Path) -> None:
    SQLiteDocumentStore(tmp_path / "s.db").set_meta("schema_version", "999")
    with pytest.raises(StorageError, match="schema version 999"):
        SQLiteDocumentStore(tmp_path / "s.db")


def test_term_frequency_over_65535_is_restored_as_indexed_with_the_same_bm25(tmp_path: Path) -> None:
    text = "spam " * 70_000 + "eggs."
    doc = Document("big", "Big", text)
    small = Document("small", "Small", "spam and eggs, then ham.")
    items = [
        (doc, [Chunk("big#0", "big", "Big", text, 0, 0, len(text))], np.ones((1, 4), np.float32)),
        (
            small,
            [Chunk("small#0", "small", "Small", small.text, 0, 0, len(small.text))],
            np.ones((1, 4), np.float32),
        ),
    ]
    upserts = [(d.doc_id, chunks, vectors) for d, chunks, vectors in items]
    indexed = LiveIndex(dim=4)
    counts = indexed.term_counts(upserts)
    assert max(counts[0][0].values()) == 70_000  # past uint16
    store = SQLiteDocumentStore(tmp_path / "s.db")
    store.put_many(items, counts)
    indexed.apply(upserts, term_counts=counts)
    store.close()

    stored = list(SQLiteDocumentStore(tmp_path / "s.db").iter_documents(dim=4))
    assert [s.term_counts for s in stored] == counts
    restored = LiveIndex(dim=4)
    restored.apply(
        [(s.document.doc_id, s.chunks, s.vectors) for s in stored],
        term_counts=[s.term_counts for s in stored if s.term_counts is not None],
    )
    total = sum(sum(c.values()) for chunk_counts in counts for c in chunk_counts)
    assert restored.snapshot().total_len == indexed.snapshot().total_len == total > 70_000
    for query in ("spam", "eggs ham"):
        before = [(h.chunk.chunk_id, h.score) for h in indexed.search_lexical(query, 2)]
        assert [(h.chunk.chunk_id, h.score) for h in restored.search_lexical(query, 2)] == before


def test_version_1_store_is_read_and_marked_current(tmp_path: Path) -> None:
    store = SQLiteDocumentStore(tmp_path / "s.db")
    store.put_many([_item("a", "ant crawl")], [[{"ant": 3}, {"crawl": 1}]])  # uint16 rows, as version 1
    store.set_meta("schema_version", "1")
    store.close()
    reopened = SQLiteDocumentStore(tmp_path / "s.db")
    assert reopened.get_meta("schema_version") == SCHEMA_VERSION == "3"
    (stored,) = reopened.iter_documents(dim=4)
    assert stored.term_counts == [{"ant": 3}, {"crawl": 1}]


def test_term_frequencies_of_the_wrong_length_raise_storage_error(tmp_path: Path) -> None:
    store = SQLiteDocumentStore(tmp_path / "s.db")
    store.put_many([_item("a", "ant crawl")], [[{"ant": 3}, {"crawl": 1}]])
    store.close()
    with sqlite3.connect(tmp_path / "s.db") as conn:
        conn.execute("UPDATE chunks SET tfs=? WHERE chunk_id='a#1'", (b"\x01\x00\x00",))
    with pytest.raises(StorageError, match="chunk 'a#1' are 3 bytes for 1 terms"):
        list(SQLiteDocumentStore(tmp_path / "s.db").iter_documents(dim=4))


def test_open_store_on_garbage_file_raises_storage_error(tmp_path: Path) -> None:
    (tmp_path / "s.db").write_bytes(b"this is not a sqlite database at all" * 100)
    with pytest.raises(StorageError, match="cannot open the document store"):
        SQLiteDocumentStore(tmp_path / "s.db")


def test_replace_vectors_overwrites_stored_vectors(tmp_path: Path) -> None:
    store = SQLiteDocumentStore(tmp_path / "s.db")
    store.put_many([_item("a", "ant crawl")])
    store.replace_vectors({"a#0": np.full(2, 9.0, np.float32), "a#1": np.full(2, 8.0, np.float32)})
    (stored,) = store.iter_documents(dim=2)
    assert stored.vectors.tolist() == [[9.0, 9.0], [8.0, 8.0]]


def test_replace_vectors_failing_midway_keeps_old_vectors_and_meta(tmp_path: Path) -> None:
    store = SQLiteDocumentStore(tmp_path / "s.db")
    store.put_many([_item("a", "ant crawl")])
    store.set_meta("embedder", "old")
    bad = {"a#0": np.full(2, 9.0, np.float32), "a#1": "not a vector"}
    with pytest.raises(AttributeError):
        store.replace_vectors(bad, meta={"embedder": "new"})  # type: ignore[dict-item]
    assert store.get_meta("embedder") == "old"
    (stored,) = store.iter_documents(dim=4)
    assert np.array_equal(stored.vectors, _item("a", "ant crawl")[2])
    store.replace_vectors({"a#0": np.zeros(4, np.float32)}, meta={"embedder": "new"})
    assert store.get_meta("embedder") == "new"


@pytest.mark.unit
def test_data_folder_that_is_a_file_is_a_storage_error(tmp_path: Path) -> None:
    a_file = tmp_path / "not_a_folder"
    a_file.write_text("")
    with pytest.raises(StorageError, match="is a file: give a folder"):
        SQLiteDocumentStore(a_file / "verityrag.sqlite3")


def test_write_while_another_process_holds_the_lock_raises_storage_error_saying_locked(
    tmp_path: Path,
) -> None:
    # BEGIN IMMEDIATE timed out, then ROLLBACK of no transaction raised its own bare sqlite3
    # error ("cannot rollback - no transaction is active"), hiding that the store was locked.
    store = SQLiteDocumentStore(tmp_path / "s.db")
    store.put_many([_item("a", "ant crawl")])
    store._conn.execute("PRAGMA busy_timeout=50")  # not the default 5 s wait
    other = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process writing
    writes: dict[str, Callable[[], object]] = {
        "put_many": lambda: store.put_many([_item("b", "bee buzz")]),
        "delete": lambda: store.delete("a"),
        "set_meta": lambda: store.set_meta("k", "v"),
        "replace_vectors": lambda: store.replace_vectors({}, meta={"k": "v"}),
    }
    for name, write in writes.items():
        with pytest.raises(StorageError, match=r"database is locked.*another process") as err:
            write()
        assert isinstance(err.value.__cause__, sqlite3.OperationalError), name
    other.execute("ROLLBACK")
    store.put_many([_item("b", "bee buzz")])  # usable again once the lock is gone
    assert store.count() == 2


def test_stored_vectors_of_another_dimension_raise_storage_error(tmp_path: Path) -> None:
    store = SQLiteDocumentStore(tmp_path / "s.db")
    store.put_many([_item("a", "ant crawl", dim=4)])
    # The shape was checked after the reshape, which raised a bare ValueError first.
    with pytest.raises(StorageError, match="'a' are 32 bytes for 2 chunks, not 8-d float32 vectors"):
        list(store.iter_documents(dim=8))


def test_put_many_records_each_documents_ingest_time_and_declared_source(tmp_path: Path) -> None:
    store = SQLiteDocumentStore(tmp_path / "s.db")
    doc, chunks, vectors = _item("a", "ant crawl")
    sourced = Document("b", "B", "bee buzz", {"source": "field notes"})
    store.put_many([(doc, chunks, vectors)], ingested_at=1_700_000_000.5)
    store.put_many([(sourced, [Chunk("b#0", "b", "B", "bee buzz", 0, 0, 8)], vectors[:1])])
    found = store.provenance(["a", "b", "gone"])
    assert set(found) == {"a", "b"}  # a document not stored is left out
    assert (found["a"].source, found["a"].ingested_at) == (None, 1_700_000_000.5)  # {"n": 9}: no source
    assert found["b"].source == "field notes"
    assert found["b"].ingested_at is not None
    assert found["b"].ingested_at > 1_700_000_000.5


@pytest.mark.parametrize("metadata", [{"source": 3}, {"source": {"name": "x"}}, {"source": None}, {}])
def test_provenance_source_is_only_a_string_source(tmp_path: Path, metadata: dict[str, object]) -> None:
    store = SQLiteDocumentStore(tmp_path / "s.db")
    _, chunks, vectors = _item("a", "ant crawl")
    store.put_many([(Document("a", "A", "ant crawl", metadata), chunks, vectors)])
    assert store.provenance(["a"])["a"].source is None


def test_store_made_before_ingest_times_gets_the_column_and_reads_them_as_unknown(tmp_path: Path) -> None:
    store = SQLiteDocumentStore(tmp_path / "s.db")
    store.put_many([_item("a", "ant crawl")])
    store.close()
    with sqlite3.connect(tmp_path / "s.db") as conn:  # the table as an older VerityRAG made it
        conn.execute("ALTER TABLE documents DROP COLUMN ingested_at")
    reopened = SQLiteDocumentStore(tmp_path / "s.db")
    assert reopened.provenance(["a"])["a"].ingested_at is None
    assert reopened.get("a") == _item("a", "ant crawl")[0]
    reopened.put_many([_item("b", "bee buzz")])
    assert reopened.provenance(["b"])["b"].ingested_at is not None
    assert reopened.get_meta("schema_version") == SCHEMA_VERSION  # unchanged: older versions still read it


def test_deletions_are_logged_and_the_writes_since_a_generation_read_back(tmp_path: Path) -> None:
    store = SQLiteDocumentStore(tmp_path / "s.db")
    store.put_many([_item("a", "ant crawl"), _item("b", "bee buzz")])
    then, seq = store.generation(), store.last_seq()
    store.delete("a")
    store.put_many([_item("c", "cat purr"), _item("b", "bee hums")])  # one new, one replaced
    store.delete("c")
    store.put_many([_item("c", "cat again")])
    assert store.delete("nobody") is False  # no write, nothing logged
    assert store.changes_since(then) == ["a", "c"]
    assert [s.document.doc_id for s in store.iter_documents(dim=4, after_seq=seq)] == ["b", "c"]
    assert store.changes_since(store.generation()) == []
    store.forget_deletions_through(store.generation() - 1)  # c's deletion came before the last put
    # From before the forgotten deletions nothing can be replayed (an older image put back would
    # bring "a" and "c" back); from the generation forgotten through, everything still can.
    assert store.changes_since(then) is None
    assert store.changes_since(store.generation() - 1) == []


def test_writes_that_cannot_be_replayed_say_so(tmp_path: Path) -> None:
    store = SQLiteDocumentStore(tmp_path / "s.db")
    store.put_many([_item("a", "ant crawl")])
    then = store.generation()
    store.replace_vectors({"a#0": np.ones(4, dtype=np.float32)})  # vectors rewritten in place
    assert store.changes_since(then) is None
    assert store.changes_since(store.generation()) == []
    store.close()
    # a version-2 store logged no deletions: only what comes after opening it here replays
    with sqlite3.connect(tmp_path / "s.db") as conn:
        conn.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
        conn.execute("DELETE FROM meta WHERE key='deletions_logged_from'")
    reopened = SQLiteDocumentStore(tmp_path / "s.db")
    assert reopened.get_meta("schema_version") == SCHEMA_VERSION
    assert reopened.changes_since(then) is None
    assert reopened.changes_since(reopened.generation()) == []


def test_a_document_written_after_the_latest_was_deleted_still_comes_after_it(tmp_path: Path) -> None:
    # MAX(seq) + 1 gave the deleted document's number again: a replay from an image that held
    # the deleted one (everything up to its seq) would have missed the new document.
    store = SQLiteDocumentStore(tmp_path / "s.db")
    store.put_many([_item("a", "ant crawl"), _item("b", "bee buzz")])
    then = store.last_seq()
    store.delete("b")
    store.put_many([_item("c", "cat purr")])
    assert [s.document.doc_id for s in store.iter_documents(dim=4, after_seq=then)] == ["c"]
    store.close()
    assert SQLiteDocumentStore(tmp_path / "s.db").last_seq() > then
