"""The live index at 100k, 300k and 1M chunks, and the BM25 engines a user would pick instead.

``make bench-scale`` (not in CI; about an hour for the three scales on 2 cores). For each scale,
each step in its own process (so each memory figure is its own):

* ``index``: bulk build of synthetic documents (the bench generator: real sentences of the eval
  corpus, ~150 words, one unique reference code each) in memory, with the hashing embedder;
  RAM per part of the index; BM25 / dense / hybrid top-10 and ``pipeline.query`` p50 and p95 on
  the 550 test questions; pruned BM25 top-10 against the exhaustive scorer on every question;
  streaming ingest p50 at that size. The first scale also builds an hnswlib graph over the
  index's (hashed) vectors and measures its recall@10 against exact search.
* peers: bm25s, rank_bm25, Haystack's InMemoryDocumentStore (BM25Okapi) and tantivy on the same
  chunks (title and text, as VerityRAG indexes them) and questions, in their own virtualenv
  (``--peers-python``), one process per engine (scripts/bench_peers.py). An engine whose
  memory at the previous scale, scaled up, would pass ``--peer-memory-gb`` is skipped.
* ``durable``: the same build into a SQLite store, stopped without an image; then ``restore``: a
  new process rebuilds the index from the store (restore time, RAM after restore) and stops
  cleanly (writing the index image: its time and size); then ``reopen``: a third process opens
  the image (reopen time, RAM, the same BM25 top-10 as the rebuilt index), measures durable
  streaming ingest, writes an image while it goes on writing (the checkpoint's time, the writes
  meanwhile and their longest wait), deletes 20 documents and exits without a clean stop; then ``crash``: a fourth
  process opens the image and replays those writes from the store (its start time, RAM, and
  the same BM25 top-10 as the process that wrote them).

Streaming ingest is also measured at 1k chunks for the ratio. Writes scripts/results/bench_scale.json
(README's scale table is generated from it by scripts/update_readme_results.py) and prints the table.

    python scripts/bench_scale.py                         # 100k, 300k, 1M chunks
    python scripts/bench_scale.py --scales 10000,30000    # a quick look
    python scripts/bench_scale.py --scales 100000 --peers bm25s --no-durable --out /tmp/b.json
    python scripts/bench_scale.py --scales 10000000 --no-durable --peers bm25s --merge   # 10M column
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from verityrag import Settings, VerityRAGPipeline
from verityrag.eval.benchmarks import (
    SyntheticDocs,
    grow_to,
    peak_rss_mb,
    percentiles,
    rss_mb,
    run_conditions,
    scale_table,
    timed_stream_ingest,
    write_results,
)
from verityrag.ingest.writer import IMAGE_DIR
from verityrag.pipeline import IN_MEMORY
from verityrag.serve import bundled_corpus

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "data" / "built" / "corpus.jsonl"
QUESTIONS = ROOT / "data" / "built" / "questions" / "test.jsonl"
OUT = ROOT / "scripts" / "results" / "bench_scale.json"
PEERS_PYTHON = ROOT / "guard_work" / "bench_peers_venv" / "bin" / "python"
PEERS = ("bm25s", "rank_bm25", "haystack_inmemory", "tantivy")
FULL_QUERIES = 200  # pipeline.query is timed on the first 200 questions
EXHAUSTIVE_ALL_UP_TO = 2_000_000  # past it, the exhaustive scorer is compared on a sample
EXHAUSTIVE_SAMPLE = 100


def questions() -> list[str]:
    return [q.question for q in bundled_corpus.load_questions(QUESTIONS)]


def timed(fn: Any, items: list[Any]) -> dict[str, float]:
    """Wall-clock p50/p95 of ``fn`` over ``items``, and the CPU time's (this process's; on a busy
    machine the CPU time is what the code costs, the wall time what a user waits)."""
    for item in items[:10]:  # warm caches
        fn(item)
    times, cpu = [], []
    for item in items:
        t0, c0 = time.perf_counter(), time.process_time()
        fn(item)
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    cpu_figures = percentiles(cpu)
    return {**percentiles(times), "cpu_p50_ms": cpu_figures["p50_ms"], "cpu_p95_ms": cpu_figures["p95_ms"]}


def top10_fingerprint(pipeline: VerityRAGPipeline, qs: list[str]) -> str:
    """A digest of the BM25 top-10 chunk ids of the first 50 questions (the restored index must agree)."""
    ids = [[h.chunk.chunk_id for h in pipeline.index.search_lexical(q, 10)] for q in qs[:50]]
    return hashlib.sha256(json.dumps(ids).encode()).hexdigest()[:16]


# --------------------------------------------------------------------------- workers


def worker_index(scale: int, chunks_out: Path | None, ann: bool) -> dict[str, Any]:
    corpus = bundled_corpus.load_corpus(CORPUS)
    qs = questions()
    docs = SyntheticDocs(corpus, seed=7)
    pipeline = VerityRAGPipeline(settings=Settings(reader=False), data_dir=IN_MEMORY)
    cpu0 = time.process_time()
    build_s = grow_to(pipeline, docs, scale)
    build_cpu_s = time.process_time() - cpu0  # includes making the documents (~3% of it)
    gc.collect()
    index = pipeline.index
    n = len(index)
    out: dict[str, Any] = {
        "chunks": n,
        "documents": index.n_documents,
        "bulk_build_s": build_s,
        "bulk_build_cpu_s": build_cpu_s,
        "rss_after_build_mb": rss_mb(),
        "peak_rss_build_mb": peak_rss_mb(),
        "dense_backend": "ann" if index.snapshot().vectors is None else "exact",
    }
    memory = index.memory_bytes()  # type: ignore[attr-defined]
    out["index_bytes_per_chunk"] = {k: v / n for k, v in memory.items()}
    out["index_bytes_per_chunk"]["total"] = sum(memory.values()) / n
    if chunks_out is not None:  # the peers index exactly these chunks
        with chunks_out.open("w", encoding="utf-8") as fh:
            for chunk in index.live_chunks():
                fh.write(json.dumps({"id": chunk.chunk_id, "text": f"{chunk.title}\n{chunk.text}"}) + "\n")
    out["bm25_top10"] = timed(lambda q: index.search_lexical(q, 10), qs)
    # The exhaustive scorer takes ~0.5 s a question at 10M chunks: a sample there.
    checked = qs if n <= EXHAUSTIVE_ALL_UP_TO else qs[:EXHAUSTIVE_SAMPLE]
    out["bm25_top10_exhaustive"] = timed(lambda q: index.search_lexical_exhaustive(q, 10), checked)  # type: ignore[attr-defined]
    same = sum(
        [(h.chunk.chunk_id, h.score) for h in index.search_lexical(q, 10)]
        == [(h.chunk.chunk_id, h.score) for h in index.search_lexical_exhaustive(q, 10)]  # type: ignore[attr-defined]
        for q in checked
    )
    out["bm25_identical_to_exhaustive"] = {"same": same, "of": len(checked)}
    vectors = pipeline.embedder.encode(qs)
    out["dense_top10"] = timed(lambda i: index.search_dense(vectors[i], 10), list(range(len(qs))))
    out["embed_query"] = timed(lambda q: pipeline.embedder.encode([q]), qs)
    out["hybrid_top10"] = timed(lambda q: pipeline.retriever.search(q, 10), qs)
    out["query_reader_off"] = timed(pipeline.query, qs[:FULL_QUERIES])
    try:
        with_reader = VerityRAGPipeline(settings=Settings(), data_dir=IN_MEMORY, index=index)
    except Exception as exc:  # the shipped reader's files may be missing (make train-reader)
        out["query_default"] = {"skipped": f"{type(exc).__name__}: {exc}"}
    else:
        out["query_default"] = timed(with_reader.query, qs[:FULL_QUERIES])
        del with_reader
    out["top10_fingerprint"] = top10_fingerprint(pipeline, qs)
    times, found = timed_stream_ingest(pipeline, [docs.make() for _ in range(300)])
    out["stream_ingest"] = {**percentiles(times), "read_after_write": found}
    if ann:
        out["ann_on_hashed_vectors"] = ann_recall(pipeline, vectors)
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def ann_recall(pipeline: VerityRAGPipeline, question_vectors: np.ndarray) -> dict[str, Any]:
    """An hnswlib graph over the index's vectors: its build time and recall@10 against exact search,
    for the questions' (hashed, sparse) vectors and for chunk vectors used as queries."""
    from verityrag.index import _hnsw

    snap = pipeline.index.snapshot()
    assert snap.vectors is not None
    n = snap.n_slots
    graph = _hnsw.HnswIndex(pipeline.index.dim, capacity=n)
    t0 = time.perf_counter()
    graph.add_columns(snap.segment.vectors, n)
    out: dict[str, Any] = {
        "build_s": time.perf_counter() - t0,
        "M": _hnsw.M,
        "ef_construction": _hnsw.EF_CONSTRUCTION,
    }
    rng = np.random.default_rng(0)
    chunk_queries = snap.vectors.columns(rng.choice(n, size=200, replace=False))
    for name, queries in (("questions", question_vectors), ("chunk_vectors", chunk_queries)):
        queries = queries[np.any(queries, axis=1)]
        exact = [set(snap.vectors.top_k(q, 10, snap)[0]) for q in queries]
        for ef in (64, 128, 256):
            graph._index.set_ef(ef)
            times, recall = [], []
            for q, truth in zip(queries, exact, strict=True):
                t1 = time.perf_counter()
                found = graph.query(q, 10, snap)
                times.append((time.perf_counter() - t1) * 1000)
                recall.append(len(truth & set(found[0] if found else [])) / 10)
            out[f"{name}_ef{ef}"] = {"recall_at_10": float(np.mean(recall)), **percentiles(times)}
    return out


