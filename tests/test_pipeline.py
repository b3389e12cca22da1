"""VerityRAGPipeline: ingest, replace and delete across store and both indexes; bad input; answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from verityrag import AbstainReason, Document, InvalidInputError, Settings, VerityRAGPipeline
from verityrag.embed.hashing import HashingEmbedder
from verityrag.ingest.writer import data_dir_from_env
from verityrag.pipeline import as_document

pytestmark = pytest.mark.unit

OLD_TEXT = (
    "The aardvark digs burrows at night. Aardvarks eat ants and termites. "
    "An aardvark can dig very fast. Its tongue is long and sticky."
)
NEW_TEXT = "The okapi lives in the rainforest. Okapis are related to giraffes."


def _settings(**changes: Any) -> Settings:
    return Settings().replace(chunk_max_words=12, **changes)


@pytest.fixture
def pipeline(tmp_path: Path) -> VerityRAGPipeline:
    return VerityRAGPipeline(data_dir=tmp_path / "data", settings=_settings())


def _state(p: VerityRAGPipeline) -> tuple[Any, ...]:
    stats = p.stats()
    return (stats["documents"], stats["chunks"], stats["index_version"], p.store.count() if p.store else None)


def _dense_texts(p: VerityRAGPipeline, text: str, k: int = 50) -> list[str]:
    return [h.chunk.text for h in p.index.search_dense(p.embedder.encode([text])[0], k)]


# ------------------------------------------------------------- replace & delete


def test_ingest_document_new_doc_is_searchable_and_not_replaced(pipeline: VerityRAGPipeline) -> None:
    result = pipeline.ingest_document("zoo-1", "Aardvark", OLD_TEXT)
    assert result.doc_id == "zoo-1"
    assert result.replaced is False
    assert result.n_chunks == len(pipeline.index.chunks_of("zoo-1")) > 1
    assert pipeline.index.search_lexical("termites", 1)[0].chunk.doc_id == "zoo-1"


def test_ingest_document_same_id_replaces_in_both_indexes_and_store(
    pipeline: VerityRAGPipeline, tmp_path: Path
) -> None:
    pipeline.ingest_document("zoo-1", "Aardvark", OLD_TEXT)
    pipeline.ingest_document("zoo-2", "Otter", "Otters float on their backs. They hold hands.")
    old_chunks = pipeline.index.chunks_of("zoo-1")
    result = pipeline.ingest_document("zoo-1", "Okapi", NEW_TEXT)
    assert result.replaced is True
    assert pipeline.index.n_documents == 2
    assert pipeline.stats()["documents"] == 2
    new_texts = [c.text for c in pipeline.index.chunks_of("zoo-1")]
    assert len(pipeline.index) == len(new_texts) + len(pipeline.index.chunks_of("zoo-2"))
    assert pipeline.index.search_lexical("aardvark termites", 10) == []
    assert {h.chunk.text for h in pipeline.index.search_lexical("okapi", 10)} <= set(new_texts)
    for chunk in old_chunks:
        assert chunk.text not in _dense_texts(pipeline, chunk.text)
    assert pipeline.get_document("zoo-1") == Document("zoo-1", "Okapi", NEW_TEXT)
    pipeline.store.close()  # type: ignore[union-attr]
    reopened = VerityRAGPipeline(data_dir=tmp_path / "data", settings=_settings())
    assert reopened.get_document("zoo-1") == Document("zoo-1", "Okapi", NEW_TEXT)
    assert reopened.index.search_lexical("aardvark", 10) == []
    assert [c.text for c in reopened.index.chunks_of("zoo-1")] == new_texts


def test_delete_document_removes_from_both_indexes_and_store(
    pipeline: VerityRAGPipeline, tmp_path: Path
) -> None:
    pipeline.ingest_document("zoo-1", "Aardvark", OLD_TEXT)
    pipeline.ingest_document("zoo-2", "Okapi", NEW_TEXT)
    old_chunks = pipeline.index.chunks_of("zoo-1")
    assert pipeline.delete_document("zoo-1") is True
    assert pipeline.index.n_documents == 1
    assert pipeline.index.search_lexical("aardvark", 10) == []
    for chunk in old_chunks:
        assert chunk.text not in _dense_texts(pipeline, chunk.text)
    assert pipeline.get_document("zoo-1") is None
    assert pipeline.store.count() == 1  # type: ignore[union-attr]
    assert pipeline.delete_document("zoo-1") is False
    reopened = VerityRAGPipeline(data_dir=tmp_path / "data", settings=_settings())
    assert reopened.index.doc_ids() == ["zoo-2"]
    assert reopened.index.search_lexical("aardvark", 10) == []


def test_delete_document_in_memory_pipeline_removes_it() -> None:
    pipeline = VerityRAGPipeline(settings=_settings())
    pipeline.ingest_document("zoo-1", "Aardvark", OLD_TEXT)
    assert pipeline.delete_document("zoo-1") is True
    assert pipeline.delete_document("zoo-1") is False
    assert len(pipeline.index) == 0


def test_get_document_in_memory_multi_chunk_doc_returns_its_text() -> None:
    pipeline = VerityRAGPipeline(settings=_settings())
    pipeline.ingest_document("zoo-1", "Aardvark", OLD_TEXT)
    assert len(pipeline.index.chunks_of("zoo-1")) > 1
    assert pipeline.get_document("zoo-1") == Document("zoo-1", "Aardvark", OLD_TEXT)
    assert pipeline.get_document("missing") is None


def test_ingest_documents_bulk_accepts_documents_mappings_and_tuples() -> None:
    pipeline = VerityRAGPipeline(settings=_settings())
    n = pipeline.ingest_documents(
        [
            Document("a", "A", "Alpha text here."),
            {"doc_id": "b", "title": "B", "text": "Beta text here.", "metadata": {"k": 1}},
            ("c", "C", "Gamma text here."),
        ]
    )
    assert n == 3
    assert sorted(pipeline.index.doc_ids()) == ["a", "b", "c"]
    assert pipeline.stats()["chunks"] == 3


def test_chunks_through_pipeline_are_stable_and_index_into_text() -> None:
    first = VerityRAGPipeline(settings=_settings())
    second = VerityRAGPipeline(settings=_settings())
    first.ingest_document("zoo-1", "Aardvark", OLD_TEXT)
    second.ingest_document("zoo-1", "Aardvark", OLD_TEXT)
    chunks = first.index.chunks_of("zoo-1")
    assert chunks == second.index.chunks_of("zoo-1")
    for i, chunk in enumerate(chunks):
        assert chunk.chunk_id == f"zoo-1#{i}"
        assert chunk.text == OLD_TEXT[chunk.start : chunk.end]
        assert len(chunk.text.split()) <= 12


# ---------------------------------------------------------------- bad input

GOOD = {"doc_id": "ok-1", "title": "Title", "text": "Some real words here."}


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"text": ""}, "text", "empty"),
        ({"text": "   \n\t  "}, "text", "empty"),
        ({"text": "!!! ... ---"}, "text", "no word characters"),
        ({"text": b"bytes are not text"}, "text", "must be a string, got bytes"),
        ({"text": None}, "text", "must be a string, got NoneType"),
        ({"text": "x" * 101}, "text", "101 characters; the limit is 100"),
        ({"text": "Valid words \ud800 then more."}, "text", "not valid Unicode"),
        ({"title": "Bad \udfff title"}, "title", "not valid Unicode"),
        ({"title": 7}, "title", "must be a string"),
        ({"doc_id": ""}, "doc_id", "is invalid"),
        ({"doc_id": "has space"}, "doc_id", "is invalid"),
        ({"doc_id": "-leading-dash"}, "doc_id", "is invalid"),
        ({"doc_id": "x" * 201}, "doc_id", "is invalid"),
        ({"doc_id": "abc\n"}, "doc_id", "is invalid"),  # re.match's $ let a final newline through
        ({"doc_id": "a/../b"}, "doc_id", "is invalid"),  # clients resolve it: DELETE would hit "b"
        ({"doc_id": "a/./b"}, "doc_id", "is invalid"),
        ({"doc_id": "a/.."}, "doc_id", "is invalid"),
        ({"doc_id": 42}, "doc_id", "must be a string, got int"),
        ({"doc_id": None}, "doc_id", "must be a string"),
        ({"metadata": ["not", "a", "dict"]}, "metadata", "must be a dict"),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 20 else None,
)
def test_ingest_document_bad_input_raises_naming_field_and_writes_nothing(
    tmp_path: Path, changes: dict[str, Any], field: str, message: str
) -> None:
    pipeline = VerityRAGPipeline(data_dir=tmp_path, settings=Settings(max_document_chars=100))
    pipeline.ingest_document("existing", "T", "Already here before the bad one.")
    before = _state(pipeline)
    with pytest.raises(InvalidInputError, match=message) as err:
        pipeline.ingest_document(**{**GOOD, **changes})
    assert err.value.field == field
    assert _state(pipeline) == before


def test_ingest_document_limits_are_inclusive(tmp_path: Path) -> None:
    pipeline = VerityRAGPipeline(settings=Settings(max_document_chars=100))
    pipeline.ingest_document("x" * 200, "T", "y" * 100)
    assert pipeline.index.has_document("x" * 200)


@pytest.mark.parametrize(
    ("question", "message"),
    [
        ("", "is empty"),
        ("   \n", "is empty"),
        ("word " * 401, "2,005 characters; the limit is 2,000"),
        (None, "must be a string, got NoneType"),
        (b"bytes?", "must be a string, got bytes"),
        (42, "must be a string, got int"),
    ],
)
def test_query_bad_question_raises_naming_field(
    pipeline: VerityRAGPipeline, question: Any, message: str
) -> None:
    pipeline.ingest_document("zoo-1", "Aardvark", OLD_TEXT)
    with pytest.raises(InvalidInputError, match=message) as err:
        pipeline.query(question)
    assert err.value.field == "question"


def test_ingest_file_binary_raises_naming_file_and_writes_nothing(
    pipeline: VerityRAGPipeline, tmp_path: Path
) -> None:
    path = tmp_path / "blob.bin"
    path.write_bytes(b"\x00\x01\xff\xfe binary \x00")
    before = _state(pipeline)
    with pytest.raises(InvalidInputError, match=r"blob.bin.*is binary, not text") as err:
        pipeline.ingest_file(path)
    assert err.value.field == "file"
    assert _state(pipeline) == before


def test_ingest_file_reads_windows_1252_text_as_the_api_does(
    pipeline: VerityRAGPipeline, tmp_path: Path
) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("Café au lait is served here.".encode("latin-1"))
    pipeline.ingest_file(path)
    doc = pipeline.get_document("latin1.txt")
    assert doc is not None
    assert doc.text == "Café au lait is served here."


def test_ingest_file_uses_file_name_and_stem(pipeline: VerityRAGPipeline, tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("Café au lait is served here. It is warm.", encoding="utf-8")
    result = pipeline.ingest_file(path)
    assert result.doc_id == "notes.txt"
    meta = {"source": "notes.txt", "title": "notes", "format": "text"}
    assert pipeline.get_document("notes.txt") == Document("notes.txt", "notes", path.read_text("utf-8"), meta)
    assert pipeline.index.search_lexical("cafe", 1)[0].chunk.doc_id == "notes.txt"


@pytest.mark.parametrize("kind", ["pdf", "docx", "html", "markdown"])
def test_ingest_file_parses_every_format_the_api_takes(
    pipeline: VerityRAGPipeline, tmp_path: Path, kind: str
) -> None:
    from verityrag.ingest.sample_files import make_docx, make_pdf

    text = "The clinic opens at eight. Vaccinations cost forty pounds."
    files = {
        "pdf": ("clinic.pdf", make_pdf([text], title="Clinic")),
        "docx": ("clinic.docx", make_docx([text], title="Clinic")),
        "html": (
            "clinic.html",
            f"<html><head><title>Clinic</title></head><body><p>{text}</p></body></html>".encode(),
        ),
        "markdown": ("clinic.md", f"# Clinic\n\n{text}\n".encode()),
    }
    name, data = files[kind]
    path = tmp_path / name
    path.write_bytes(data)
    result = pipeline.ingest_file(path, metadata={"collection": "clinic"})
    doc = pipeline.get_document(result.doc_id)
    assert doc is not None
    assert doc.metadata["format"] == kind
    assert doc.metadata["collection"] == "clinic"
    assert "Vaccinations cost forty pounds." in doc.text
    assert "%PDF" not in doc.text  # parsed, not the raw bytes
    assert "<p>" not in doc.text


def test_ingest_documents_duplicate_ids_raise_and_write_nothing(pipeline: VerityRAGPipeline) -> None:
    before = _state(pipeline)
    docs = [("a", "A", "Alpha text."), ("b", "B", "Beta text."), ("a", "A2", "Alpha again.")]
    with pytest.raises(InvalidInputError, match="'a' appears more than once in the batch") as err:
        pipeline.ingest_documents(docs)
    assert err.value.field == "documents[2].doc_id"  # the argument's name, as the API's body has it
    assert "(documents[0] and documents[2])" in str(err.value)
    assert _state(pipeline) == before


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (("bad id", "T", "Fine text."), "doc_id"),
        (("bad", "T", ""), "text"),
        (("bad", "T", "Lone \ud800 surrogate."), "text"),
        ({"doc_id": "bad", "title": "T"}, "text"),
        ({"title": "T", "text": "No id."}, "doc_id"),
        (["bad", "T", "a list"], "document"),
    ],
)
def test_ingest_documents_one_bad_doc_raises_and_writes_nothing(
    pipeline: VerityRAGPipeline, bad: Any, field: str
) -> None:
    pipeline.ingest_document("existing", "T", "Already here.")
    before = _state(pipeline)
    good = [(f"good-{i}", "T", f"Good text number {i}.") for i in range(5)]
    with pytest.raises(InvalidInputError) as err:
        pipeline.ingest_documents([*good[:3], bad, *good[3:]], batch_size=2)
    assert err.value.field == field
    assert _state(pipeline) == before
    assert not pipeline.index.has_document("good-0")


def test_as_document_unsupported_type_names_document_field() -> None:
    with pytest.raises(InvalidInputError, match="expected a Document, mapping or 3-tuple, got int") as err:
        as_document(5)  # type: ignore[arg-type]
    assert err.value.field == "document"


# --------------------------------------------------------------------- query


def test_query_empty_index_abstains_with_no_evidence() -> None:
    result = VerityRAGPipeline(settings=_settings()).query("Where do aardvarks live?")
    assert result.abstained
    assert result.abstain_reason is AbstainReason.NO_EVIDENCE
    assert result.answer is None
    assert result.grounding.overall_score == 0.0


def test_query_k_limits_evidence() -> None:
    pipeline = VerityRAGPipeline(settings=_settings(reader=False))  # no model in a unit test
    pipeline.ingest_documents([(f"d{i}", "Aardvark", f"Aardvark fact number {i}.") for i in range(10)])
    assert len(pipeline.query("aardvark fact", k=3).evidence) == 3
    assert len(pipeline.query("aardvark fact").evidence) == pipeline.settings.top_k


def test_stats_counts_documents_and_chunks(pipeline: VerityRAGPipeline, tmp_path: Path) -> None:
    pipeline.ingest_document("zoo-1", "Aardvark", OLD_TEXT)
    stats = pipeline.stats()
    assert stats["documents"] == 1
    assert stats["chunks"] == len(pipeline.index) > 1
    assert stats["data_dir"] == str(tmp_path / "data")
    assert stats["embedder"] == pipeline.embedder.fingerprint()


def test_pipeline_constructor_without_settings_or_data_dir_reads_no_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The entry points read VERITYRAG_* (Settings.from_env, data_dir_from_env); a constructor never does.
    monkeypatch.setenv("VERITYRAG_DATA_DIR", str(tmp_path / "env-data"))
    monkeypatch.setenv("VERITYRAG_TOP_K", "2")
    pipeline = VerityRAGPipeline()
    assert pipeline.settings == Settings()
    assert pipeline.data_dir is None
    pipeline.ingest_document("a", "A", "Alpha text.")
    assert not (tmp_path / "env-data").exists()


def test_pipeline_data_dir_from_environment_as_the_entry_points_read_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERITYRAG_DATA_DIR", str(tmp_path / "env-data"))
    pipeline = VerityRAGPipeline(data_dir=data_dir_from_env(), settings=Settings.from_env())
    pipeline.ingest_document("a", "A", "Alpha text.")
    assert (tmp_path / "env-data" / "verityrag.sqlite3").exists()


def test_data_dir_from_environment_unset_or_empty_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VERITYRAG_DATA_DIR", raising=False)
    assert data_dir_from_env() is None
    assert data_dir_from_env({"VERITYRAG_DATA_DIR": ""}) is None
    assert data_dir_from_env({"VERITYRAG_DATA_DIR": "store"}) == Path("store")


def test_pipeline_settings_from_environment_as_the_entry_points_read_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VERITYRAG_TOP_K", "2")
    monkeypatch.setenv("VERITYRAG_READER", "0")  # no model in a unit test
    pipeline = VerityRAGPipeline(settings=Settings.from_env())
    assert pipeline.settings.top_k == 2
    assert pipeline.data_dir is None
    pipeline.ingest_documents([(f"d{i}", "Aardvark", f"Aardvark fact number {i}.") for i in range(5)])
    assert len(pipeline.query("aardvark fact").evidence) == 2


class _FailingEmbedder:
    """A changed embedder that fails after ``ok_calls`` encodes (a crash mid re-embedding)."""

    def __init__(self, ok_calls: int) -> None:
        self.inner = HashingEmbedder(dim=128)
        self.ok_calls = ok_calls
        self.dim = 128

    def fingerprint(self) -> str:
        return self.inner.fingerprint()

    def encode(self, texts: Any) -> Any:
        if self.ok_calls <= 0:
            raise RuntimeError("embedder died")
        self.ok_calls -= 1
        return self.inner.encode(texts)


def test_restore_reembedding_interrupted_leaves_store_usable(tmp_path: Path) -> None:
    first = VerityRAGPipeline(data_dir=tmp_path, settings=_settings())
    first.ingest_documents([(f"d{i}", "T", f"Document {i} about okapis and rivers.") for i in range(6)])
    first.store.close()  # type: ignore[union-attr]
    with pytest.raises(RuntimeError, match="embedder died"):
        VerityRAGPipeline(embedder=_FailingEmbedder(ok_calls=3), data_dir=tmp_path, settings=_settings())
    # Neither half-migrated nor bricked: both the old and the new embedder can open it.
    old = VerityRAGPipeline(data_dir=tmp_path, settings=_settings())
    assert old.index.n_documents == 6
    old.store.close()  # type: ignore[union-attr]
    new = VerityRAGPipeline(embedder=HashingEmbedder(dim=128), data_dir=tmp_path, settings=_settings())
    assert new.index.n_documents == 6
    assert new.index.search_lexical("okapis", 10)[0].chunk.doc_id.startswith("d")
    chunk = new.index.live_chunks()[2]
    (top,) = new.index.search_dense(new.embedder.encode([chunk.text])[0], 1)
    assert top.chunk.chunk_id == chunk.chunk_id


@pytest.mark.unit
def test_sentence_selector_uses_the_pipelines_analyzer() -> None:
    # With the default (stemming) analyzer, the selector looked up IDFs of terms a non-stemming
    # index never holds: stemmed question words weighed nothing.
    from verityrag.text.analyzer import Analyzer

    unstemmed = Analyzer(stem=False)
    pipeline = VerityRAGPipeline(embedder=HashingEmbedder(analyzer=unstemmed), analyzer=unstemmed)
    assert pipeline.generator.selector.analyzer.fingerprint() == unstemmed.fingerprint()


@pytest.mark.unit
@pytest.mark.parametrize("metadata", [{"k": "\ud800"}, {"k": float("nan")}, {"k": object()}])
def test_metadata_that_cannot_be_stored_as_json_is_refused(metadata: dict[str, Any]) -> None:
    # A lone surrogate was accepted, then GET /documents/<id> failed with a 500 on every call.
    with pytest.raises(InvalidInputError) as info:
        VerityRAGPipeline().ingest_document("m", "M", "Some text here.", metadata=metadata)
    assert info.value.field == "metadata"


@pytest.mark.unit
def test_metadata_is_kept_without_a_store() -> None:
    pipeline = VerityRAGPipeline()
    pipeline.ingest_document("m", "M", "Some text here.", metadata={"source": "encyclopedia"})
    doc = pipeline.get_document("m")
    assert doc is not None
    assert doc.metadata == {"source": "encyclopedia"}
    pipeline.ingest_document("m", "M", "Replaced text here.")  # a replace without metadata clears it
    replaced = pipeline.get_document("m")
    assert replaced is not None
    assert replaced.metadata == {}
    pipeline.ingest_document("m", "M", "Text again.", metadata={"v": 2})
    assert pipeline.delete_document("m")
    pipeline.ingest_document("m", "M", "Text once more.")
    again = pipeline.get_document("m")
    assert again is not None
    assert again.metadata == {}


@pytest.mark.unit
@pytest.mark.parametrize("metadata", ["a string", 5, ["not", "pairs"]])
def test_as_document_mapping_with_non_dict_metadata_names_metadata_field(metadata: Any) -> None:
    # dict() of it raised a bare ValueError or TypeError from inside as_document.
    with pytest.raises(InvalidInputError, match="must be a dict") as info:
        VerityRAGPipeline(data_dir="").ingest_documents(
            [{"doc_id": "m", "text": "Some text here.", "metadata": metadata}]
        )
    assert info.value.field == "metadata"


@pytest.mark.unit
def test_metadata_not_json_shaped_reads_back_the_same_in_memory_stored_and_restarted(tmp_path: Path) -> None:
    # In memory get_document returned the caller's objects ({1: (2, 3)}), a store returned them
    # as JSON reads them ({'1': [2, 3]}): the same document read back differently by where it lived.
    sent = {1: (2, 3), "nested": {"tags": ("a", "b")}}
    expected = {"1": [2, 3], "nested": {"tags": ["a", "b"]}}
    in_memory = VerityRAGPipeline(data_dir="")
    stored = VerityRAGPipeline(data_dir=tmp_path)
    for pipeline in (in_memory, stored):
        pipeline.ingest_document("m", "M", "Some text here.", metadata=sent)  # type: ignore[arg-type]
        doc = pipeline.get_document("m")
        assert doc is not None
        assert doc.metadata == expected
    sent["nested"]["tags"] = ("changed",)  # type: ignore[index]
    assert in_memory.get_document("m").metadata == expected  # type: ignore[union-attr]
    assert stored.store is not None
    stored.store.close()
    restarted = VerityRAGPipeline(data_dir=tmp_path).get_document("m")
    assert restarted is not None
    assert restarted.metadata == expected


@pytest.mark.unit
@pytest.mark.parametrize("batch_size", [0, -1, 2.5])
def test_ingest_documents_batch_size_below_one_raises_naming_it_and_writes_nothing(batch_size: Any) -> None:
    # -1 made range() empty: nothing was written, yet the count of documents came back; 0 was
    # range()'s bare ValueError.
    pipeline = VerityRAGPipeline(data_dir="")
    with pytest.raises(InvalidInputError, match="must be an integer >= 1") as info:
        pipeline.ingest_documents([("a", "A", "Alpha text.")], batch_size=batch_size)
    assert info.value.field == "batch_size"
    assert pipeline.index.n_documents == 0


def test_restart_with_a_stored_id_the_current_rules_refuse_keeps_the_document(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import sqlite3

    # Stores written before the id rules were tightened may hold "a/../b" or "abc\n": the
    # pipeline refused to start on them (InvalidInputError from the restore).
    first = VerityRAGPipeline(data_dir=tmp_path, settings=_settings())
    first.ingest_document("a-b", "Zanthor", "The Zanthor lighthouse was designed by Ottoline Brask.")
    first.ingest_document("keep", "Harbour", "Another document, about the harbour and its boats.")
    assert first.store is not None
    path = first.store.path
    first.store.close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA foreign_keys=OFF")
    conn.execute("UPDATE documents SET doc_id='a/../b' WHERE doc_id='a-b'")
    conn.execute(
        "UPDATE chunks SET doc_id='a/../b', chunk_id=replace(chunk_id, 'a-b', 'a/../b') WHERE doc_id='a-b'"
    )
    conn.commit()
    conn.close()
    with caplog.at_level("WARNING", logger="verityrag.pipeline"):
        again = VerityRAGPipeline(data_dir=tmp_path, settings=_settings())
    assert "1 stored document(s) have ids today's rules refuse (first: 'a/../b')" in caplog.text
    assert again.index.n_documents == 2
    assert [h.chunk.doc_id for h in again.index.search_lexical("Zanthor lighthouse", 1)] == ["a/../b"]
    doc = again.get_document("a/../b")
    assert doc is not None
    assert doc.text.startswith("The Zanthor lighthouse")
    assert again.delete_document("a/../b")
    assert again.index.n_documents == 1
    with pytest.raises(InvalidInputError, match="doc_id"):  # new input still follows the rules
        Document("a/../b", "T", "text")


def test_as_stored_keeps_the_other_checks() -> None:
    with pytest.raises(InvalidInputError, match="text"):
        Document.as_stored("a/../b", "T", "   ", {})
    with pytest.raises(InvalidInputError, match="metadata"):
        Document.as_stored("a/../b", "T", "text", [])  # type: ignore[arg-type]
    assert Document.as_stored("abc\n", "T", "text", {"k": 1}) == Document.as_stored(
        "abc\n", "T", "text", {"k": 1}
    )
    assert Document.as_stored("ok", "T", "text", {}) == Document("ok", "T", "text")


def test_query_with_a_lone_surrogate_raises_naming_the_question(pipeline: VerityRAGPipeline) -> None:
    # The API and the MCP server refused it already; a library caller got a result that could
    # not be serialised (json.dumps(..., ensure_ascii=False).encode() fails on it).
    with pytest.raises(InvalidInputError, match=r"question: is not valid Unicode text"):
        pipeline.query("Who designed the lighthouse? \ud83c")


def test_query_asks_your_documents_before_the_demo_or_the_collection_chosen() -> None:
    pipeline = VerityRAGPipeline(settings=_settings(reader=False))  # no model in a unit test
    pipeline.ingest_documents(
        [
            {
                "doc_id": "demo-1",
                "title": "Aardvark",
                "text": "Aardvark fact of the demo.",
                "metadata": {"collection": "demo"},
            },
            {
                "doc_id": "manual",
                "title": "Aardvark",
                "text": "Aardvark fact of the manual.",
                "metadata": {"collection": "manuals"},
            },
            {
                "doc_id": "mine",
                "title": "Aardvark",
                "text": "Aardvark fact of my own.",
                "metadata": {"lang": "en"},
            },
        ]
    )

    def asked(**choice: Any) -> set[str]:
        return {hit.chunk.doc_id for hit in pipeline.query("aardvark fact", **choice).evidence}

    assert asked() == asked(collection="auto") == {"manual", "mine"}
    assert asked(collection="all") == {"demo-1", "manual", "mine"}
    assert asked(collection="demo") == {"demo-1"}
    assert asked(collection="manuals") == {"manual"}
    assert asked(filter={"lang": "en"}) == {"mine"}  # a filter within the default choice
    assert asked(filter={"collection": "demo"}) == {"demo-1"}  # the filter says which
    assert asked(collection="no-such-collection") == set()
    with pytest.raises(InvalidInputError, match="either here or in the filter"):
        pipeline.query("aardvark fact", filter={"collection": "manuals"}, collection="demo")
    with pytest.raises(InvalidInputError, match="collection: must be a name") as blank:
        pipeline.query("", collection=" ")  # the choice is checked before the question
    assert blank.value.field == "collection"
    for doc_id in ("manual", "mine"):
        pipeline.delete_document(doc_id)
    assert asked() == {"demo-1"}  # nothing of yours: the demo
