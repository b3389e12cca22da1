"""Benchmark the Elasticsearch backend against the embedded index: ranking agreement and latency.

Runs on ELASTICSEARCH_URL when set, otherwise on the noida-db **emulator** of the
Elasticsearch 8 REST API started here on loopback (an emulator: its latencies say
nothing about a real cluster's). Writes scripts/results/bench_elasticsearch.json:

* agreement on the eval corpus (data/built/corpus.jsonl, 847 chunks, every question of
  data/built/questions/*.jsonl): Jaccard of the BM25 top-10 with the embedded LiveIndex,
  for the server's own BM25 on the project's analyzer output (``scoring="server"``),
  for the backend's contract scoring (``scoring="contract"``: server candidates,
  Okapi BM25 recomputed from cluster statistics), and for Elasticsearch's
  ``english`` analyzer on the raw text; dense kNN top-10 Jaccard;
* latency at the corpus sizes the emulator handles: per-document ingest
  (``ingest_document``, searchable on return) and hybrid query, embedded vs backend.

    flock /tmp/verityrag-heavy.lock python scripts/bench_elasticsearch.py          # ~12 min
    flock /tmp/verityrag-heavy.lock python scripts/bench_elasticsearch.py --quick  # eval corpus only
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from verityrag import Document, VerityRAGPipeline
from verityrag.embed.hashing import HashingEmbedder
from verityrag.eval.benchmarks import SyntheticDocs, timed_stream_ingest
from verityrag.index.elastic import EMULATOR_NAME, ElasticsearchConfig, ElasticsearchIndex
from verityrag.index.elastic.emulator import ElasticsearchEmulator
from verityrag.index.live import LiveIndex
from verityrag.pipeline import IN_MEMORY
from verityrag.serve import bundled_corpus as bundled_corpus

ROOT = Path(__file__).resolve().parent.parent

OUT = ROOT / "scripts" / "results" / "bench_elasticsearch.json"
QUESTION_FILES = sorted((ROOT / "data" / "built" / "questions").glob("*.jsonl"))


def jaccard(a: set[str], b: set[str]) -> float | None:
    return len(a & b) / len(a | b) if a | b else None


def mean_jaccard(
    questions: Sequence[str], left: Callable[[str], set[str]], right: Callable[[str], set[str]]
) -> dict[str, Any]:
    values = [j for q in questions if (j := jaccard(left(q), right(q))) is not None]
    return {
        "mean": statistics.fmean(values),
        "median": statistics.median(values),
        "share_identical": sum(v == 1.0 for v in values) / len(values),
        "share_below_0.5": sum(v < 0.5 for v in values) / len(values),
        "queries": len(values),
    }


def pct(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "n": len(ordered),
    }


def make_es_index(url: str, name: str, embedder: HashingEmbedder, **kwargs: Any) -> ElasticsearchIndex:
    if os.environ.get("ELASTICSEARCH_URL"):
        config = ElasticsearchConfig.from_env(index_name=name)
    else:
        config = ElasticsearchConfig(url=url, index_name=name, replicas=0, request_timeout=120.0)
    index = ElasticsearchIndex(embedder.dim, config, vector_fingerprint=embedder.fingerprint(), **kwargs)
    index.drop()
    return index.warm_up()


def agreement(url: str, corpus: list[Document], questions: list[str]) -> dict[str, Any]:
    """Top-10 agreement with the embedded index on the eval corpus."""
    embedder = HashingEmbedder()
    embedded = VerityRAGPipeline(embedder=embedder, data_dir=IN_MEMORY)
    es_index = make_es_index(url, "verityrag-bench-agreement", embedder)
    on_es = VerityRAGPipeline(embedder=embedder, index=es_index, data_dir=IN_MEMORY)
    t0 = time.perf_counter()
    embedded.ingest_documents(corpus, progress=False)
    embedded_bulk_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    on_es.ingest_documents(corpus, progress=False)
    es_bulk_s = time.perf_counter() - t0
    server = ElasticsearchIndex(embedder.dim, es_index.config, scoring="server")
    live: LiveIndex = embedded.index  # type: ignore[assignment]
    client = es_index.client
    analyzer = live.analyzer

    def top_live(q: str) -> set[str]:
        return {s.chunk.chunk_id for s in live.search_lexical(q, 10)}

    def english(q: str) -> set[str]:
        resp = client.search(index=es_index.name, query={"match": {"text": q}}, size=10, source=False)
        return {h["_id"] for h in resp["hits"]["hits"]}

    def dense_live(q: str) -> set[str]:
        return {s.chunk.chunk_id for s in live.search_dense(embedder.encode([q])[0], 10)}

    def dense_es(q: str) -> set[str]:
        return {s.chunk.chunk_id for s in es_index.search_dense(embedder.encode([q])[0], 10)}

    with_terms = [q for q in questions if analyzer.analyze(q)]
    print(f"agreement over {len(with_terms)} questions ...", flush=True)
    return {
        "corpus": {"documents": len(corpus), "chunks": len(live), "chunks_on_backend": len(es_index)},
        "bulk_ingest_seconds": {"embedded": embedded_bulk_s, "backend": es_bulk_s},
        "bm25_top10_jaccard": {
            "server_bm25_project_analyzer": mean_jaccard(
                with_terms, top_live, lambda q: {s.chunk.chunk_id for s in server.search_lexical(q, 10)}
            ),
            "contract_scoring_project_analyzer": mean_jaccard(
                with_terms, top_live, lambda q: {s.chunk.chunk_id for s in es_index.search_lexical(q, 10)}
            ),
            "server_bm25_english_analyzer_on_text": mean_jaccard(with_terms, top_live, english),
        },
        "dense_top10_jaccard": mean_jaccard(with_terms, dense_live, dense_es),
    }


def latency_at(
    url: str, size: int, corpus: list[Document], questions: list[str], n_ingest: int, n_query: int
) -> dict[str, Any]:
    """Per-document ingest and hybrid query latency once the index holds ``size`` chunks."""
    embedder = HashingEmbedder()
    es_index = make_es_index(url, f"verityrag-bench-latency-{size}", embedder)
    pipelines = {
        "embedded": VerityRAGPipeline(embedder=embedder, data_dir=IN_MEMORY),
        "backend": VerityRAGPipeline(embedder=embedder, index=es_index, data_dir=IN_MEMORY),
    }
    out: dict[str, Any] = {}
    for name, pipeline in pipelines.items():
        synthetic = SyntheticDocs(corpus, seed=7)  # the same documents on both sides
        pipeline.ingest_documents(corpus, progress=False)
        while len(pipeline.index) < size:
            pipeline.ingest_documents([synthetic.make() for _ in range(400)], progress=False)
        chunks = len(pipeline.index)
        # found: the read-after-write check, the last document found by its unique token.
        ingest_ms, found = timed_stream_ingest(pipeline, [synthetic.make() for _ in range(n_ingest)])
        pipeline.query(questions[-1])  # warm-up: the gate and selector load on first use
        query_ms = []
        for q in questions[:n_query]:
            t0 = time.perf_counter()
            pipeline.retriever.search(q, 20)
            query_ms.append((time.perf_counter() - t0) * 1000)
        agent_ms = []
        for q in questions[: n_query // 4]:
            t0 = time.perf_counter()
            pipeline.query(q)
            agent_ms.append((time.perf_counter() - t0) * 1000)
        out[name] = {
            "chunks": chunks,
            "ingest_document_ms": pct(ingest_ms),
            "hybrid_search_ms": pct(query_ms),
            "agent_query_ms": pct(agent_ms),
            "read_after_write": found,
        }
        print(
            f"  {name:9s} {chunks:6d} chunks  ingest p50 {out[name]['ingest_document_ms']['p50']:.1f} ms  "
            f"hybrid p50 {out[name]['hybrid_search_ms']['p50']:.1f} ms  "
            f"agent p50 {out[name]['agent_query_ms']['p50']:.1f} ms",
            flush=True,
        )
    es_index.drop()
    return out


def compare_eval_reports(backend_report: Path, embedded_report: Path, out: Path) -> dict[str, Any]:
    """Question by question: does the eval on the backend answer exactly as the embedded one?"""
    a = json.loads(backend_report.read_text(encoding="utf-8"))
    b = json.loads(embedded_report.read_text(encoding="utf-8"))
    left = {o["id"]: o for o in a["outcomes"]}
    right = {o["id"]: o for o in b["outcomes"]}
    common = sorted(left.keys() & right.keys())

    def same(x: dict[str, Any], y: dict[str, Any]) -> bool:
        return (x["answer"], x["abstain_reason"]) == (y["answer"], y["abstain_reason"]) and abs(
            x["confidence"] - y["confidence"]
        ) < 1e-9

    result = {
        "backend_report": str(backend_report),
        "embedded_report": str(embedded_report),
        "backend": a["config"].get("backend"),
        "questions_compared": len(common),
        "identical_outcomes": sum(same(left[q], right[q]) for q in common),
        "different": [q for q in common if not same(left[q], right[q])][:20],
        "gate_threshold": {
            "backend": a["calibration"].get("threshold"),
            "embedded": b["calibration"].get("threshold"),
        },
        "latency_p50_ms": {
            "backend": a["metrics"]["latency_ms"]["per_question"]["p50"],
            "embedded": b["metrics"]["latency_ms"]["per_question"]["p50"],
        },
        "eval_seconds": {"backend": a["timings_seconds"]["total"], "embedded": b["timings_seconds"]["total"]},
    }
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"{result['identical_outcomes']} of {len(common)} questions answered identically; written: {out}")
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="the eval corpus size only")
    p.add_argument("--sizes", type=int, nargs="*", default=None, help="chunk counts for the latency runs")
    p.add_argument("--ingest-docs", type=int, default=50, help="documents ingested one by one per size")
    p.add_argument(
        "--queries", type=int, default=100, help="hybrid queries per size (a quarter as agent queries)"
    )
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument(
        "--compare-eval",
        nargs=2,
        type=Path,
        metavar=("BACKEND_REPORT", "EMBEDDED_REPORT"),
        help="instead of benchmarking: compare two eval reports question by question",
    )
    args = p.parse_args(argv)
    if args.compare_eval:
        compare_eval_reports(
            *args.compare_eval, ROOT / "scripts" / "results" / "eval_elasticsearch_vs_embedded.json"
        )
        return 0

    corpus = bundled_corpus.load_corpus(ROOT / "data" / "built" / "corpus.jsonl")
    questions = [q.question for f in QUESTION_FILES for q in bundled_corpus.load_questions(f)]
    sizes = args.sizes or ([847] if args.quick else [847, 2500, 5000])
    emulator = None
    url = os.environ.get("ELASTICSEARCH_URL", "")
    if not url:
        emulator = ElasticsearchEmulator().start()
        url = emulator.url
        print(
            f"ELASTICSEARCH_URL is not set: using the {EMULATOR_NAME} on {url} (an emulator, not Elasticsearch)"
        )
    started = time.perf_counter()
    try:
        probe = make_es_index(url, "verityrag-bench-probe", HashingEmbedder())
        probe.emulator = emulator
        server = probe.describe()
        probe.drop()
        result: dict[str, Any] = {
            "what": "Elasticsearch backend vs embedded LiveIndex: BM25/dense top-10 agreement and latency",
            "backend": {
                **server,
                "emulator_note": "latencies are the emulator's, not a real cluster's" if emulator else None,
            },
            "machine": {
                "python": platform.python_version(),
                "machine": platform.machine(),
                "cpus": os.cpu_count(),
            },
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "command": "python scripts/bench_elasticsearch.py "
            + " ".join(argv if argv is not None else sys.argv[1:]),
            "agreement": agreement(url, corpus, questions),
            "latency": {},
        }
        for size in sizes:
            print(f"latency at {size} chunks ...", flush=True)
            result["latency"][str(size)] = latency_at(
                url, size, corpus, questions, args.ingest_docs, args.queries
            )
        result["seconds"] = time.perf_counter() - started
    finally:
        if emulator is not None:
            emulator.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    bm25 = result["agreement"]["bm25_top10_jaccard"]
    for name, figures in bm25.items():
        print(f"BM25 top-10 Jaccard, {name}: {figures['mean']:.3f} over {figures['queries']} questions")
    print(f"dense top-10 Jaccard: {result['agreement']['dense_top10_jaccard']['mean']:.3f}")
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