def worker_durable(scale: int, store: Path) -> dict[str, Any]:
    corpus = bundled_corpus.load_corpus(CORPUS)
    pipeline = VerityRAGPipeline(settings=Settings(reader=False), data_dir=store)
    build_s = grow_to(pipeline, SyntheticDocs(corpus, seed=7), scale)
    out = {"chunks": len(pipeline.index), "bulk_write_s": build_s, "peak_rss_mb": peak_rss_mb()}
    assert pipeline.store is not None
    pipeline.store.close()
    return out


def process_age_s() -> float:
    """Seconds since this process started (Linux: its start time in /proc against the uptime)."""
    with open(f"/proc/{os.getpid()}/stat", encoding="ascii") as fh:
        start_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime", encoding="ascii") as fh:
        uptime = float(fh.read().split()[0])
    return uptime - start_ticks / os.sysconf("SC_CLK_TCK")


def _started(store: Path, how: str) -> tuple[VerityRAGPipeline, dict[str, Any]]:
    """A pipeline started on ``store``: its start time and RAM as ``{how}_s`` and
    ``rss_after_{how}_mb``, its first BM25 search and the process's age when it answered, and
    the digest of its BM25 top-10."""
    t0 = time.perf_counter()
    pipeline = VerityRAGPipeline(settings=Settings(reader=False), data_dir=store)
    started_s = time.perf_counter() - t0
    pipeline.index.search_lexical(questions()[0], 10)
    first_search_s = time.perf_counter() - t0 - started_s
    to_first_result_s = process_age_s()
    gc.collect()
    return pipeline, {
        "chunks": len(pipeline.index),
        f"{how}_s": started_s,
        f"{how}_first_search_s": first_search_s,
        f"{how}_process_start_to_first_result_s": to_first_result_s,
        f"rss_after_{how}_mb": rss_mb(),
        "peak_rss_mb": peak_rss_mb(),
        "top10_fingerprint": top10_fingerprint(pipeline, questions()),
    }


