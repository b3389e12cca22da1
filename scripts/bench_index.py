"""Benchmark the live index: streaming and bulk ingest, hybrid retrieval, restore, memory.

Prints a table and writes the figures to scripts/results/bench_index.json (the
README's index table is generated from that file). Run on a quiet machine:

    python scripts/bench_index.py            # 1k and 100k chunks (~3 min)
    python scripts/bench_index.py --quick    # 1k and 10k chunks

The large corpora are synthetic documents of ~150 words made by sampling real
sentences of the SQuAD eval corpus (data/built/corpus.jsonl), so term statistics are
realistic; each document also gets one unique token so it can be found.
"""

from __future__ import annotations

import argparse
import gc
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from verityrag import Document, Settings, VerityRAGPipeline
from verityrag.embed.embedder import Embedder
from verityrag.eval.benchmarks import (
    SyntheticDocs,
    grow_to,
    index_table,
    peak_rss_mb,
    timed_stream_ingest,
    write_results,
)
from verityrag.pipeline import IN_MEMORY
from verityrag.serve import bundled_corpus as bundled_corpus

ROOT = Path(__file__).resolve().parent.parent

CORPUS = ROOT / "data" / "built" / "corpus.jsonl"
QUESTIONS = ROOT / "data" / "built" / "questions" / "test.jsonl"
OUT = ROOT / "scripts" / "results" / "bench_index.json"


def load_corpus() -> list[Document]:
    return bundled_corpus.load_corpus(CORPUS)


def load_questions() -> list[str]:
    return [q.question for q in bundled_corpus.load_questions(QUESTIONS)]


def timed(fn: Callable[[], Any], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def stream_p50(pipeline: VerityRAGPipeline, docs: SyntheticDocs, n: int = 300) -> dict[str, float]:
    """Per-document latency of ingest_document (chunk + embed + index + publish)."""
    times, found = timed_stream_ingest(pipeline, [docs.make() for _ in range(n)])
    # A streamed document is searchable at once: the last one is checked.
    if not found:
        raise RuntimeError("a streamed document was not searchable right after ingest_document returned")
    return {"p50_ms": float(np.percentile(times, 50)), "p95_ms": float(np.percentile(times, 95))}


def query_p50(pipeline: VerityRAGPipeline, questions: list[str], k: int = 10) -> dict[str, float]:
    for q in questions[:20]:  # warm caches
        pipeline.retriever.search(q, k)
    times = []
    for q in questions:
        t0 = time.perf_counter()
        pipeline.retriever.search(q, k)
        times.append((time.perf_counter() - t0) * 1000)
    return {"p50_ms": float(np.percentile(times, 50)), "p95_ms": float(np.percentile(times, 95))}


def bench_scale(
    label: str, target: int, corpus: list[Document], questions: list[str], backend: str
) -> dict[str, Any]:
    docs = SyntheticDocs(corpus)
    pipeline = VerityRAGPipeline(settings=Settings(dense_backend=backend), data_dir=IN_MEMORY)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    grow_to(pipeline, docs, target)
    build_s = time.perf_counter() - t0
    result = {
        "label": label,
        "dense_backend": backend,
        "chunks": len(pipeline.index),
        "bulk_build_s": build_s,
        "stream_ingest": stream_p50(pipeline, docs),
        "hybrid_query_top10": query_p50(pipeline, questions),
    }
    del pipeline
    gc.collect()
    return result


def bench_restore(target: int, corpus: list[Document]) -> dict[str, Any]:
    docs = SyntheticDocs(corpus, seed=11)
    with tempfile.TemporaryDirectory() as tmp:
        writer = VerityRAGPipeline(data_dir=tmp)
        t0 = time.perf_counter()
        grow_to(writer, docs, target)
        write_s = time.perf_counter() - t0
        n = len(writer.index)
        writer.store.close()  # type: ignore[union-attr]
        del writer
        gc.collect()
        t0 = time.perf_counter()
        reader = VerityRAGPipeline(data_dir=tmp)
        restore_s = time.perf_counter() - t0
        assert len(reader.index) == n
        streamed = stream_p50(reader, docs, n=200)
        return {
            "chunks": n,
            "bulk_write_s": write_s,
            "restore_s": restore_s,
            "durable_stream_ingest": streamed,
        }


def bench_eval_corpus_bulk(corpus: list[Document], embedder: Embedder | None = None) -> dict[str, float]:
    pipeline = VerityRAGPipeline(embedder=embedder, data_dir=IN_MEMORY)
    t0 = time.perf_counter()
    pipeline.ingest_documents(corpus, progress=False)
    return {"docs": len(corpus), "chunks": len(pipeline.index), "seconds": time.perf_counter() - t0}


def bench_sentence_transformer(corpus: list[Document], questions: list[str]) -> dict[str, Any]:
    from verityrag.embed import SentenceTransformerEmbedder

    out: dict[str, Any] = {}
    for backend in ("torch", "onnx-int8"):
        emb = SentenceTransformerEmbedder(backend=backend)  # type: ignore[arg-type]
        t0 = time.perf_counter()
        emb.warm_up()
        load_s = time.perf_counter() - t0
        bulk = bench_eval_corpus_bulk(corpus, emb)
        per_query = timed(lambda e=emb: [e.encode([x]) for x in questions[:100]], 1)[0] / 100
        out[backend] = {
            "load_s": load_s,
            "bulk_docs_per_s": bulk["docs"] / bulk["seconds"],
            "bulk_chunks_per_s": bulk["chunks"] / bulk["seconds"],
            "query_embed_ms": per_query,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="1k and 10k chunks instead of 1k and 100k")
    parser.add_argument("--no-models", action="store_true", help="skip the sentence-transformer figures")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    big = 10_000 if args.quick else 100_000

    corpus = load_corpus()
    questions = load_questions()
    results: dict[str, Any] = {
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores",
        "date": time.strftime("%Y-%m-%d"),
        "quick": args.quick,
    }
    results["eval_corpus_bulk_hashing"] = bench_eval_corpus_bulk(corpus)
    pipeline = VerityRAGPipeline(data_dir=IN_MEMORY)
    pipeline.ingest_documents(corpus, progress=False)
    results["eval_corpus_query_top10"] = {"chunks": len(pipeline.index), **query_p50(pipeline, questions)}
    del pipeline
    results["scale_small"] = bench_scale("1k", 1_000, corpus, questions, "exact")
    results["scale_large"] = bench_scale(f"{big // 1000}k", big, corpus, questions, "exact")
    results["peak_rss_mb_after_large"] = peak_rss_mb()
    try:
        results["scale_large_hnsw"] = bench_scale(f"{big // 1000}k", big, corpus, questions, "hnsw")
    except ImportError as exc:
        results["scale_large_hnsw"] = {"skipped": str(exc)}
    results["stream_ratio_large_over_small"] = (
        results["scale_large"]["stream_ingest"]["p50_ms"] / results["scale_small"]["stream_ingest"]["p50_ms"]
    )
    results["restore"] = bench_restore(big, corpus)
    if not args.no_models:
        try:
            results["sentence_transformer"] = bench_sentence_transformer(corpus, questions)
        except Exception as exc:  # report, don't hide, a model that cannot load
            results["sentence_transformer"] = {"error": str(exc)}
    write_results(results, args.out)
    print(index_table(results))
    print(f"\nwritten: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
