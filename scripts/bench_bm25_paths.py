"""BM25 top-10 by each path on one index: the vectorised block-max scorer against the compiled
(numba) one, and ``search_lexical`` whole (analysis, query terms, top-k, chunks), on the first
300 test questions, with a check that both paths rank alike. Decision 0067 quotes it.

    python scripts/bench_bm25_paths.py 100000     # chunks (bench documents, built in memory)
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from verityrag import Settings, VerityRAGPipeline
from verityrag.eval.benchmarks import SyntheticDocs, grow_to
from verityrag.index import _bm25_compiled, bm25
from verityrag.pipeline import IN_MEMORY
from verityrag.serve.bundled_corpus import DEFAULT_DATA_DIR, load_corpus, load_questions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("chunks", type=int)
    args = parser.parse_args(argv)
    if not _bm25_compiled.AVAILABLE:
        parser.error("numba is not installed")
    pipeline = VerityRAGPipeline(settings=Settings(reader=False), data_dir=IN_MEMORY)
    grow_to(pipeline, SyntheticDocs(load_corpus(DEFAULT_DATA_DIR / "corpus.jsonl"), seed=7), args.chunks)
    index, snap = pipeline.index, pipeline.index.snapshot()
    questions = [q.question for q in load_questions(DEFAULT_DATA_DIR / "questions" / "test.jsonl")][:300]
    terms = [t for t in (index._query_terms(snap, index.analyzer.analyze(q)) for q in questions) if t]
    _bm25_compiled.top_k(snap, terms[0], 10, index.k1, index.b)  # compiled (or loaded) before timing
    for name, top_k in (("vectorised block-max", bm25.top_k), ("compiled (numba)", _bm25_compiled.top_k)):
        times = []
        for _ in range(2):
            for t in terms:
                t0 = time.perf_counter()
                top_k(snap, t, 10, index.k1, index.b)
                times.append((time.perf_counter() - t0) * 1000)
        print(
            f"{len(index):,} chunks, {name}: p50 {np.percentile(times, 50):.3f} ms, p95 {np.percentile(times, 95):.3f} ms"
        )
    same = all(
        _bm25_compiled.top_k(snap, t, 10, index.k1, index.b)[0].tolist()
        == bm25.top_k(snap, t, 10, index.k1, index.b)[0].tolist()
        for t in terms
    )
    times = []
    for q in questions:
        t0 = time.perf_counter()
        index.search_lexical(q, 10)
        times.append((time.perf_counter() - t0) * 1000)
    print(
        f"search_lexical top-10 (compiled): p50 {np.percentile(times, 50):.3f} ms, p95 {np.percentile(times, 95):.3f} ms"
    )
    print(f"both paths rank alike on {len(terms)} questions: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