def worker_restore(store: Path) -> dict[str, Any]:
    """A start with no image: the index rebuilt from the store; then a clean stop writes one."""
    pipeline, out = _started(store, "restore")
    t1 = time.perf_counter()
    pipeline.close()
    out["image_write_s"] = time.perf_counter() - t1
    out["image_mb"] = sum(f.stat().st_size for f in (store / IMAGE_DIR).iterdir()) / 1e6
    return out


def worker_reopen(store: Path) -> dict[str, Any]:
    """A start after a clean stop: the index image opened instead of re-indexing the store."""
    corpus = bundled_corpus.load_corpus(CORPUS)
    pipeline, out = _started(store, "reopen")
    docs = SyntheticDocs(corpus, seed=11)
    docs.counter = 50_000_000  # new document ids: added, not replaced
    times, found = timed_stream_ingest(pipeline, [docs.make() for _ in range(200)])
    out["durable_stream_ingest"] = {**percentiles(times), "read_after_write": found}
    out["checkpoint_while_writing"] = checkpoint_while_writing(pipeline, docs)
    for doc_id in [f"syn-{n:07d}" for n in range(1, 2000, 100)]:  # and some deletions
        pipeline.delete_document(doc_id)
    out["top10_after_writes"] = top10_fingerprint(pipeline, questions())
    return out  # exits without close(): the next start finds the writes since the image


