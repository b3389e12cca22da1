"""LightGBMReranker (lambdarank over CHUNK_FEATURES) and the ICT pseudo-queries it is trained on."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from verityrag.errors import InvalidInputError, NotFittedError
from verityrag.retrieval.features import CHUNK_FEATURES, ChunkTermCache, QueryTerms
from verityrag.retrieval.reranker import (
    KEEP_RERANKER_ALPHA,
    LightGBMReranker,
    RankingData,
    ict_queries,
    sign_test_p,
)
from verityrag.text.analyzer import DEFAULT_ANALYZER
from verityrag.types import Chunk, Hit

pytestmark = pytest.mark.unit

COV_W = CHUNK_FEATURES.index("cov_w")
GROUPS, PER_GROUP = 40, 10


def _ranking_data(seed: int = 0) -> RankingData:
    """One relevant row per group; only ``cov_w`` tells it apart (every other feature is noise)."""
    rng = np.random.default_rng(seed)
    n = GROUPS * PER_GROUP
    features = rng.random((n, len(CHUNK_FEATURES)))
    labels = np.zeros(n, dtype=np.int32)
    labels[np.arange(GROUPS) * PER_GROUP + rng.integers(PER_GROUP, size=GROUPS)] = 1
    features[:, COV_W] = np.where(labels == 1, rng.uniform(0.7, 1.0, n), rng.uniform(0.0, 0.5, n))
    return RankingData(features, labels, np.full(GROUPS, PER_GROUP, dtype=np.int32))


@pytest.fixture(scope="module")
def reranker() -> LightGBMReranker:
    return LightGBMReranker(n_estimators=40).fit(_ranking_data())


@pytest.fixture
def hits(make_chunk: Callable[..., Chunk]) -> list[Hit]:
    texts = [
        "Otters float on their backs.",
        "The steam engine converts heat into work.",
        "Oxygen supports combustion.",
        "Aardvarks eat ants and termites at night.",  # the only chunk covering the question, last
    ]
    return [
        Hit(make_chunk(f"d{i}", text), score=1.0 - 0.1 * i, bm25_score=0.5, dense_score=0.1)
        for i, text in enumerate(texts)
    ]


def _query(text: str) -> QueryTerms:
    idf = {"aardvark": 2.0, "eat": 1.0, "termit": 3.0}
    return QueryTerms.build(text, DEFAULT_ANALYZER, lambda t: idf.get(t, 0.0), lambda t: int(t in idf))


# --------------------------------------------------------------------- reranker


def test_rerank_relevant_feature_puts_relevant_hit_first(reranker: LightGBMReranker, hits: list[Hit]) -> None:
    reranked = reranker.rerank(
        _query("What do aardvarks eat, termites?"), hits, ChunkTermCache(DEFAULT_ANALYZER)
    )
    assert reranked[0].chunk.doc_id == "d3"
    assert sorted(h.chunk_id for h in reranked) == sorted(h.chunk_id for h in hits)


def test_rerank_sets_rerank_score_on_every_hit_best_first(
    reranker: LightGBMReranker, hits: list[Hit]
) -> None:
    reranked = reranker.rerank(_query("What do aardvarks eat?"), hits, ChunkTermCache(DEFAULT_ANALYZER))
    scores = [h.rerank_score for h in reranked]
    assert all(isinstance(s, float) for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    # Every other score is kept as it was.
    by_id = {h.chunk_id: h for h in hits}
    for h in reranked:
        assert (h.score, h.bm25_score, h.dense_score) == (
            by_id[h.chunk_id].score,
            by_id[h.chunk_id].bm25_score,
            by_id[h.chunk_id].dense_score,
        )


def test_rerank_no_hits_returns_empty(reranker: LightGBMReranker) -> None:
    assert reranker.rerank(_query("aardvark"), [], ChunkTermCache(DEFAULT_ANALYZER)) == []


def test_predict_held_out_groups_ranks_relevant_row_first(reranker: LightGBMReranker) -> None:
    data = _ranking_data(seed=1)
    scores = reranker.predict(data.features).reshape(GROUPS, PER_GROUP)
    labels = data.labels.reshape(GROUPS, PER_GROUP)
    assert (labels[np.arange(GROUPS), scores.argmax(axis=1)] == 1).all()


def test_predict_same_data_and_seed_is_deterministic(reranker: LightGBMReranker) -> None:
    other = LightGBMReranker(n_estimators=40).fit(_ranking_data())
    features = _ranking_data(seed=2).features
    np.testing.assert_array_equal(reranker.predict(features), other.predict(features))


def test_predict_unfitted_raises_not_fitted_mentioning_train_reranker() -> None:
    reranker = LightGBMReranker()
    assert reranker.is_fitted is False
    with pytest.raises(NotFittedError, match=r"train_reranker\(\)"):
        reranker.predict(np.zeros((2, len(CHUNK_FEATURES))))


def test_rerank_unfitted_raises_not_fitted(hits: list[Hit]) -> None:
    with pytest.raises(NotFittedError, match="not fitted"):
        LightGBMReranker().rerank(_query("aardvark"), hits, ChunkTermCache(DEFAULT_ANALYZER))


def test_fit_wrong_feature_width_raises_naming_expected_width() -> None:
    data = _ranking_data()
    narrow = RankingData(data.features[:, :5], data.labels, data.groups)
    with pytest.raises(InvalidInputError, match=rf"need shape \(n, {len(CHUNK_FEATURES)}\), got \(\d+, 5\)"):
        LightGBMReranker(n_estimators=2).fit(narrow)


def test_predict_wrong_feature_width_raises_invalid_input(reranker: LightGBMReranker) -> None:
    with pytest.raises(InvalidInputError, match=str(len(CHUNK_FEATURES))):
        reranker.predict(np.zeros((2, 5)))


def test_predict_no_rows_returns_empty(reranker: LightGBMReranker) -> None:
    assert reranker.predict(np.zeros((0, len(CHUNK_FEATURES)))).shape == (0,)


# ------------------------------------------------------------------- ict_queries

SENTENCES = [
    ("c1", "Aardvarks eat ants and termites at night in the savanna."),
    ("c2", "Too short to use."),
    ("c3", "The steam engine converts heat into mechanical work very efficiently."),
    ("c4", "Otters float on their backs and hold hands while sleeping."),
    ("c5", "Oxygen."),
    ("c6", "Nikola Tesla worked on alternating current motors for many years."),
]


def test_ict_queries_same_seed_is_deterministic() -> None:
    assert ict_queries(SENTENCES, 6, seed=3) == ict_queries(SENTENCES, 6, seed=3)


def test_ict_queries_other_seed_gives_other_queries() -> None:
    assert ict_queries(SENTENCES, 6, seed=3) != ict_queries(SENTENCES, 6, seed=4)


@pytest.mark.parametrize("seed", range(5))
def test_ict_queries_keep_an_ordered_subset_of_the_sentence_words(seed: int) -> None:
    queries = ict_queries(SENTENCES, 6, seed=seed)
    assert queries
    for query, sentence in queries:
        words, kept = sentence.split(), query.split()
        assert 1 <= len(kept) <= len(words)
        remaining = iter(words)
        assert all(w in remaining for w in kept), (query, sentence)  # a subsequence


@pytest.mark.parametrize("seed", range(5))
def test_ict_queries_short_sentences_are_skipped(seed: int) -> None:
    sources = {sentence for _, sentence in ict_queries(SENTENCES, 6, seed=seed)}
    assert sources == {s for _, s in SENTENCES if len(s.split()) >= 6}


def test_ict_queries_keep_share_follows_keep_range() -> None:
    sentences = [(f"c{i}", " ".join(f"w{i}x{j}" for j in range(20))) for i in range(200)]
    shares = [len(q.split()) / 20 for q, _ in ict_queries(sentences, 200, seed=0, keep=(0.4, 0.8))]
    assert len(shares) == 200
    assert 0.5 <= float(np.mean(shares)) <= 0.7  # the mean of U(0.4, 0.8)
    assert max(shares) < 1.0


def test_ict_queries_n_caps_the_number_of_queries() -> None:
    assert len(ict_queries(SENTENCES, 2, seed=0)) <= 2
    assert ict_queries(SENTENCES, 0, seed=0) == []
    assert ict_queries([], 5, seed=0) == []


@pytest.mark.parametrize(
    ("wins", "losses", "expected"),
    [
        (0, 0, 1.0),  # no discordant question: no evidence either way
        (5, 0, 1 / 32),
        (4, 1, 6 / 32),
        (0, 5, 1.0),
        (3, 3, 42 / 64),
    ],
)
def test_sign_test_p_is_the_exact_binomial_tail(wins: int, losses: int, expected: float) -> None:
    assert sign_test_p(wins, losses) == pytest.approx(expected)


def test_sign_test_p_needs_a_clear_majority_of_wins_to_keep_the_reranker() -> None:
    # 1 question ahead never counts; on 20 discordant questions 15 wins do (p ~ 0.021), 14 do not.
    assert sign_test_p(11, 10) > KEEP_RERANKER_ALPHA
    assert sign_test_p(15, 5) < KEEP_RERANKER_ALPHA < sign_test_p(14, 6)


def test_sign_test_p_rejects_negative_counts() -> None:
    with pytest.raises(InvalidInputError):
        sign_test_p(-1, 3)
