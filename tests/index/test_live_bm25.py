"""Differential test: LiveIndex BM25 against rank_bm25.BM25Okapi over the same tokens.

rank_bm25 is rebuilt from scratch over the index's live chunks each time; LiveIndex
is incremental (adds, deletes, replaces, compaction), so any drift in N, avgdl,
document frequencies or the epsilon floor shows up as a score mismatch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from verityrag import Settings, VerityRAGPipeline
from verityrag.index.live import IndexSnapshot, LiveIndex
from verityrag.types import Chunk

pytestmark = pytest.mark.unit


def _reference(index: LiveIndex, snapshot: IndexSnapshot | None = None) -> tuple[list[str], BM25Okapi]:
    """rank_bm25 over ``indexed_terms`` of the live chunks, in the order bm25_scores returns them."""
    live = index.live_chunks(snapshot)
    ids, _ = index.bm25_scores([], snapshot)
    assert ids == [c.chunk_id for c in live]
    return ids, BM25Okapi([index.indexed_terms(c) for c in live])


def assert_bm25_matches(
    index: LiveIndex, queries: Sequence[Sequence[str]], snapshot: IndexSnapshot | None = None
) -> None:
    ref_ids, ref = _reference(index, snapshot)
    assert len(ref_ids) == (snapshot or index.snapshot()).n_live
    for terms in queries:
        ids, scores = index.bm25_scores(terms, snapshot)
        expected = ref.get_scores(list(terms))
        assert ids == ref_ids
        assert expected.max() > 0, f"query {terms} matches nothing: the comparison would be vacuous"
        assert np.allclose(scores, expected, rtol=1e-9, atol=1e-9), terms


def _pipeline(docs: Sequence[dict[str, str]]) -> VerityRAGPipeline:
    pipeline = VerityRAGPipeline(settings=Settings())
    pipeline.ingest_documents(docs)
    return pipeline


@pytest.fixture(scope="module")
def corpus_pipeline(corpus_slice: list[dict[str, str]]) -> VerityRAGPipeline:
    """Read-only: the first 200 real documents, chunked by the pipeline. Do not mutate."""
    return _pipeline(corpus_slice)


@pytest.fixture
def question_terms(
    test_questions: list[dict[str, object]], corpus_pipeline: VerityRAGPipeline
) -> list[list[str]]:
    """Analyzed terms of the answerable test questions about the articles in the slice."""
    titles = {"Super Bowl 50", "Nikola Tesla", "Oxygen"}
    picked = [q for q in test_questions if q["kind"] == "answerable" and q["title"] in titles]
    picked = picked[::7][:12]
    assert len(picked) >= 8
    return [corpus_pipeline.analyzer.analyze(str(q["question"])) for q in picked]


def test_bm25_scores_real_corpus_real_questions_match_rank_bm25(
    corpus_pipeline: VerityRAGPipeline, question_terms: list[list[str]]
) -> None:
    index = corpus_pipeline.index
    assert len(index) > 200
    assert_bm25_matches(index, question_terms)


def test_bm25_scores_real_corpus_title_term_in_most_chunks_uses_epsilon_floor(
    corpus_slice: list[dict[str, str]],
) -> None:
    # The title is indexed with every chunk: with all Tesla paragraphs and a few others,
    # "tesla" is in more than half of the chunks, so its IDF is negative and floored.
    tesla = [d for d in corpus_slice if d["title"] == "Nikola Tesla"]
    others = [d for d in corpus_slice if d["title"] == "Super Bowl 50"][:30]
    index = _pipeline(tesla + others).index
    n_live = len(index)
    assert index.document_frequency("tesla") > n_live / 2
    _, ref = _reference(index)
    assert ref.idf["tesla"] == pytest.approx(ref.epsilon * ref.average_idf)
    assert index.idf("tesla") == pytest.approx(ref.idf["tesla"])
    assert_bm25_matches(index, [["tesla", "nikola", "invent"], ["tesla", "super", "bowl"], ["tesla"]])


def test_bm25_scores_repeated_query_terms_count_each_occurrence(corpus_pipeline: VerityRAGPipeline) -> None:
    index = corpus_pipeline.index
    analyze = corpus_pipeline.analyzer.analyze
    once = index.bm25_scores(analyze("Broncos Denver"))[1]
    twice = index.bm25_scores(analyze("Broncos Broncos Denver"))[1]
    assert not np.allclose(once, twice)
    assert_bm25_matches(index, [analyze("Broncos Broncos Denver"), analyze("Tesla Tesla Tesla coil")])


def test_bm25_scores_unknown_and_empty_queries_score_zero(corpus_pipeline: VerityRAGPipeline) -> None:
    ids, scores = corpus_pipeline.index.bm25_scores(["zzzunseen"])
    assert len(ids) == len(corpus_pipeline.index)
    assert not scores.any()
    assert not corpus_pipeline.index.bm25_scores([])[1].any()
    assert corpus_pipeline.index.search_lexical("zzzunseen") == []


def test_search_lexical_returns_top_k_of_bm25_scores_in_order(corpus_pipeline: VerityRAGPipeline) -> None:
    index = corpus_pipeline.index
    terms = corpus_pipeline.analyzer.analyze("Who won Super Bowl 50?")
    ids, scores = index.bm25_scores(terms)
    order = sorted(range(len(ids)), key=lambda i: (-scores[i], i))[:10]
    hits = index.search_lexical(terms, k=10)
    assert [h.chunk.chunk_id for h in hits] == [ids[i] for i in order]
    assert np.allclose([h.score for h in hits], [scores[i] for i in order])
    assert [h.chunk.chunk_id for h in index.search_lexical("Who won Super Bowl 50?", k=10)] == [
        h.chunk.chunk_id for h in hits
    ]


def test_bm25_scores_term_in_more_than_half_the_chunks_uses_epsilon_floor(
    add_texts: Callable[..., None],
) -> None:
    index = LiveIndex(dim=16)
    add_texts(
        index,
        {
            "a": ["apple banana kiwi"],
            "b": ["apple cherry"],
            "c": ["apple date apple"],
            "d": ["elder fig"],
            "e": ["grape melon lemon"],
        },
    )
    _, ref = _reference(index)
    assert ref.idf["appl"] == pytest.approx(ref.epsilon * ref.average_idf)  # floor is in play
    assert index.idf("appl") == pytest.approx(ref.idf["appl"])
    assert_bm25_matches(index, [["appl"], ["appl", "banana"], ["appl", "appl", "fig"]])


def test_bm25_scores_delete_turns_term_into_majority_uses_epsilon_floor(
    add_texts: Callable[..., None],
) -> None:
    index = LiveIndex(dim=16)
    add_texts(index, {"a": ["apple one"], "b": ["apple two"], "c": ["cherry three"], "d": ["date four"]})
    assert index.idf("appl") == 0.0  # df = N/2: log(2.5) - log(2.5), not negative
    index.delete("d")
    _, ref = _reference(index)
    assert ref.idf["appl"] == pytest.approx(ref.epsilon * ref.average_idf)
    assert_bm25_matches(index, [["appl", "two"], ["appl"]])


def test_bm25_scores_after_deletes_and_replaces_match_rank_bm25_over_remaining_chunks(
    corpus_slice: list[dict[str, str]], question_terms: list[list[str]]
) -> None:
    pipeline = _pipeline(corpus_slice)
    for doc in corpus_slice[5:60:3]:
        assert pipeline.delete_document(doc["doc_id"])
    for old, new in zip(corpus_slice[100:110], corpus_slice[180:190], strict=True):
        result = pipeline.ingest_document(old["doc_id"], new["title"], new["text"] + " " + old["text"])
        assert result.replaced
    pipeline.ingest_document("extra-doc", "Super Bowl 50", "Tesla watched Super Bowl 50 in Denver.")
    assert pipeline.index.n_documents == 200 - 19 + 1
    assert_bm25_matches(pipeline.index, [*question_terms, ["tesla", "bowl", "denver"]])


def test_bm25_scores_replace_then_restore_original_gives_original_scores(
    corpus_slice: list[dict[str, str]], question_terms: list[list[str]]
) -> None:
    pipeline = _pipeline(corpus_slice[:60])
    before = [pipeline.index.bm25_scores(t) for t in question_terms]
    doc = corpus_slice[10]
    pipeline.ingest_document(doc["doc_id"], "Other", "Completely different words about kiwis.")
    pipeline.ingest_document(doc["doc_id"], doc["title"], doc["text"])
    after = [pipeline.index.bm25_scores(t) for t in question_terms]
    for (ids_b, sc_b), (ids_a, sc_a) in zip(before, after, strict=True):
        # The document moved to the end of the ingest order; scores per chunk are unchanged.
        assert dict(zip(ids_b, sc_b, strict=True)) == pytest.approx(dict(zip(ids_a, sc_a, strict=True)))


def _small_docs(n: int) -> dict[str, list[str]]:
    # "common" is in every chunk (negative IDF -> epsilon floor), the others vary, and so
    # does the length (so a compaction that mixed up lengths would change avgdl and scores).
    return {f"doc{i:04d}": [f"w{i % 7}x w{i % 13}y w{i % 29}z common" + " pad" * (i % 5)] for i in range(n)}


def test_bm25_scores_after_compaction_match_rank_bm25(add_texts: Callable[..., None]) -> None:
    index = LiveIndex(dim=8)
    add_texts(index, _small_docs(2100))
    segment = index.snapshot().segment
    queries = [["w3x", "w5y"], ["common", "w1z"], ["w0x", "w0x", "w12y", "common"]]
    for i in range(1000):  # 1000 dead of 2100 slots: under the 1024 threshold, no compaction yet
        index.delete(f"doc{i:04d}")
    assert index.snapshot().segment is segment
    assert_bm25_matches(index, queries)
    before_compaction = index.snapshot()
    for i in range(1000, 1200):  # the 1051st delete crosses > 1024 and > half: compaction
        index.delete(f"doc{i:04d}")
    snap = index.snapshot()
    assert snap.segment is not segment
    assert snap.n_slots == 2100 - 1051
    assert snap.n_dead == 1200 - 1051
    assert len(index) == index.n_documents == 900
    assert_bm25_matches(index, queries)
    # The snapshot from before compaction still reads its own (old) segment consistently.
    assert len(index.live_chunks(before_compaction)) == 1100
    assert_bm25_matches(index, [["w3x", "w5y"]], before_compaction)


def test_bm25_scores_writes_after_compaction_match_rank_bm25(add_texts: Callable[..., None]) -> None:
    index = LiveIndex(dim=8)
    add_texts(index, _small_docs(2100))
    for i in range(0, 2100, 2):
        index.delete(f"doc{i:04d}")
    for i in range(1, 800, 2):  # enough extra deletes to compact once
        index.delete(f"doc{i:04d}")
    assert index.snapshot().n_slots < 2100
    add_texts(index, {"doc1001": ["replaced w3x text"], "fresh": ["w3x w5y brand new"]})
    index.delete("doc2099")
    expected_ids = {f"doc{i:04d}" for i in range(801, 2099, 2)} | {"fresh"}
    assert set(index.doc_ids()) == expected_ids
    assert {c.doc_id for c in index.live_chunks()} == expected_ids
    assert index.chunks_of("doc1001")[0].text == "replaced w3x text"
    assert_bm25_matches(index, [["w3x", "w5y"], ["common", "w3x"], ["brand"]])


def test_search_lexical_ties_at_kth_place_keep_earliest_chunks(make_chunk: Callable[..., Chunk]) -> None:
    # 1,000 chunks score the same; two at slots 500 and 999 score higher. argpartition gave the
    # remaining places to tied chunks by its pivots, so a restart or a compaction (the same live
    # chunks at renumbered slots) changed which of them made the top k.
    texts = ["okapi okapi river" if i in (500, 999) else "okapi river" for i in range(1000)]
    texts += ["plain filler text"] * 2000  # keeps okapi in under half the chunks: positive IDF
    index = LiveIndex(dim=4)
    index.apply(
        [
            (f"d{i:04d}", [make_chunk(f"d{i:04d}", t)], np.ones((1, 4), np.float32))
            for i, t in enumerate(texts)
        ]
    )
    hits = index.search_lexical("okapi", 5)
    assert [h.chunk.doc_id for h in hits] == ["d0500", "d0999", "d0000", "d0001", "d0002"]
    assert hits[0].score == hits[1].score > hits[2].score == hits[4].score


def test_bulk_add_to_existing_term_appends_in_place_and_old_snapshot_unchanged(
    make_chunk: Callable[..., Chunk],
) -> None:
    # A batch of >= 64 chunks (bulk ingest, or one long document) copied the whole postings of
    # every term it touched: O(corpus) per batch. Buffers with room are appended to, as the
    # per-chunk path does; a reader only reads the length its snapshot published.
    index = LiveIndex(dim=4)
    state = {"n": 0}

    def add(n_chunks: int) -> None:
        first = state["n"]
        state["n"] += n_chunks
        index.apply(
            [
                (f"d{i:04d}", [make_chunk(f"d{i:04d}", f"okapi w{i}")], np.ones((1, 4), np.float32))
                for i in range(first, first + n_chunks)
            ]
        )

    add(1000)
    add(64)  # 1,064 postings: grown by a quarter of 1,000, to 1,254
    before = index.snapshot()
    buffer = before.segment.postings["okapi"][0]
    hits_before = index.search_lexical("okapi w5", 3, snapshot=before)
    add(64)  # 1,128 fit in the 1,254 slots already there
    assert index.snapshot().segment.postings["okapi"][0] is buffer
    assert index.document_frequency("okapi") == 1128
    assert index.document_frequency("okapi", before) == 1064
    assert index.search_lexical("okapi w5", 3, snapshot=before) == hits_before
    assert_bm25_matches(index, [["okapi", "w300"], ["w5"]])