def checkpoint_while_writing(pipeline: VerityRAGPipeline, docs: SyntheticDocs) -> dict[str, Any]:
    """A checkpoint (the index image written, as the background rule does) in a thread, while
    this one writes a document at a time: how long it took, how many writes went on meanwhile
    and how long they waited (the writers are held off only while the index's state is taken)."""
    took: list[float] = []

    def checkpoint() -> None:
        t0 = time.perf_counter()
        pipeline.checkpoint()
        took.append(time.perf_counter() - t0)

    thread = threading.Thread(target=checkpoint)
    waits_ms: list[float] = []
    thread.start()
    while thread.is_alive():
        doc = docs.make()
        t0 = time.perf_counter()
        pipeline.ingest_document(doc.doc_id, doc.title, doc.text, doc.metadata)
        waits_ms.append(1000 * (time.perf_counter() - t0))
    thread.join()
    return {
        "checkpoint_s": took[0],
        "writes": len(waits_ms),
        "longest_write_s": max(waits_ms) / 1000,
        **percentiles(waits_ms),
    }


def worker_crash(store: Path) -> dict[str, Any]:
    """A start after a crash: the image opened and the writes since replayed from the store."""
    said: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())  # type: ignore[method-assign]
    writer_log = logging.getLogger("verityrag.ingest.writer")
    writer_log.addHandler(handler)
    writer_log.setLevel(logging.INFO)
    pipeline, out = _started(store, "crash_start")
    out["how"] = next((m for m in said if m.startswith(("replayed", "restored"))), "?")
    pipeline.close()
    return out


def worker_small() -> dict[str, Any]:
    corpus = bundled_corpus.load_corpus(CORPUS)
    docs = SyntheticDocs(corpus, seed=7)
    pipeline = VerityRAGPipeline(settings=Settings(reader=False), data_dir=IN_MEMORY)
    grow_to(pipeline, docs, 1000)
    times, found = timed_stream_ingest(pipeline, [docs.make() for _ in range(300)])
    return {"chunks": len(pipeline.index), "stream_ingest": {**percentiles(times), "read_after_write": found}}


# ------------------------------------------------------------------------ orchestration


