"""The index image (verityrag.index.image): a restart after a clean stop opens it and answers as the
index it was made of; a stale, damaged, foreign or half-written image is passed over and the index
rebuilt from the store, which stays the truth."""

from __future__ import annotations

import errno
import json
import logging
import shutil
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from verityrag import VerityRAGPipeline
from verityrag.config import Settings
from verityrag.embed.hashing import HashingEmbedder
from verityrag.errors import StorageError
from verityrag.index import image as image_module
from verityrag.index.image import MANIFEST, image_generation
from verityrag.index.live import LiveIndex
from verityrag.ingest import writer as writer_module
from verityrag.ingest.writer import IMAGE_DIR, STORE_FILENAME, DocumentWriter
from verityrag.types import Chunk, Document

pytestmark = pytest.mark.unit

SETTINGS = Settings(reader=False)
DOCS = [
    Document(
        "ferry",
        "MV Corran Bell",
        "The MV Corran Bell is 64 metres long. It sails from Oban to Mull.",
        {"source": "leaflet"},
    ),
    Document(
        "mill",
        "Tide mill",
        "The tide mill at Wexcombe was built in 1790 by Ann Carrow.",
        {"source": "museum"},
    ),
    Document(
        "engine", "Steam engine", "The steam engine converts heat into work. James Watt improved it.", {}
    ),
]
QUERIES = ["how long is the ferry", "who built the tide mill", "steam engine heat", "Oban Mull"]


def _answers(pipeline: VerityRAGPipeline) -> list[Any]:
    """What a restart must keep: lexical, dense and fused hits, filters, listings, documents."""
    index = pipeline.index
    vector = pipeline.embedder.encode(["ferry length"])[0]
    return [
        [(h.chunk_id, round(h.score, 9)) for q in QUERIES for h in pipeline.retriever.search(q, 5)],
        [(s.chunk.chunk_id, round(s.score, 9)) for q in QUERIES for s in index.search_lexical(q, 5)],
        [(s.chunk.chunk_id, round(s.score, 9)) for s in index.search_dense(vector, 5)],
        [d.doc_id for d in pipeline.list_documents(filter={"source": "leaflet"})[1]],
        pipeline.get_document("mill"),
        [c.text for c in index.chunks_of("ferry")],
        (len(index), index.n_documents),
    ]


def _filled(folder: Path, **index_options: Any) -> list[Any]:
    """A stopped pipeline in ``folder`` holding DOCS (one replaced, one deleted on the way); its answers."""
    embedder = HashingEmbedder()
    index = LiveIndex(embedder.dim, **index_options) if index_options else None
    with VerityRAGPipeline(embedder, folder, SETTINGS, index=index) as pipeline:
        pipeline.ingest_documents([*DOCS, Document("gone", "Gone", "A document deleted before the stop.")])
        pipeline.ingest_document("ferry", DOCS[0].title, DOCS[0].text, DOCS[0].metadata)  # replaced
        pipeline.delete_document("gone")
        return _answers(pipeline)


def _reopen(folder: Path, **index_options: Any) -> VerityRAGPipeline:
    embedder = HashingEmbedder()
    index = LiveIndex(embedder.dim, **index_options) if index_options else None
    return VerityRAGPipeline(embedder, folder, SETTINGS, index=index)


def _killed(pipeline: VerityRAGPipeline) -> list[Any]:
    """Its answers, then the process "killed": the store closed without ``close()``, so the
    image on disk stays of the generation before its writes."""
    answers = _answers(pipeline)
    assert pipeline.store is not None
    pipeline.store.close()
    return answers


