"""POST /query p50 over HTTP vs ``pipeline.query`` p50 in-process, on the same questions, in one run;
and bulk ingest through POST /documents against ``ingest_documents`` in process.

Builds the in-process pipeline on the bundled corpus and times ``pipeline.query`` on the
test questions (data/built/questions/test.jsonl). Then starts ``uvicorn verityrag.api:app`` on a
free 127.0.0.1 port, loads the same corpus through ``POST /documents`` and times
``POST /query`` for the same questions: one client, sequential, keep-alive, after a
warm-up pass. Prints both p50/p95 and the HTTP overhead (target: p50 within 5 ms).

Then bulk ingest: ``--ingest-docs`` synthetic documents (the scale bench's: ~150 words of real
sentences each) posted in batches of ``--ingest-batch`` by one client to a fresh server with its
own data folder (durable: each batch one store transaction), against the same batches through
``ingest_documents`` in process on a fresh data folder (target: 20,000 documents through the API
in <= 4 s).

Exit 0 always unless ``--check`` is given, then 1 when the p50 overhead exceeds ``--budget-ms``.

    python scripts/bench_api.py [--questions 200] [--check] [--ingest-docs 20000 --ingest-batch 500]
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from verityrag import Settings, VerityRAGPipeline
from verityrag.eval.benchmarks import SyntheticDocs
from verityrag.pipeline import IN_MEMORY
from verityrag.serve import running_api_server
from verityrag.serve.bundled_corpus import load_corpus
from verityrag.types import Document

ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
CORPUS = ROOT / "data" / "built" / "corpus.jsonl"
QUESTIONS = ROOT / "data" / "built" / "questions" / "test.jsonl"


def _percentiles(seconds: list[float]) -> tuple[float, float]:
    p50, p95 = np.percentile(np.array(seconds) * 1000, [50, 95])
    return float(p50), float(p95)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--questions", type=int, default=0, help="how many test questions (0: all)")
    parser.add_argument("--budget-ms", type=float, default=5.0, help="allowed p50 overhead (default 5 ms)")
    parser.add_argument("--check", action="store_true", help="exit 1 when the overhead is over budget")
    parser.add_argument(
        "--ingest-docs", type=int, default=20_000, help="documents for the ingest figure (0: skip)"
    )
    parser.add_argument("--ingest-batch", type=int, default=500, help="documents per POST /documents")
    args = parser.parse_args(argv)

    with CORPUS.open(encoding="utf-8") as fh:
        corpus = [json.loads(line) for line in fh]
    with QUESTIONS.open(encoding="utf-8") as fh:
        questions = [json.loads(line)["question"] for line in fh]
    if args.questions > 0:
        questions = questions[: args.questions]

    pipeline = VerityRAGPipeline(data_dir=IN_MEMORY)
    pipeline.ingest_documents(corpus, progress=False)
    for q in questions:  # warm-up
        pipeline.query(q)
    local: list[float] = []
    for q in questions:
        started = time.perf_counter()
        pipeline.query(q)
        local.append(time.perf_counter() - started)
    del pipeline

    api_key = secrets.token_urlsafe(16)
    with (
        tempfile.TemporaryDirectory(prefix="verityrag-bench-") as data_dir,
        running_api_server(Path(data_dir), api_key) as url,
        httpx.Client(base_url=url, headers={"X-API-Key": api_key}, timeout=60, trust_env=False) as c,
    ):
        c.post("/documents", json={"documents": corpus}).raise_for_status()
        for q in questions:  # warm-up
            c.post("/query", json={"question": q}).raise_for_status()
        remote: list[float] = []
        for q in questions:
            started = time.perf_counter()
            c.post("/query", json={"question": q}).raise_for_status()
            remote.append(time.perf_counter() - started)

    lp50, lp95 = _percentiles(local)
    rp50, rp95 = _percentiles(remote)
    overhead = rp50 - lp50
    print(f"questions: {len(questions)} (test split), corpus: {len(corpus)} documents, one sequential client")
    print(f"in-process pipeline.query  p50 {lp50:7.2f} ms  p95 {lp95:7.2f} ms")
    print(f"HTTP POST /query           p50 {rp50:7.2f} ms  p95 {rp95:7.2f} ms")
    verdict = "within" if overhead <= args.budget_ms else "OVER"
    print(f"HTTP overhead at p50: {overhead:+.2f} ms ({verdict} the {args.budget_ms:g} ms budget)")
    if args.ingest_docs > 0:
        batches = synthetic_batches(load_corpus(CORPUS), args.ingest_docs, args.ingest_batch)
        local_s, remote_s = ingest_in_process(batches), ingest_through_api(batches)
        docs = sum(len(b) for b in batches)
        print(
            f"bulk ingest: {docs:,} documents in {len(batches)} batches of {args.ingest_batch}, durable, one client"
        )
        print(f"in-process ingest_documents  {local_s:6.2f} s  ({docs / local_s:,.0f} documents/s)")
        print(
            f"HTTP POST /documents         {remote_s:6.2f} s  ({docs / remote_s:,.0f} documents/s; target 20,000 in <= 4 s)"
        )
    return 1 if args.check and overhead > args.budget_ms else 0


def synthetic_batches(corpus: list[Document], n: int, batch: int) -> list[list[Document]]:
    docs = SyntheticDocs(corpus, seed=7)
    made = [docs.make() for _ in range(n)]
    return [made[first : first + batch] for first in range(0, n, batch)]


def ingest_in_process(batches: list[list[Document]]) -> float:
    """Seconds for ``ingest_documents`` of each batch in turn, into a fresh data folder."""
    with tempfile.TemporaryDirectory(prefix="verityrag-bench-") as data_dir:
        pipeline = VerityRAGPipeline(data_dir=Path(data_dir), settings=Settings(reader=False))
        started = time.perf_counter()
        for batch in batches:
            pipeline.ingest_documents(batch, progress=False)
        took = time.perf_counter() - started
        pipeline.close()
    return took


def ingest_through_api(batches: list[list[Document]]) -> float:
    """Seconds for one client posting each batch in turn to a fresh server (its own data folder);
    the bodies are encoded before the clock starts."""
    api_key = secrets.token_urlsafe(16)
    bodies = [
        json.dumps({"documents": [{"doc_id": d.doc_id, "title": d.title, "text": d.text} for d in batch]})
        for batch in batches
    ]
    with (
        tempfile.TemporaryDirectory(prefix="verityrag-bench-") as data_dir,
        running_api_server(Path(data_dir), api_key) as url,
        httpx.Client(base_url=url, headers={"X-API-Key": api_key}, timeout=600, trust_env=False) as c,
    ):
        headers = {"Content-Type": "application/json"}
        started = time.perf_counter()
        for body in bodies:
            c.post("/documents", content=body, headers=headers).raise_for_status()
        return time.perf_counter() - started


if __name__ == "__main__":
    sys.exit(main())