def run_worker(args: list[str], timeout: float) -> dict[str, Any]:
    """This script as a worker in its own process; its JSON result, or what went wrong."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        result = Path(fh.name)
    cmd = [sys.executable, __file__, "--worker-out", str(result), *args]
    started = time.perf_counter()
    try:
        done = subprocess.run(cmd, timeout=timeout, capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    finally:
        print(f"  {' '.join(args)}: {time.perf_counter() - started:.0f} s", flush=True)
    try:
        if done.returncode != 0:
            return {"error": f"exit {done.returncode}: {done.stderr.strip()[-800:]}"}
        data: dict[str, Any] = json.loads(result.read_text(encoding="utf-8"))
        return data
    finally:
        result.unlink(missing_ok=True)


def run_peer(python: Path, engine: str, chunks: Path, qfile: Path, timeout: float) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        result = Path(fh.name)
    cmd = [str(python), str(ROOT / "scripts" / "bench_peers.py"), "--engine", engine]
    cmd += ["--chunks", str(chunks), "--questions", str(qfile), "--out", str(result)]
    started = time.perf_counter()
    try:
        done = subprocess.run(cmd, timeout=timeout, capture_output=True, text=True)
        if done.returncode != 0:
            return {"error": f"exit {done.returncode}: {done.stderr.strip()[-800:]}"}
        data: dict[str, Any] = json.loads(result.read_text(encoding="utf-8"))
        return data
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    finally:
        print(f"  peer {engine}: {time.perf_counter() - started:.0f} s", flush=True)
        result.unlink(missing_ok=True)


def orchestrate(args: argparse.Namespace) -> dict[str, Any]:
    scales = [int(s) for s in args.scales.split(",")]
    results: dict[str, Any] = {**run_conditions(), "scales": {}, "peers": {}}
    if args.merge and args.out.exists():  # the scales measured before stay, each with its date
        earlier = json.loads(args.out.read_text(encoding="utf-8"))
        for scale, kept in earlier.get("scales", {}).items():
            kept.setdefault("measured", earlier.get("date"))
            results["scales"][scale] = kept
        results["peers"] = earlier.get("peers", {})
    peers_python = Path(args.peers_python)
    use_peers = not args.no_peers and peers_python.exists()
    if not use_peers:
        results["peers_skipped"] = (
            "--no-peers" if args.no_peers else f"no {peers_python}: run `make bench-scale`"
        )
    else:
        done = subprocess.run(
            [str(peers_python), str(ROOT / "scripts" / "bench_peers.py"), "--versions"],
            capture_output=True,
            text=True,
        )
        results["peer_versions"] = json.loads(done.stdout) if done.returncode == 0 else {}
    peer_memory: dict[str, tuple[int, float]] = {}  # engine: its memory at the largest scale so far
    for scale, engines in sorted(results["peers"].items(), key=lambda item: int(item[0])):
        for engine, peer in engines.items():
            if "peak_rss_mb" in peer:
                peer_memory[engine] = (int(scale), peer["peak_rss_mb"])
    with tempfile.TemporaryDirectory(prefix="bench_scale_") as tmp:
        qfile = Path(tmp) / "questions.jsonl"
        qfile.write_text("".join(json.dumps(q) + "\n" for q in questions()), encoding="utf-8")
        for i, scale in enumerate(scales):
            print(f"{scale:,} chunks", flush=True)
            chunks = Path(tmp) / f"chunks_{scale}.jsonl"
            worker = ["--worker", "index", "--scale", str(scale)]
            worker += ["--chunks-out", str(chunks)] if use_peers else []
            worker += ["--ann"] if i == 0 and not args.no_ann else []
            entry: dict[str, Any] = {"index": run_worker(worker, args.timeout), "measured": results["date"]}
            peers: dict[str, Any] = {}
            for engine in args.peers.split(",") if use_peers and chunks.exists() else ():
                if engine in peer_memory:
                    was_scale, was_mb = peer_memory[engine]
                    expected_gb = was_mb * scale / was_scale / 1024
                    if expected_gb > args.peer_memory_gb:
                        peers[engine] = {
                            "skipped": f"would need ~{expected_gb:.0f} GB (> {args.peer_memory_gb} GB)"
                        }
                        continue
                peers[engine] = run_peer(peers_python, engine, chunks, qfile, args.timeout)
                if "peak_rss_mb" in peers[engine]:
                    peer_memory[engine] = (scale, peers[engine]["peak_rss_mb"])
            chunks.unlink(missing_ok=True)
            results["peers"][str(scale)] = peers
            if not args.no_durable:
                store = Path(tmp) / f"store_{scale}"
                entry["durable"] = run_worker(
                    ["--worker", "durable", "--scale", str(scale), "--store", str(store)], args.timeout
                )
                entry["restore"] = run_worker(["--worker", "restore", "--store", str(store)], args.timeout)
                entry["reopen"] = run_worker(["--worker", "reopen", "--store", str(store)], args.timeout)
                entry["crash"] = run_worker(["--worker", "crash", "--store", str(store)], args.timeout)
                subprocess.run(["rm", "-rf", str(store)], check=False)
            results["scales"][str(scale)] = entry
            write_results(results, args.out)  # what is done so far survives a later failure
        results["small"] = run_worker(["--worker", "small"], args.timeout)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scales", default="100000,300000,1000000", help="chunk counts, comma-separated")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--peers-python", default=str(PEERS_PYTHON), help="the peers' virtualenv Python")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--peers", default=",".join(PEERS), help="the engines compared, comma-separated")
    parser.add_argument("--no-durable", action="store_true", help="skip the SQLite build and restore")
    parser.add_argument("--no-ann", action="store_true", help="skip the hnswlib recall check")
    parser.add_argument("--peer-memory-gb", type=float, default=10.0)
    parser.add_argument("--timeout", type=float, default=5400.0, help="seconds for each step")
    parser.add_argument(
        "--merge", action="store_true", help="keep the other scales already in --out (each keeps its date)"
    )
    # Internal: one step, run by the orchestrator in its own process.
    parser.add_argument(
        "--worker",
        choices=["index", "durable", "restore", "reopen", "crash", "small"],
        help=argparse.SUPPRESS,
    )
    parser.add_argument("--worker-out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--scale", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--chunks-out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--store", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--ann", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    unknown = set(args.peers.split(",")) - set(PEERS)
    if unknown:
        parser.error(f"--peers: unknown {', '.join(sorted(unknown))} (known: {', '.join(PEERS)})")
    if args.worker:
        if args.worker == "index":
            result = worker_index(args.scale, args.chunks_out, args.ann)
        elif args.worker == "durable":
            result = worker_durable(args.scale, args.store)
        elif args.worker == "restore":
            result = worker_restore(args.store)
        elif args.worker == "reopen":
            result = worker_reopen(args.store)
        elif args.worker == "crash":
            result = worker_crash(args.store)
        else:
            result = worker_small()
        args.worker_out.write_text(json.dumps(result), encoding="utf-8")
        return 0
    results = orchestrate(args)
    write_results(results, args.out)
    print(scale_table(results))
    print(f"\nwritten: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
