"""Retrieval features: one row per (query, chunk), ratios in sane ranges, cached chunk analysis."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from verityrag.embed.hashing import HashingEmbedder
from verityrag.index.live import LiveIndex
from verityrag.retrieval.features import (
    CHUNK_FEATURES,
    ChunkTermCache,
    QueryTerms,
    chunk_features,
    feature_matrix,
)
from verityrag.retrieval.hybrid import HybridRetriever
from verityrag.text.analyzer import DEFAULT_ANALYZER
from verityrag.types import Chunk, Hit

pytestmark = pytest.mark.unit

F = {name: i for i, name in enumerate(CHUNK_FEATURES)}
# Ratios that must stay within [0, 1] whatever the corpus (the models rely on it to transfer).
UNIT_RANGE = ("cov_w", "cov", "title_cov", "bigram", "best_sentence_cov_w", "max_missing_idf")
RANKS = ("bm25_rrank", "dense_rrank")

DOCS = {
    "aardvark": [
        "Aardvarks eat ants and termites at night. They dig burrows with strong claws.",
        "The aardvark is native to Africa.",
    ],
    "otter": ["Otters float on their backs and hold hands while they sleep."],
    "steam": ["The steam engine converts heat into mechanical work."],
}


@pytest.fixture
def index(add_texts: Callable[..., None]) -> LiveIndex:
    idx = LiveIndex(dim=384)
    add_texts(idx, DOCS, title="Animals")
    return idx


def _query(index: LiveIndex, text: str) -> QueryTerms:
    return QueryTerms.build(text, index.analyzer, index.idf, index.document_frequency)


def _dict_query(text: str, idf: dict[str, float]) -> QueryTerms:
    return QueryTerms.build(text, DEFAULT_ANALYZER, lambda t: idf.get(t, 0.0), lambda t: int(t in idf))


# ---------------------------------------------------------------- chunk_features


@pytest.mark.parametrize(
    "question",
    [
        "What do aardvarks eat at night?",
        "aardvark aardvark aardvark termites",  # repeated terms: BM25 counts each occurrence
        "Where do otters sleep?",
        "How does a steam engine work?",
        "zyzzyva quokka",  # nothing in the corpus
    ],
)
def test_chunk_features_retrieved_hits_have_one_value_per_feature_in_range(
    index: LiveIndex, question: str
) -> None:
    q = _query(index, question)
    hits = HybridRetriever(index, HashingEmbedder()).search(question, 10)
    cache = ChunkTermCache(index.analyzer)
    assert hits, "the hashed dense side always returns candidates"
    for hit in hits:
        row = chunk_features(q, hit, cache.get(hit.chunk))
        assert len(row) == len(CHUNK_FEATURES)
        for name in UNIT_RANGE:
            assert 0.0 <= row[F[name]] <= 1.0, (name, row[F[name]])
        for name in RANKS:
            assert 0.0 <= row[F[name]] <= 1.0, (name, row[F[name]])
        assert 0.0 <= row[F["bm25_norm"]] <= 1.0 + 1e-9, row[F["bm25_norm"]]
        assert -1.0 <= row[F["dense"]] <= 1.0
        assert row[F["query_terms"]] == len(q.terms)
        assert row[F["chunk_words"]] == pytest.approx(len(hit.chunk.text.split()) / 128)


def test_chunk_features_known_chunk_gives_expected_coverages(make_chunk: Callable[..., Chunk]) -> None:
    idf = {"aardvark": 2.0, "eat": 1.0, "termit": 3.0, "claw": 4.0}
    q = _dict_query("Do aardvarks eat termites with claws?", idf)
    chunk = make_chunk("a", "Aardvarks eat ants and termites at night.", title="Aardvark")
    hit = Hit(chunk, score=0.7, bm25_score=0.0, dense_score=0.4, bm25_rank=2, dense_rank=None)
    row = chunk_features(q, hit, ChunkTermCache(DEFAULT_ANALYZER).get(chunk))
    total = sum(q.weights.values())
    assert row[F["cov"]] == pytest.approx(3 / 4)
    assert row[F["cov_w"]] == pytest.approx((total - q.weights["claw"]) / total)
    assert row[F["title_cov"]] == pytest.approx(1 / 4)
    assert row[F["bigram"]] == pytest.approx(1 / 3)  # (aardvark, eat) of three (the chunk has "eat ants")
    assert row[F["best_sentence_cov_w"]] == pytest.approx(row[F["cov_w"]])  # one sentence
    assert row[F["max_missing_idf"]] == pytest.approx(1.0)  # the rarest term (claw) is missing
    assert row[F["fused"]] == 0.7
    assert row[F["dense"]] == 0.4
    assert row[F["bm25_rrank"]] == 0.5
    assert row[F["dense_rrank"]] == 0.0  # not retrieved densely
    assert row[F["bm25_norm"]] == 0.0


def test_feature_matrix_no_hits_returns_empty_rows_of_feature_width() -> None:
    q = _dict_query("aardvark", {"aardvark": 1.0})
    matrix = feature_matrix(q, [], ChunkTermCache(DEFAULT_ANALYZER))
    assert matrix.shape == (0, len(CHUNK_FEATURES))


# ------------------------------------------------------------------ QueryTerms


def test_query_terms_unseen_terms_counted_in_oov_fraction(index: LiveIndex) -> None:
    q = _query(index, "Do aardvarks like zyzzyva or quokkas?")
    assert set(q.terms) == {"aardvark", "like", "zyzzyva", "quokka"}
    assert q.oov_fraction == pytest.approx(3 / 4)  # only "aardvark" is in the corpus


def test_query_terms_all_terms_known_has_zero_oov(index: LiveIndex) -> None:
    assert _query(index, "aardvarks termites").oov_fraction == 0.0


def test_query_terms_unseen_term_weighs_as_much_as_the_rarest_seen(index: LiveIndex) -> None:
    q = _query(index, "aardvark zyzzyva otters")
    assert q.weights["zyzzyva"] == pytest.approx(max(q.weights.values()))
    assert q.weights["zyzzyva"] >= q.weights["otter"]


def test_query_terms_no_content_terms_is_all_oov() -> None:
    q = _dict_query("what is the", {})
    assert q.terms == ()
    assert q.oov_fraction == 1.0
    assert q.weighted_coverage(frozenset({"anything"})) == 0.0
    assert q.coverage(frozenset({"anything"})) == 0.0


def test_query_terms_duplicates_kept_once_in_order() -> None:
    q = _dict_query("termites eat termites", {"termit": 2.0, "eat": 1.0})
    assert q.terms == ("termit", "eat")
    assert q.bigrams == frozenset({("termit", "eat"), ("eat", "termit")})


# -------------------------------------------------------------- ChunkTermCache


def test_chunk_term_cache_same_chunk_returns_same_object(make_chunk: Callable[..., Chunk]) -> None:
    cache = ChunkTermCache(DEFAULT_ANALYZER)
    chunk = make_chunk("a", "Aardvarks eat ants. They dig burrows.", title="Aardvark")
    first = cache.get(chunk)
    assert cache.get(chunk) is first
    assert cache.get(make_chunk("a", "Aardvarks eat ants. They dig burrows.", title="Aardvark")) is first


def test_chunk_term_cache_other_text_or_title_is_analysed_again(make_chunk: Callable[..., Chunk]) -> None:
    cache = ChunkTermCache(DEFAULT_ANALYZER)
    first = cache.get(make_chunk("a", "Aardvarks eat ants.", title="Aardvark"))
    other_title = cache.get(make_chunk("a", "Aardvarks eat ants.", title="Otter"))
    assert other_title is not first
    assert other_title.title_terms == frozenset({"otter"})


def test_chunk_term_cache_analyses_terms_sentences_and_words(make_chunk: Callable[..., Chunk]) -> None:
    terms = ChunkTermCache(DEFAULT_ANALYZER).get(
        make_chunk("a", "Aardvarks eat ants. They dig burrows.", title="Aardvark")
    )
    assert terms.terms == frozenset({"aardvark", "eat", "ant", "dig", "burrow"})
    assert terms.title_terms == frozenset({"aardvark"})
    assert terms.sentence_terms == (frozenset({"aardvark", "eat", "ant"}), frozenset({"dig", "burrow"}))
    assert ("aardvark", "eat") in terms.bigrams
    assert terms.words == 6
