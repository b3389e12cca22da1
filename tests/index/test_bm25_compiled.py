"""The compiled BM25 top-k (verityrag.index._bm25_compiled) against the reference: the same slots
and the same scores, bit for bit, as the exhaustive scorer ranks them and as the vectorised
block-max scorer finds them, on real text, with deleted and replaced documents."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from verityrag import Settings, VerityRAGPipeline
from verityrag.eval.benchmarks import SyntheticDocs
from verityrag.index import _bm25_compiled, bm25
from verityrag.pipeline import IN_MEMORY
from verityrag.serve.bundled_corpus import load_corpus, load_questions

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(not _bm25_compiled.AVAILABLE, reason="numba is not installed"),
]

DATA = Path(__file__).resolve().parents[2] / "data" / "built"


@pytest.fixture(scope="module")
def pipeline() -> VerityRAGPipeline:
    if not (DATA / "corpus.jsonl").exists():
        pytest.skip("make data builds the bundled corpus")
    p = VerityRAGPipeline(settings=Settings(reader=False), data_dir=IN_MEMORY)
    maker = SyntheticDocs(load_corpus(DATA / "corpus.jsonl"), seed=5)
    docs = [maker.make() for _ in range(3000)]
    p.ingest_documents(docs, progress=False)
    for doc in docs[:300]:  # dead slots: deleted, and replaced by another text
        p.delete_document(doc.doc_id)
    p.ingest_documents([maker.make() for _ in range(100)], progress=False)
    return p


def _reference(snap: bm25.IndexSnapshot, terms: list[bm25.QueryTerm], k: int, k1: float, b: float):  # type: ignore[no-untyped-def]
    scores, touched = bm25.score_all(snap, terms, k1, b)
    return bm25.rank(touched, scores[touched], k)


@pytest.mark.parametrize("k", [1, 10, 50])
def test_compiled_top_k_is_the_exhaustive_ranking_bit_for_bit(pipeline: VerityRAGPipeline, k: int) -> None:
    index = pipeline.index
    snap = index.snapshot()
    assert snap.n_dead > 0  # the dead are skipped
    questions = [q.question for q in load_questions(DATA / "questions" / "test.jsonl")][:200]
    questions += ["the the of and", "zzzz unknown words", ""]
    compared = pruned = 0
    for question in questions:
        terms = index._query_terms(snap, index.analyzer.analyze(question))
        if not terms:
            continue
        slots, scores, scored = _bm25_compiled.search(snap, terms, k, index.k1, index.b)
        pruned += scored < sum(len(t.slots) for t in terms)
        ref_slots, ref_scores = _reference(snap, terms, k, index.k1, index.b)
        assert slots.tolist() == ref_slots.tolist(), question
        assert scores.tobytes() == ref_scores.tobytes(), question  # the same floats, not close ones
        pruned_slots, pruned_scores = bm25.top_k(snap, terms, k, index.k1, index.b)
        assert slots.tolist() == pruned_slots.tolist(), question
        assert scores.tolist() == pruned_scores.tolist(), question
        compared += 1
    assert compared > 150
    # MaxScore left lists unread and the ranking did not move (at k=50 a 3,400-chunk index
    # rarely has a k-th score high enough to leave a list out)
    assert pruned > (compared // 4 if k <= 10 else 0)


def test_an_older_snapshot_sees_what_it_saw(pipeline: VerityRAGPipeline) -> None:
    index = pipeline.index
    old = index.snapshot()
    terms_text = index.analyzer.analyze("the history of the university")
    before = _bm25_compiled.top_k(old, index._query_terms(old, terms_text), 10, index.k1, index.b)
    doomed = [old.chunk(int(s)).doc_id for s in before[0][:3]]
    for doc_id in doomed:
        pipeline.delete_document(doc_id)
    again = _bm25_compiled.top_k(old, index._query_terms(old, terms_text), 10, index.k1, index.b)
    assert again[0].tolist() == before[0].tolist()
    now = index.snapshot()
    after = _bm25_compiled.top_k(now, index._query_terms(now, terms_text), 10, index.k1, index.b)
    assert not set(np.asarray(after[0]).tolist()) & set(np.asarray(before[0][:3]).tolist())


def test_a_term_with_frequencies_past_uint16_scores_as_the_reference() -> None:
    # Such a term's frequencies are uint32, the others' uint16: the kernel reads both as stored.
    # chunks of up to 80,000 words: one sentence of 70,000 is one chunk, tf 70,000
    p = VerityRAGPipeline(settings=Settings(reader=False, chunk_max_words=80_000), data_dir=IN_MEMORY)
    p.ingest_document("long", "Long", "steam " * 70_000)
    p.ingest_documents(
        [(f"d{i}", "", f"The steam engine number {i} pumps water from the mine.") for i in range(40)]
    )
    index = p.index
    snap = index.snapshot()
    assert snap.segment.postings["steam"].tfs.dtype == np.uint32
    terms = index._query_terms(snap, index.analyzer.analyze("steam engine water"))
    slots, scores = _bm25_compiled.top_k(snap, terms, 10, index.k1, index.b)
    ref_slots, ref_scores = _reference(snap, terms, 10, index.k1, index.b)
    assert slots.tolist() == ref_slots.tolist()
    assert scores.tobytes() == ref_scores.tobytes()


def test_while_the_compiled_code_is_readied_the_vectorised_scorer_answers_alike(
    pipeline: VerityRAGPipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = pipeline.index
    question = "the history of the university"
    compiled = [(h.chunk.chunk_id, h.score) for h in index.search_lexical(question, 10)]
    used: list[str] = []
    vectorised = bm25.top_k
    monkeypatch.setattr(bm25, "top_k", lambda *a: used.append("vectorised") or vectorised(*a))
    monkeypatch.setattr(_bm25_compiled, "ready", lambda: False)
    assert [(h.chunk.chunk_id, h.score) for h in index.search_lexical(question, 10)] == compiled
    assert used == ["vectorised"]


def test_warm_up_runs_the_kernel_once_in_the_background_and_queries_wait_for_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release, calls = threading.Event(), []
    kernel = _bm25_compiled._kernel

    def held(*args: object) -> object:
        calls.append(args)
        release.wait(10)
        return kernel(*args)

    monkeypatch.setattr(_bm25_compiled, "_kernel", held)
    _bm25_compiled.warm_up()
    _bm25_compiled.warm_up()  # already under way: not a second thread
    assert not _bm25_compiled.ready()  # queries take the vectorised scorer meanwhile
    release.set()
    assert _wait_ready()
    assert len(calls) == 1


def _wait_ready() -> bool:
    for _ in range(400):
        if _bm25_compiled.ready():
            return True
        threading.Event().wait(0.025)
    return False
