"""The index contract, one suite for every backend (Haystack's document-store tests, STYLE.md).

Each test runs on the embedded ``LiveIndex`` and on ``ElasticsearchIndex`` (the
noida-db emulator of the Elasticsearch 8 REST API, or a real cluster when
``ELASTICSEARCH_URL`` is set; see conftest.py). References are independent:
BM25 against ``rank_bm25.BM25Okapi``, dense search against exact numpy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from verityrag.embed.hashing import HashingEmbedder
from verityrag.errors import InvalidInputError
from verityrag.index.protocol import IndexBackend
from verityrag.retrieval.fusion import weighted
from verityrag.retrieval.hybrid import HybridRetriever
from verityrag.types import Chunk

N_DOCS = 80  # of the committed SQuAD corpus: small enough for the emulator, big enough for real IDF


def _chunk(doc_id: str, text: str, position: int = 0, title: str = "") -> Chunk:
    return Chunk(f"{doc_id}#{position}", doc_id, title, text, position, 0, len(text))


def _load_corpus(index: Any, corpus: Sequence[dict[str, str]]) -> list[Chunk]:
    """One chunk per document (title included in BM25), hashed vectors; one bulk apply."""
    embedder = HashingEmbedder(dim=index.dim, analyzer=index.analyzer)
    chunks = [_chunk(d["doc_id"], d["text"], 0, d.get("title", "")) for d in corpus[:N_DOCS]]
    vectors = embedder.encode([c.text for c in chunks])
    index.apply([(c.doc_id, [c], vectors[i : i + 1]) for i, c in enumerate(chunks)])
    return chunks


def _questions(test_questions: Sequence[dict[str, Any]], n: int = 25) -> list[str]:
    return [q["question"] for q in test_questions[:n]]


def _unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    rows = rng.normal(size=(n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


# ------------------------------------------------------------ the protocol


def test_backend_satisfies_the_index_protocol(make_index: Callable[..., Any]) -> None:
    assert isinstance(make_index(), IndexBackend)


# ---------------------------------------------------------- add / replace / delete


def test_added_document_is_searchable_when_upsert_returns(make_index: Callable[..., Any]) -> None:
    index = make_index(dim=8)
    vec = _unit(np.random.default_rng(0), 2, 8)
    index.upsert(
        "d1", [_chunk("d1", "Turbines convert steam into rotation", 0), _chunk("d1", "Boilers", 1)], vec
    )
    # Read-after-write: no refresh, no sleep between the write and these reads.
    assert [s.chunk.chunk_id for s in index.search_lexical("steam turbines", 5)] == ["d1#0"]
    assert index.search_dense(vec[1], 1)[0].chunk.chunk_id == "d1#1"
    assert index.has_document("d1")
    assert index.get_chunk("d1#1") == _chunk("d1", "Boilers", 1)
    assert [c.chunk_id for c in index.chunks_of("d1")] == ["d1#0", "d1#1"]
    assert (len(index), index.n_documents, index.snapshot().n_live) == (2, 1, 2)


def test_replacing_a_document_removes_chunks_the_new_version_lacks(make_index: Callable[..., Any]) -> None:
    index = make_index(dim=8)
    rng = np.random.default_rng(1)
    old = [_chunk("d1", t, i) for i, t in enumerate(["alpha glacier", "beta volcano", "gamma canyon"])]
    index.upsert("d1", old, _unit(rng, 3, 8))
    index.upsert("d2", [_chunk("d2", "delta volcano")], _unit(rng, 1, 8))
    index.upsert("d1", [_chunk("d1", "epsilon harbour")], _unit(rng, 1, 8))
    assert [c.text for c in index.chunks_of("d1")] == ["epsilon harbour"]
    assert index.get_chunk("d1#2") is None
    assert [s.chunk.chunk_id for s in index.search_lexical("volcano glacier canyon", 10)] == ["d2#0"]
    assert [s.chunk.chunk_id for s in index.search_lexical("harbour", 10)] == ["d1#0"]
    assert (len(index), index.n_documents) == (2, 2)


def test_deleted_document_is_gone_everywhere_when_delete_returns(make_index: Callable[..., Any]) -> None:
    index = make_index(dim=8)
    vec = _unit(np.random.default_rng(2), 2, 8)
    index.upsert("keep", [_chunk("keep", "lighthouse keeper")], vec[:1])
    index.upsert("gone", [_chunk("gone", "lighthouse lantern")], vec[1:])
    assert index.delete("gone") is True
    assert [s.chunk.doc_id for s in index.search_lexical("lighthouse lantern", 10)] == ["keep"]
    assert [s.chunk.doc_id for s in index.search_dense(vec[1], 10)] == ["keep"]
    assert index.cosines(vec[1], ["gone#0"]) == [0.0]
    assert not index.has_document("gone")
    assert index.get_chunk("gone#0") is None
    assert index.chunks_of("gone") == []
    assert (len(index), index.n_documents) == (1, 1)


def test_deleting_an_unknown_document_returns_false(make_index: Callable[..., Any]) -> None:
    index = make_index(dim=8)
    assert index.delete("never-added") is False


def test_live_chunks_come_in_ingest_order(make_index: Callable[..., Any]) -> None:
    index = make_index(dim=8)
    rng = np.random.default_rng(3)
    for doc_id in ("zeta", "alpha", "mid"):
        index.upsert(
            doc_id, [_chunk(doc_id, f"{doc_id} one", 0), _chunk(doc_id, f"{doc_id} two", 1)], _unit(rng, 2, 8)
        )
    assert [c.chunk_id for c in index.live_chunks()] == [
        "zeta#0",
        "zeta#1",
        "alpha#0",
        "alpha#1",
        "mid#0",
        "mid#1",
    ]


def test_snapshot_statistics_do_not_change_after_a_write(make_index: Callable[..., Any]) -> None:
    index = make_index(dim=8)
    rng = np.random.default_rng(4)
    index.upsert("a", [_chunk("a", "orchard apples")], _unit(rng, 1, 8))
    before = index.snapshot()
    n_before, df_before = before.n_live, index.document_frequency("orchard", before)
    index.upsert("b", [_chunk("b", "orchard pears")], _unit(rng, 1, 8))
    assert (before.n_live, index.document_frequency("orchard", before)) == (n_before, df_before) == (1, 1)
    after = index.snapshot()
    assert (after.n_live, index.document_frequency("orchard", after)) == (2, 2)
    assert after.version > before.version


# ------------------------------------------------------------- BM25 agreement


def test_bm25_scores_equal_rank_bm25_on_a_fixed_corpus(
    make_index: Callable[..., Any], corpus_slice: list[dict[str, str]], test_questions: list[dict[str, Any]]
) -> None:
    index = make_index(dim=64)
    chunks = _load_corpus(index, corpus_slice)
    reference = BM25Okapi([index.indexed_terms(c) for c in chunks])
    snap = index.snapshot()
    checked = 0
    for question in _questions(test_questions):
        terms = index.analyzer.analyze(question)
        expected = reference.get_scores(terms)
        matched = [i for i, c in enumerate(chunks) if set(terms) & set(index.indexed_terms(c))]
        top = sorted(matched, key=lambda i: (-expected[i], i))[:10]
        got = index.search_lexical(terms, 10, snap)
        assert [s.chunk.chunk_id for s in got] == [chunks[i].chunk_id for i in top], question
        np.testing.assert_allclose([s.score for s in got], expected[top], rtol=1e-5, atol=1e-9)
        checked += bool(top)
    assert checked >= 20


def test_idf_and_document_frequency_equal_rank_bm25(
    make_index: Callable[..., Any], corpus_slice: list[dict[str, str]]
) -> None:
    index = make_index(dim=64)
    chunks = _load_corpus(index, corpus_slice)
    reference = BM25Okapi([index.indexed_terms(c) for c in chunks])
    snap = index.snapshot()
    # Common, rare and (title terms of the first article) over-half-the-corpus terms: the last
    # get rank_bm25's epsilon floor from the vocabulary-wide average IDF.
    term_sets = [set(index.indexed_terms(c)) for c in chunks]
    df = {t: sum(t in terms for terms in term_sets) for t in reference.idf}
    common = sorted(df, key=lambda t: (-df[t], t))[:5]
    rare = sorted(df, key=lambda t: (df[t], t))[:5]
    assert df[common[0]] > len(chunks) / 2  # the floor is exercised
    for term in common + rare:
        assert index.document_frequency(term, snap) == df[term]
        assert index.idf(term, snap) == pytest.approx(reference.idf[term], rel=1e-9)
    assert (index.document_frequency("qqqunseen", snap), index.idf("qqqunseen", snap)) == (0, 0.0)


def test_terms_longer_than_the_server_tokenizer_keeps_whole_score_as_rank_bm25(
    make_index: Callable[..., Any],
) -> None:
    # Elasticsearch's whitespace tokenizer cuts tokens at 255 characters; the analyzer does not.
    long_term = "acgt" * 80  # 320 letters: a sequence, a hash, an identifier
    prefix_only = long_term[:255] + "zzz"  # the same first 255 characters, another term
    index = make_index(dim=8)
    rng = np.random.default_rng(9)
    texts = [f"{long_term} sample", f"{prefix_only} sample", "plain sample", "other words"]
    chunks = [_chunk(f"d{i}", t) for i, t in enumerate(texts)]
    index.apply([(c.doc_id, [c], _unit(rng, 1, 8)) for c in chunks])
    reference = BM25Okapi([index.indexed_terms(c) for c in chunks])
    snap = index.snapshot()
    assert index.document_frequency(long_term, snap) == 1
    assert index.idf(long_term, snap) == pytest.approx(reference.idf[long_term], rel=1e-9)
    got = index.search_lexical(long_term, 5, snap)
    assert [s.chunk.chunk_id for s in got] == ["d0#0"]
    assert got[0].score == pytest.approx(reference.get_scores([long_term])[0], rel=1e-6)


# ------------------------------------------------------------ dense agreement


def test_dense_search_returns_the_exact_nearest_neighbours(make_index: Callable[..., Any]) -> None:
    dim = 16
    index = make_index(dim=dim)
    rng = np.random.default_rng(5)
    vectors = _unit(rng, 60, dim)
    index.apply([(f"v{i}", [_chunk(f"v{i}", f"vector {i}")], vectors[i : i + 1]) for i in range(60)])
    for query in _unit(rng, 8, dim):
        sims = vectors @ query
        expected = sorted(range(60), key=lambda i: (-sims[i], i))[:5]
        got = index.search_dense(query, 5)
        assert [s.chunk.doc_id for s in got] == [f"v{i}" for i in expected]
        np.testing.assert_allclose([s.score for s in got], sims[expected], atol=1e-5)
        ids = [f"v{i}#0" for i in (3, 7)] + ["missing#0"]
        np.testing.assert_allclose(index.cosines(query, ids), [sims[3], sims[7], 0.0], atol=1e-5)


# -------------------------------------------------------------------- hybrid


def test_hybrid_retrieval_matches_rank_bm25_and_exact_dense_fused(
    make_index: Callable[..., Any], corpus_slice: list[dict[str, str]], test_questions: list[dict[str, Any]]
) -> None:
    index = make_index(dim=64)
    chunks = _load_corpus(index, corpus_slice)
    embedder = HashingEmbedder(dim=64, analyzer=index.analyzer)
    retriever = HybridRetriever(index, embedder, fusion="weighted", candidates=20, dense_weight=0.2)
    reference = BM25Okapi([index.indexed_terms(c) for c in chunks])
    vectors = embedder.encode([c.text for c in chunks])
    for question in _questions(test_questions, 10):
        terms = index.analyzer.analyze(question)
        bm25 = reference.get_scores(terms)
        matched = [i for i, c in enumerate(chunks) if set(terms) & set(index.indexed_terms(c))]
        lexical = {chunks[i].chunk_id: bm25[i] for i in sorted(matched, key=lambda i: (-bm25[i], i))[:20]}
        query = embedder.encode([question])[0]
        sims = vectors @ query
        dense = {
            chunks[i].chunk_id: float(sims[i])
            for i in sorted(range(len(chunks)), key=lambda i: (-sims[i], i))[:20]
        }
        fused = weighted([lexical, dense], [0.8, 0.2])
        expected = sorted(fused, key=lambda cid: (-fused[cid], cid))[:5]
        hits = retriever.search(question, 5)
        assert [h.chunk_id for h in hits] == expected, question
        for hit in hits:
            assert hit.bm25_score == pytest.approx(lexical.get(hit.chunk_id, 0.0), rel=1e-5, abs=1e-9)
            position = next(i for i, c in enumerate(chunks) if c.chunk_id == hit.chunk_id)
            assert hit.dense_score == pytest.approx(float(sims[position]), abs=1e-5)


# ----------------------------------------------------------------- bad input


def test_wrong_vector_shape_is_rejected_and_nothing_is_written(make_index: Callable[..., Any]) -> None:
    index = make_index(dim=8)
    with pytest.raises(InvalidInputError, match="vectors"):
        index.upsert("d1", [_chunk("d1", "one"), _chunk("d1", "two", 1)], np.zeros((1, 8), np.float32))
    assert len(index) == 0
    assert not index.has_document("d1")


def test_batch_with_a_repeated_doc_id_is_rejected_and_nothing_is_written(
    make_index: Callable[..., Any],
) -> None:
    index = make_index(dim=8)
    vec = _unit(np.random.default_rng(6), 1, 8)
    with pytest.raises(InvalidInputError, match="more than once"):
        index.apply([("d1", [_chunk("d1", "one")], vec), ("d1", [_chunk("d1", "two")], vec)])
    assert len(index) == 0


def test_dense_query_of_the_wrong_dimension_is_rejected(make_index: Callable[..., Any]) -> None:
    index = make_index(dim=8)
    index.upsert("d1", [_chunk("d1", "one")], _unit(np.random.default_rng(7), 1, 8))
    with pytest.raises(InvalidInputError, match="dimension 5"):
        index.search_dense(np.ones(5, np.float32), 3)


def test_lookups_of_an_empty_id_find_nothing(make_index: Callable[..., Any]) -> None:
    index = make_index(dim=8)
    vec = _unit(np.random.default_rng(10), 1, 8)
    index.upsert("d1", [_chunk("d1", "meadow")], vec)
    assert index.get_chunk("") is None
    assert (index.has_document(""), index.chunks_of(""), index.delete("")) == (False, [], False)
    assert index.cosines(vec[0], [""]) == [0.0]


def test_empty_queries_and_non_positive_k_return_nothing(make_index: Callable[..., Any]) -> None:
    index = make_index(dim=8)
    vec = _unit(np.random.default_rng(8), 1, 8)
    index.upsert("d1", [_chunk("d1", "meadow")], vec)
    assert index.search_lexical("meadow", 0) == []
    assert index.search_lexical("", 5) == []
    assert index.search_lexical("the and of", 5) == []  # stopwords only: no terms
    assert index.search_lexical("unheardofword", 5) == []
    assert index.search_dense(vec[0], 0) == []


# ------------------------------------------------------------------ filters


def test_searches_limited_to_documents_return_only_their_chunks_ranked_as_unfiltered(
    make_index: Callable[..., Any],
) -> None:
    """A metadata filter reaches the index as the ids of the documents it passes (``doc_ids``):
    Elasticsearch applies it as a ``terms`` filter on ``doc_id``, the embedded index as a slot mask."""
    dim = 16
    index = make_index(dim=dim)
    rng = np.random.default_rng(11)
    vectors = _unit(rng, 30, dim)
    texts = [f"steam engine report {i} " + "watt " * (i % 4) for i in range(30)]
    index.apply([(f"f{i}", [_chunk(f"f{i}", texts[i])], vectors[i : i + 1]) for i in range(30)])
    allowed = {f"f{i}" for i in range(1, 30, 4)}
    full = {s.chunk.doc_id: s.score for s in index.search_lexical("watt engine", 30)}
    got = index.search_lexical("watt engine", 3, doc_ids=allowed)
    expected = sorted(allowed & set(full), key=lambda d: (-full[d], int(d[1:])))[:3]
    assert [s.chunk.doc_id for s in got] == expected
    assert [s.score for s in got] == pytest.approx([full[d] for d in expected], rel=1e-5)
    query = vectors[2]
    sims = vectors @ query
    nearest = sorted((i for i in range(30) if f"f{i}" in allowed), key=lambda i: (-sims[i], i))[:4]
    dense = index.search_dense(query, 4, doc_ids=allowed)
    assert [s.chunk.doc_id for s in dense] == [f"f{i}" for i in nearest]
    np.testing.assert_allclose([s.score for s in dense], sims[nearest], atol=1e-5)
    assert index.search_lexical("watt", 5, doc_ids=set()) == []
    assert index.search_dense(query, 5, doc_ids=["absent"]) == []