@pytest.fixture
def rebuilds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the restores from the store (an image opened is none)."""
    calls: list[int] = []
    original = DocumentWriter.restore

    def counted(self: DocumentWriter, store: Any) -> None:
        calls.append(1)
        original(self, store)

    monkeypatch.setattr(DocumentWriter, "restore", counted)
    return calls


@pytest.mark.parametrize(
    "index_options",
    [{}, {"text_memory_limit": 64}, {"dense_backend": "hnsw"}],
    ids=["default", "texts spilled to a file", "hnsw graph"],
)
def test_a_restart_after_a_clean_stop_opens_the_image_and_answers_alike(
    tmp_path: Path, rebuilds: list[int], index_options: dict[str, Any]
) -> None:
    before = _filled(tmp_path, **index_options)
    rebuilds.clear()
    with _reopen(tmp_path, **index_options) as reopened:
        assert rebuilds == []
        assert _answers(reopened) == before
        # and it goes on: a write after the image is kept, in the store and the next image
        reopened.ingest_document("pier", "Pier", "The pier at Oban is 200 metres long.")
        after = _answers(reopened)
    with _reopen(tmp_path, **index_options) as again:
        assert rebuilds == []
        assert _answers(again) == after


def test_a_start_after_a_crash_opens_the_image_and_replays_the_writes_since(
    tmp_path: Path, rebuilds: list[int]
) -> None:
    _filled(tmp_path)
    crashed = _reopen(tmp_path)
    crashed.ingest_document("pier", "Pier", "The pier at Oban is 200 metres long.", {"source": "leaflet"})
    crashed.ingest_documents([Document("quay", "Quay", "The quay at Mull is older than the pier.")])
    crashed.ingest_document("mill", "Tide mill", "The tide mill at Wexcombe was rebuilt in 1820.", {})
    crashed.delete_document("engine")
    crashed.ingest_document("gone2", "Gone", "Written and deleted between the image and the crash.")
    crashed.delete_document("gone2")
    crashed.delete_document("ferry")
    crashed.ingest_document(
        "ferry", DOCS[0].title, "The MV Corran Bell is 70 metres long now.", {"source": "leaflet"}
    )
    expected = _killed(crashed)
    rebuilds.clear()
    with _reopen(tmp_path) as restarted:
        assert rebuilds == []  # the image, and the writes since replayed from the store
        assert _answers(restarted) == expected
        assert restarted.get_document("engine") is None
        restarted.ingest_document("after", "After", "A write after the replay is kept.")
        expected = _answers(restarted)
    with _reopen(tmp_path) as again:  # the clean stop wrote a new image, the log is trimmed
        assert rebuilds == []
        assert _answers(again) == expected
        assert again.store is not None
        assert again.store.changes_since(again.store.generation()) == []


def test_writes_since_the_image_that_cannot_be_replayed_rebuild_from_the_store(
    tmp_path: Path, rebuilds: list[int]
) -> None:
    _filled(tmp_path)
    crashed = _reopen(tmp_path)
    crashed.ingest_document("pier", "Pier", "The pier at Oban is 200 metres long.")
    expected = _answers(crashed)
    assert crashed.store is not None
    crashed.store.replace_vectors(
        {}, term_counts_by_chunk={"pier#0": {"pier": 1, "oban": 1, "long": 1, "metr": 1}}
    )
    crashed.store.close()
    rebuilds.clear()
    with _reopen(tmp_path) as restarted:
        assert rebuilds == [1]
        assert _answers(restarted)[2:] == expected[2:]  # rebuilt from the store as it now is


def test_a_store_behind_its_image_stops_the_start_until_the_image_is_removed(
    tmp_path: Path, rebuilds: list[int]
) -> None:
    _filled(tmp_path)  # the image, then the store put back as it was before the last writes
    shutil.copy(tmp_path / STORE_FILENAME, tmp_path / "older.db")
    with _reopen(tmp_path) as pipeline:
        pipeline.ingest_document("pier", "Pier", "The pier at Oban is 200 metres long.")
    image = tmp_path / IMAGE_DIR
    manifest = (image / MANIFEST).read_bytes()
    _put_store_back(tmp_path, tmp_path / "older.db")
    with pytest.raises(StorageError, match="behind the index image") as stopped:
        _reopen(tmp_path)
    assert f"remove {image}" in str(stopped.value)
    assert (image / MANIFEST).read_bytes() == manifest  # the image of the newer store is kept
    shutil.rmtree(image)  # what the error says to do to serve the store as it is
    rebuilds.clear()
    with _reopen(tmp_path) as restarted:
        assert rebuilds == [1]
        assert restarted.get_document("pier") is None


def _put_store_back(folder: Path, copy: Path | None) -> None:
    """The store files replaced by ``copy`` (None: deleted)."""
    for suffix in ("", "-wal", "-shm"):
        (folder / f"{STORE_FILENAME}{suffix}").unlink(missing_ok=True)
    if copy is not None:
        shutil.copy(copy, folder / STORE_FILENAME)


@pytest.mark.parametrize("how", ["deleted", "truncated"])
def test_a_vanished_store_beside_its_image_stops_the_start_and_the_image_is_kept(
    tmp_path: Path, how: str
) -> None:
    _filled(tmp_path)
    image = tmp_path / IMAGE_DIR
    manifest = (image / MANIFEST).read_bytes()
    _put_store_back(tmp_path, None)
    if how == "truncated":
        (tmp_path / STORE_FILENAME).write_bytes(b"")
    for _ in range(2):  # and again: the failed start wrote nothing over the image
        with pytest.raises(StorageError, match="is missing or empty") as stopped:
            _reopen(tmp_path)
        assert "3 documents" in str(stopped.value)
        assert "put the store back from a backup" in str(stopped.value)
    assert (image / MANIFEST).read_bytes() == manifest


def test_an_older_image_put_back_does_not_bring_deleted_documents_back(
    tmp_path: Path, rebuilds: list[int]
) -> None:
    _filled(tmp_path)
    older = tmp_path / "older_image"
    shutil.copytree(tmp_path / IMAGE_DIR, older)
    with _reopen(tmp_path) as pipeline:  # deleted, then a clean stop: its image holds the deletion
        pipeline.delete_document("mill")
    shutil.rmtree(tmp_path / IMAGE_DIR)
    shutil.copytree(older, tmp_path / IMAGE_DIR)  # a backup restore that mixed two times
    rebuilds.clear()
    with _reopen(tmp_path) as restarted:
        assert rebuilds == [1]
        assert restarted.get_document("mill") is None
        assert all(
            s.chunk.doc_id != "mill" for s in restarted.index.search_lexical("tide mill Ann Carrow", 5)
        )


def test_another_stores_image_of_the_same_generation_is_not_opened(
    tmp_path: Path, rebuilds: list[int]
) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    _filled(ours)
    embedder = HashingEmbedder()
    with VerityRAGPipeline(embedder, theirs, SETTINGS) as other:  # the same writes, other texts
        theirs_docs = [Document(d.doc_id, d.title, "Their text: " + d.text, {}) for d in DOCS]
        other.ingest_documents([*theirs_docs, Document("gone", "Gone", "x")])
        other.ingest_document("ferry", "Ferry", "Their ferry.")
        other.delete_document("gone")
    assert image_generation(ours / IMAGE_DIR) == image_generation(theirs / IMAGE_DIR)
    shutil.rmtree(ours / IMAGE_DIR)
    shutil.copytree(theirs / IMAGE_DIR, ours / IMAGE_DIR)
    rebuilds.clear()
    with _reopen(ours) as restarted:
        assert rebuilds == [1]
        assert [c.text for c in restarted.index.chunks_of("ferry")] == [DOCS[0].text]


@pytest.mark.parametrize(
    "damage",
    ["truncated", "flipped", "manifest", "missing", "manifest a list", "files not an object", "a folder"],
)
def test_a_damaged_image_is_passed_over_and_the_index_rebuilt(
    tmp_path: Path, rebuilds: list[int], caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    before = _filled(tmp_path)
    folder = tmp_path / IMAGE_DIR
    state = folder / "state.pkl"
    if damage == "truncated":
        state.write_bytes(state.read_bytes()[:-10])
    elif damage == "flipped":
        data = bytearray((folder / "arena0.bin").read_bytes())
        data[5] ^= 0xFF
        (folder / "arena0.bin").write_bytes(bytes(data))
    elif damage == "manifest":
        (folder / MANIFEST).write_text("{not json", encoding="utf-8")
    elif damage == "manifest a list":  # valid JSON, not an object: once a 503 for good
        (folder / MANIFEST).write_text("[1, 2]", encoding="utf-8")
    elif damage == "files not an object":
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        manifest["files"] = {name: "big" for name in manifest["files"]}
        (folder / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    elif damage == "a folder":  # a file it cannot read as one (as one unreadable to its user)
        state.unlink()
        state.mkdir()
    else:
        state.unlink()
    rebuilds.clear()
    with caplog.at_level(logging.WARNING, logger="verityrag.index.image"), _reopen(tmp_path) as reopened:
        assert rebuilds == [1]
        assert _answers(reopened) == before
    assert "rebuilding from the store" in caplog.text


def test_an_image_made_with_other_settings_is_not_opened(tmp_path: Path, rebuilds: list[int]) -> None:
    _filled(tmp_path)
    rebuilds.clear()
    with _reopen(tmp_path, k1=1.2) as other:
        assert rebuilds == [1]
        assert other.index.k1 == 1.2  # BM25 as this index scores it, not as the image's did


def test_no_image_is_made_of_an_index_another_process_wrote_past(
    tmp_path: Path, rebuilds: list[int], caplog: pytest.LogCaptureFixture
) -> None:
    _filled(tmp_path)
    first, second = _reopen(tmp_path), _reopen(tmp_path)  # two processes on one data folder
    second.ingest_document("pier", "Pier", "The pier at Oban is 200 metres long.")
    with caplog.at_level(logging.WARNING, logger="verityrag.ingest.writer"):
        assert first.checkpoint() is False  # its index lacks the pier
    assert "another process wrote" in caplog.text
    second.close()  # this one holds the store exactly: its image is the store's
    assert first.store is not None
    first.store.close()
    rebuilds.clear()
    with _reopen(tmp_path) as restarted:
        assert rebuilds == []
        assert restarted.get_document("pier") is not None


def test_a_write_cut_short_leaves_the_old_image_or_none(tmp_path: Path, rebuilds: list[int]) -> None:
    before = _filled(tmp_path)
    folder = tmp_path / IMAGE_DIR
    generation = image_generation(folder)
    # what a crash inside write_image leaves: a half-written new folder beside the whole old one
    half = tmp_path / f"{IMAGE_DIR}.new"
    shutil.copytree(folder, half)
    (half / MANIFEST).unlink()
    rebuilds.clear()
    with _reopen(tmp_path) as reopened:
        assert rebuilds == []
        assert _answers(reopened) == before
        reopened.ingest_document("pier", "Pier", "The pier at Oban is 200 metres long.")
    assert not half.exists()  # the next image was written over it
    assert image_generation(folder) == (generation or 0) + 1


def test_an_image_folder_replaced_by_a_file_is_replaced_at_each_clean_stop(
    tmp_path: Path, rebuilds: list[int]
) -> None:
    _filled(tmp_path)
    shutil.rmtree(tmp_path / IMAGE_DIR)
    (tmp_path / IMAGE_DIR).write_text("not an image")
    for n in range(2):  # every later stop too
        rebuilds.clear()
        with _reopen(tmp_path) as reopened:
            assert rebuilds == ([1] if n == 0 else [])
            reopened.ingest_document(f"pier{n}", "Pier", "The pier at Oban is 200 metres long.")
        assert (tmp_path / IMAGE_DIR).is_dir()
        assert not (tmp_path / f"{IMAGE_DIR}.old").exists()


def test_a_failed_image_write_leaves_the_old_image_and_no_half_of_the_new(
    tmp_path: Path, rebuilds: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _filled(tmp_path)
    generation = image_generation(tmp_path / IMAGE_DIR)
    reopened = _reopen(tmp_path)
    reopened.ingest_document("pier", "Pier", "The pier at Oban is 200 metres long.")

    def disk_full(*_: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(image_module, "_write_buffers", disk_full)
    with pytest.raises(OSError, match="No space"):
        reopened.checkpoint()
    assert not (tmp_path / f"{IMAGE_DIR}.new").exists()
    assert image_generation(tmp_path / IMAGE_DIR) == generation
    monkeypatch.undo()
    assert reopened.store is not None
    reopened.store.close()  # killed: the next start replays the pier onto the old image
    rebuilds.clear()
    with _reopen(tmp_path) as restarted:
        assert rebuilds == []
        assert restarted.get_document("pier") is not None
        assert _answers(restarted)[4] == before[4]


def test_an_in_memory_pipeline_has_no_image_to_write() -> None:
    pipeline = VerityRAGPipeline(settings=SETTINGS)
    pipeline.ingest_document("d", "D", "Nothing is kept.")
    assert pipeline.checkpoint() is False
    pipeline.close()


@pytest.mark.parametrize("memory_limit", [1 << 20, 4], ids=["tail in memory", "tail spilled"])
def test_an_arena_opened_from_an_image_reads_across_its_base_and_writes_itself_whole(
    tmp_path: Path, memory_limit: int
) -> None:
    from verityrag.index._arena import ByteArena

    original = ByteArena(memory_limit=memory_limit)
    original.append(b"abcdef")
    assert original.write_to(tmp_path / "image.bin") == 6
    (tmp_path / "image.bin").write_bytes((tmp_path / "image.bin").read_bytes() + b"junk past the size")
    opened = ByteArena.from_file(tmp_path / "image.bin", 6, memory_limit=memory_limit)
    assert opened.append(b"ghij") == 6
    assert opened.read(0, 6) == b"abcdef"
    assert opened.read(4, 4) == b"efgh"  # a run of rows across the base
    assert opened.read(6, 4) == b"ghij"
    assert opened.write_to(tmp_path / "next.bin") == 10
    assert (tmp_path / "next.bin").read_bytes() == b"abcdefghij"
    (tmp_path / "image.bin").unlink()  # the next image replaced it: the open file still reads
    assert opened.read(0, 10) == b"abcdefghij"


def test_postings_opened_from_an_image_take_new_postings_as_a_rebuilt_index_does(
    tmp_path: Path, rebuilds: list[int]
) -> None:
    # The image holds every term's postings in one array; a term opened from it is a slice of
    # that array, so its next posting must go to a buffer of its own, never over its neighbour's.
    later = [
        Document("pier", "Pier", "The pier at Oban is 200 metres long. The ferry sails from it.", {}),
        Document("mill2", "Second tide mill", "Another tide mill, built by Ann Carrow in 1795.", {}),
    ]
    _filled(tmp_path)
    rebuilds.clear()
    with _reopen(tmp_path) as reopened:
        assert rebuilds == []
        for term, posting in reopened.index.snapshot().segment.postings.items():
            assert len(posting.slots) == len(posting.tfs) == posting.n, term
        reopened.ingest_document("steam", "Steam", "Steam engine heat: the steam engine of the mill.")
        reopened.ingest_documents(later)  # the bulk path
        opened = _answers(reopened)
    reference = VerityRAGPipeline(HashingEmbedder(), settings=SETTINGS)
    reference.ingest_documents([*DOCS, Document("gone", "Gone", "A document deleted before the stop.")])
    reference.ingest_document("ferry", DOCS[0].title, DOCS[0].text, DOCS[0].metadata)
    reference.delete_document("gone")
    reference.ingest_document("steam", "Steam", "Steam engine heat: the steam engine of the mill.")
    reference.ingest_documents(later)
    assert opened[1] == _answers(reference)[1]  # the BM25 hits and scores


def test_a_document_written_after_the_images_latest_was_deleted_is_replayed(
    tmp_path: Path, rebuilds: list[int]
) -> None:
    _filled(tmp_path)  # its latest document is the replaced "ferry"
    crashed = _reopen(tmp_path)
    crashed.delete_document("ferry")
    crashed.ingest_document("pier", "Pier", "The pier at Oban is 200 metres long.")
    expected = _killed(crashed)
    rebuilds.clear()
    with _reopen(tmp_path) as restarted:
        assert rebuilds == []
        assert restarted.get_document("pier") is not None
        assert _answers(restarted) == expected


def test_the_manifest_sums_each_file_as_it_is_on_disk(tmp_path: Path) -> None:
    import json

    import xxhash

    _filled(tmp_path)
    manifest = json.loads((tmp_path / IMAGE_DIR / MANIFEST).read_text(encoding="utf-8"))
    on_disk = sorted(p.name for p in (tmp_path / IMAGE_DIR).iterdir() if p.name != MANIFEST)
    assert sorted(manifest["files"]) == on_disk
    for name, expected in manifest["files"].items():
        data = (tmp_path / IMAGE_DIR / name).read_bytes()
        assert expected == {"size": len(data), "xxh3_64": xxhash.xxh3_64_hexdigest(data)}, name


def test_an_image_whose_manifest_gives_crc32_sums_is_checked_by_them(
    tmp_path: Path, rebuilds: list[int]
) -> None:
    import json
    import zlib

    expected = _filled(tmp_path)
    path = tmp_path / IMAGE_DIR / MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8"))
    for name, entry in manifest["files"].items():  # as images written before XXH3 sum them
        del entry["xxh3_64"]
        entry["crc32"] = zlib.crc32((tmp_path / IMAGE_DIR / name).read_bytes())
    path.write_text(json.dumps(manifest), encoding="utf-8")
    rebuilds.clear()
    with _reopen(tmp_path) as reopened:
        assert rebuilds == []
        assert _answers(reopened) == expected
        reopened.ingest_document("pier", "Pier", "The pier at Oban is 200 metres long.")  # a new image
    manifest = json.loads(path.read_text(encoding="utf-8"))
    buffers = manifest["files"][image_module.BUFFERS]
    del buffers["xxh3_64"]
    buffers["crc32"] = 12345  # a wrong sum of the old kind
    path.write_text(json.dumps(manifest), encoding="utf-8")
    rebuilds.clear()
    with _reopen(tmp_path):
        assert rebuilds == [1]


def test_the_arrays_bytes_are_mapped_privately_not_copied(tmp_path: Path) -> None:
    import mmap

    from verityrag.index.image import _read_buffers

    path = tmp_path / "buffers.bin"
    path.write_bytes(bytes(range(64)) * 2)
    first, second = _read_buffers(path, [[0, 64], [64, 128]])
    assert isinstance(first.obj, mmap.mmap)  # a view of the file's mapping: nothing copied at open
    assert bytes(second[:3]) == b"\x00\x01\x02"
    first[0] = 99  # the index may write to an array it opened (a deletion marks a slot)
    assert first[0] == 99
    assert path.read_bytes()[0] == 0  # the image's file stays as it was written
    with pytest.raises(OSError, match="ended early"):
        _read_buffers(path, [[0, 200]])


def _index_answers(index: LiveIndex, embedder: HashingEmbedder) -> list[Any]:
    vector = embedder.encode(["tide mill wheel"])[0]
    return [
        [
            (s.chunk.chunk_id, s.chunk.text, round(s.score, 9))
            for s in index.search_lexical("tide mill 7", 10)
        ],
        [(s.chunk.chunk_id, round(s.score, 9)) for s in index.search_dense(vector, 10)],
        (len(index), index.n_documents, sorted(index.doc_ids())),
        [index.document_frequency(t) for t in ("tide", "mill", "7", "replaced")],
        [c.text for c in index.chunks_of("d1")],
    ]


def _upsert(index: LiveIndex, embedder: HashingEmbedder, vectors: str, doc_id: str, text: str) -> None:
    chunk = Chunk(f"{doc_id}#0", doc_id, f"Title {doc_id}", text, 0, 0, len(text))
    vector = embedder.encode([text])
    if vectors == "dense":  # every dimension set: the float32 columns, not the int8 ones
        vector = vector + np.float32(0.01)
    index.upsert(doc_id, [chunk], vector)


def _later_writes(index: LiveIndex, embedder: HashingEmbedder, vectors: str) -> None:
    """Writes past every buffer's capacity (postings long enough for block maxima), deletions
    (deaths marked in place) and a replaced document."""
    for i in range(40, 1500):
        _upsert(index, embedder, vectors, f"d{i}", f"The tide mill {i % 13} turns its wheel {i}.")
    for i in range(0, 40, 3):
        index.delete(f"d{i}")
    _upsert(index, embedder, vectors, "d1", "The replaced tide mill text.")


@pytest.mark.parametrize("vectors", ["hashed", "dense"])
def test_an_image_of_a_frozen_state_is_the_index_as_it_was_taken_while_writes_went_on(
    tmp_path: Path, vectors: str
) -> None:
    embedder = HashingEmbedder()
    index = LiveIndex(embedder.dim, text_memory_limit=256)  # texts spill to a file meanwhile
    for i in range(40):
        _upsert(index, embedder, vectors, f"d{i}", f"The tide mill {i % 13} turns its wheel {i}.")
    taken = _index_answers(index, embedder)
    frozen = index.frozen_image_state()
    assert frozen is not None
    _later_writes(index, embedder, vectors)
    of = image_module.ImageOf("store", 1, 40)
    image_module.write_image(tmp_path / "image", of, 40, {}, frozen.state, frozen.arena_sizes)
    opened = image_module.read_image(tmp_path / "image", 1, {}, "store")
    assert opened is not None
    twin = LiveIndex(embedder.dim, text_memory_limit=256)
    twin.load_image_state(opened.state)
    assert _index_answers(twin, embedder) == taken
    # and the image takes the writes the live index took after it: the same index again
    _later_writes(twin, embedder, vectors)
    assert _index_answers(twin, embedder) == _index_answers(index, embedder)


def test_an_index_with_an_hnsw_graph_gives_no_frozen_state() -> None:
    embedder = HashingEmbedder()
    index = LiveIndex(embedder.dim, dense_backend="hnsw")
    _upsert(index, embedder, "hashed", "d0", "The tide mill turns.")
    assert index.frozen_image_state() is None


@pytest.mark.parametrize("index_options", [{}, {"text_memory_limit": 64}], ids=["default", "texts spilled"])
def test_writes_go_on_while_a_checkpoint_writes_the_image_and_a_crash_after_replays_them(
    tmp_path: Path,
    rebuilds: list[int],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    index_options: dict[str, Any],
) -> None:
    _filled(tmp_path, **index_options)
    pipeline = _reopen(tmp_path, **index_options)  # postings opened from the image: made on demand
    pipeline.ingest_document("pier", "Pier", "The pier at Oban is 200 metres long.", {"source": "leaflet"})
    pipeline.delete_document("engine")
    assert pipeline.store is not None
    generation = pipeline.store.generation()
    writing, release = threading.Event(), threading.Event()
    real_write = writer_module.write_image

    def held_write(*args: Any, **kwargs: Any) -> int:
        writing.set()
        assert release.wait(60)
        return real_write(*args, **kwargs)

    monkeypatch.setattr(writer_module, "write_image", held_write)
    done: list[bool] = []
    checkpoint = threading.Thread(target=lambda: done.append(pipeline.checkpoint()))
    checkpoint.start()
    try:
        assert writing.wait(60)
        # The image is being written: writes go on (they waited for the whole write before).
        pipeline.ingest_document("quay", "Quay", "The quay at Mull is older than the pier.")
        pipeline.ingest_documents(
            [Document(f"note{i}", f"Note {i}", f"Harbour note {i} about the ferry.") for i in range(300)]
        )
        pipeline.delete_document("mill")
        pipeline.ingest_document("ferry", DOCS[0].title, "The MV Corran Bell is 70 metres long now.")
        assert checkpoint.is_alive()
    finally:
        release.set()
        checkpoint.join(60)
    assert done == [True]
    assert image_generation(tmp_path / IMAGE_DIR) == generation  # the store as the checkpoint was asked
    expected = _killed(pipeline)
    rebuilds.clear()
    with caplog.at_level(logging.INFO, logger="verityrag.ingest.writer"):
        restarted = _reopen(tmp_path, **index_options)
    with restarted:
        assert rebuilds == []
        assert "replayed 1 deletions and 302 documents written since the index image" in caplog.text
        assert _answers(restarted) == expected


@pytest.mark.parametrize("frozen", [True, False], ids=["frozen state", "writes held"])
def test_the_slots_by_document_and_frequencies_an_image_leaves_out_are_derived_alike(
    tmp_path: Path, frozen: bool
) -> None:
    embedder = HashingEmbedder()
    index = LiveIndex(embedder.dim)
    for i in range(30):
        _upsert(index, embedder, "hashed", f"d{i}", f"The tide mill {i % 7} turns its wheel {i}.")
    index.upsert("empty", [], np.zeros((0, embedder.dim), np.float32))  # a document with no chunk
    for i in range(0, 30, 4):
        index.delete(f"d{i}")
    _upsert(index, embedder, "hashed", "d1", "The replaced tide mill text.")
    if frozen:
        taken = index.frozen_image_state()
        assert taken is not None
        state, sizes = taken
    else:
        with index.writes_held() as state:
            sizes = {}
    of = image_module.ImageOf("store", 1, index.n_documents)
    image_module.write_image(tmp_path / "image", of, 1, {}, state, sizes)
    opened = image_module.read_image(tmp_path / "image", 1, {}, "store")
    assert opened is not None
    twin = LiveIndex(embedder.dim)
    twin.load_image_state(opened.state)
    assert twin._doc_slots == index._doc_slots
    assert set(twin.doc_ids()) == set(index.doc_ids())
    assert "empty" in twin.doc_ids()
    assert twin._df == +index._df  # the deleted chunks' terms at zero are left out
    assert twin._average_idf(twin.snapshot()) == index._average_idf(index.snapshot())
    # and writes go on from them as from the index's own
    for live in (index, twin):
        live.delete("d3")
        _upsert(live, embedder, "hashed", "d5", "The tide mill again.")
    assert twin._doc_slots == index._doc_slots
    assert +twin._df == +index._df
