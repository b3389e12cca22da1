"""What the benchmarks in scripts/ share with the README: their tables, and the synthetic documents
they grow an index with. The figures come from the benchmarks' JSON in scripts/results/."""

from __future__ import annotations

import json
import os
import platform
import random
import resource
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verityrag.text import split_sentences
from verityrag.types import Document


def peak_rss_mb() -> float:
    """The process's peak resident memory so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb() -> float:
    """Resident memory now (Linux /proc), else the peak. scripts/bench_peers.py keeps its own copy:
    it runs in the peers' virtualenv, where VerityRAG is not installed."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return peak_rss_mb()


if TYPE_CHECKING:
    from verityrag.pipeline import VerityRAGPipeline


class SyntheticDocs:
    """~150-word documents of real sentences sampled from the eval corpus."""

    def __init__(self, corpus: list[Document], seed: int = 7) -> None:
        self.sentences = [(d.title, s) for d in corpus for s in split_sentences(d.text)]
        self.rng = random.Random(seed)
        self.counter = 0

    def make(self, words: int = 150) -> Document:
        self.counter += 1
        title, first = self.rng.choice(self.sentences)
        parts = [first]
        total = len(first.split())
        while total < words:
            _, sentence = self.rng.choice(self.sentences)
            parts.append(sentence)
            total += len(sentence.split())
        parts.append(f"Reference code zq{self.counter:07d}.")
        return Document(f"syn-{self.counter:07d}", title, " ".join(parts))


def grow_to(pipeline: VerityRAGPipeline, docs: SyntheticDocs, target_chunks: int, batch: int = 5000) -> float:
    """Bulk-ingest synthetic documents until the index holds ``target_chunks`` chunks; returns the
    seconds spent in ``ingest_documents`` (making the documents is not timed)."""
    pending = [docs.make() for _ in range(200)]
    per_doc = sum(len(pipeline.writer.chunk(d)) for d in pending) / len(pending)
    spent = 0.0
    while len(pipeline.index) < target_chunks:
        wanted = max(1, min(batch, int((target_chunks - len(pipeline.index)) / per_doc)))
        now, pending = pending[:wanted], pending[wanted:]
        now += [docs.make() for _ in range(wanted - len(now))]
        t0 = time.perf_counter()
        pipeline.ingest_documents(now, progress=False)
        spent += time.perf_counter() - t0
    return spent


def percentiles(times_ms: Sequence[float]) -> dict[str, float]:
    """p50 and p95 of latencies in milliseconds (numpy's linear interpolation), and their count."""
    import numpy as np

    return {
        "p50_ms": float(np.percentile(times_ms, 50)),
        "p95_ms": float(np.percentile(times_ms, 95)),
        "n": len(times_ms),
    }


def timed_stream_ingest(pipeline: VerityRAGPipeline, docs: Sequence[Document]) -> tuple[list[float], bool]:
    """``ingest_document`` of each document in turn: the wall time of each (ms), and whether the
    last one is found right after by its reference code (read after write; :class:`SyntheticDocs`)."""
    times = []
    for doc in docs:
        t0 = time.perf_counter()
        pipeline.ingest_document(doc.doc_id, doc.title, doc.text)
        times.append((time.perf_counter() - t0) * 1000)
    last = docs[-1]
    code = last.text.split()[-1].rstrip(".")
    found = [s.chunk.doc_id for s in pipeline.index.search_lexical(code, 1)] == [last.doc_id]
    return times, found


def index_table(r: dict[str, Any]) -> str:
    """The live-index benchmark's table (scripts/bench_index.py; README's index figures)."""
    small, large, hnsw = r["scale_small"], r["scale_large"], r["scale_large_hnsw"]
    rows = [
        (
            "bulk ingest, SQuAD eval corpus (HashingEmbedder)",
            f"{r['eval_corpus_bulk_hashing']['seconds']:.3f} s for {r['eval_corpus_bulk_hashing']['chunks']} chunks",
            "<= 0.5 s",
        ),
        (
            f"hybrid query p50 top-10, {r['eval_corpus_query_top10']['chunks']} chunks",
            f"{r['eval_corpus_query_top10']['p50_ms']:.2f} ms (p95 {r['eval_corpus_query_top10']['p95_ms']:.2f})",
            "<= 3 ms",
        ),
        (
            f"stream ingest p50, {small['chunks']:,} chunks",
            f"{small['stream_ingest']['p50_ms']:.2f} ms",
            "<= 2 ms",
        ),
        (
            f"stream ingest p50, {large['chunks']:,} chunks",
            f"{large['stream_ingest']['p50_ms']:.2f} ms",
            "<= 2 ms",
        ),
        ("stream p50 ratio large / small", f"{r['stream_ratio_large_over_small']:.2f}", "<= 2"),
        (
            f"hybrid query p50 top-10, {large['chunks']:,} chunks (exact)",
            f"{large['hybrid_query_top10']['p50_ms']:.2f} ms (p95 {large['hybrid_query_top10']['p95_ms']:.2f})",
            "<= 15 ms",
        ),
    ]
    if "hybrid_query_top10" in hnsw:
        rows.append(
            (
                f"hybrid query p50 top-10, {hnsw['chunks']:,} chunks (hnsw)",
                f"{hnsw['hybrid_query_top10']['p50_ms']:.2f} ms",
                "(option)",
            )
        )
    rows += [
        (
            f"restore {r['restore']['chunks']:,} chunks from SQLite",
            f"{r['restore']['restore_s']:.2f} s",
            "<= 10 s",
        ),
        (
            "durable stream ingest p50 (SQLite WAL)",
            f"{r['restore']['durable_stream_ingest']['p50_ms']:.2f} ms",
            "(reported)",
        ),
        (
            f"peak RSS after {large['chunks']:,} chunks",
            f"{r['peak_rss_mb_after_large']:.0f} MB",
            "(reported)",
        ),
    ]
    st = r.get("sentence_transformer", {})
    for backend, fig in st.items():
        if isinstance(fig, dict):
            rows.append(
                (
                    f"SentenceTransformer ({backend}): bulk docs/s, query embed ms",
                    f"{fig['bulk_docs_per_s']:.0f} docs/s, {fig['query_embed_ms']:.1f} ms",
                    "(reported)",
                )
            )
    width = max(len(a) for a, _, _ in rows)
    lines = [f"{'figure':<{width}}  {'measured':<32}  target", "-" * (width + 50)]
    lines += [f"{a:<{width}}  {b:<32}  {c}" for a, b, c in rows]
    return "\n".join(lines)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def learned_checks_table(data: dict[str, Any]) -> str:
    """The learned-checks benchmark's table (scripts/bench_learned_checks.py; README's cost figures)."""
    lines = [
        "| checks on | thresholds (from) | start-up s | query p50 ms | p95 ms | p50 / none | coverage | in-domain unanswerable abstention |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    base = data["runs"][0]["query_ms"]["p50"]
    for run in data["runs"]:
        thresholds = (
            ", ".join(
                f"{stage} {info['threshold']:.3g} ({info['threshold_from']})"
                for stage, info in run["checks"].items()
            )
            or "-"
        )
        q = run["query_ms"]
        lines.append(
            f"| {run['config']} | {thresholds} | {run['startup_s']:.1f} | {q['p50']:.1f} | {q['p95']:.1f} "
            f"| {q['p50'] / base:.2f} | {_pct(run['coverage'])} | {_pct(run['in_domain_unanswerable_abstention'])} |"
        )
    skipped = data.get("configs_skipped", [])
    if skipped:
        lines += ["", f"Not measured in this run (`--configs`): {', '.join(skipped)}."]
    return "\n".join(lines)


def _get(data: dict[str, Any], *path: str) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _ms(fig: dict[str, Any] | None) -> str:
    """Wall p50 / p95, and the CPU p50 in brackets when it was measured."""
    if not fig or "p50_ms" not in fig:
        return "n/a"
    cpu = f" (cpu {fig['cpu_p50_ms']:.2f})" if "cpu_p50_ms" in fig else ""
    return f"{fig['p50_ms']:.2f} / {fig['p95_ms']:.2f}{cpu}"


def scale_label(chunks: int) -> str:
    """100000 -> '100k', 1000000 -> '1M'."""
    return f"{chunks // 1_000_000}M" if chunks % 1_000_000 == 0 else f"{chunks // 1000}k"


def write_results(results: dict[str, Any], out: Path) -> None:
    """A benchmark's figures as the JSON the README's tables are generated from (keys sorted, a
    final newline), its folder made."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def run_conditions() -> dict[str, Any]:
    """What a benchmark's figures were measured on and beside: Python, the machine, the time, the
    load at the start, and whether a model was training (which makes every figure slower)."""
    training = subprocess.run(
        ["pgrep", "-f", "verityrag.train"], capture_output=True, text=True, check=False
    ).stdout.split()
    return {
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average_at_start": os.getloadavg()[0],
        "training_running": bool(training),
    }


def bm25s_table(r: dict[str, Any]) -> str:
    """BM25 top-10 against bm25s with passes interleaved (scripts/bench_bm25s_interleaved.py), markdown."""
    lines = [
        "| chunks | VerityRAG p50 / p95 ms | bm25s p50 / p95 ms | ratio of the p50s (ours / bm25s) "
        "| rounds where ours was faster |",
        "| --- | --- | --- | --- | --- |",
    ]
    for scale in sorted(r.get("scales", {}), key=int):
        c = r["scales"][scale]
        if "error" in c:
            lines.append(f"| {scale_label(int(scale))} | {c['error']} | | | |")
            continue
        ours, theirs = c["verityrag"], c["bm25s"]
        lines.append(
            f"| {scale_label(int(scale))} | {ours['p50_ms']:.3f} / {ours['p95_ms']:.3f} "
            f"| {theirs['p50_ms']:.3f} / {theirs['p95_ms']:.3f} | {c['ratio_p50']:.2f} "
            f"| {c['rounds_ours_faster']} of {c['rounds']} |"
        )
    return "\n".join(lines)


def scale_table(r: dict[str, Any]) -> str:
    """The scale benchmark's table (scripts/bench_scale.py; README's scale figures), markdown."""
    scales = sorted(r.get("scales", {}), key=int)
    if not scales:
        return "_No scales measured._"
    cols = [r["scales"][s] for s in scales]
    small = _get(r, "small", "stream_ingest", "p50_ms")

    def row(name: str, cells: list[str], target: str) -> str:
        return f"| {name} | " + " | ".join(cells) + f" | {target} |"

    def each(fn: Any) -> list[str]:
        out = []
        for c in cols:
            try:
                value = fn(c)
            except (KeyError, TypeError, ZeroDivisionError):
                value = None
            out.append("n/a" if value is None else str(value))
        return out

    lines = [
        "| figure (wall p50 / p95 ms, CPU p50 in brackets) | "
        + " | ".join(scale_label(int(s)) for s in scales)
        + " | target |",
        "| --- |" + " --- |" * len(scales) + " --- |",
        row(
            "chunks (documents)",
            each(lambda c: f"{c['index']['chunks']:,} ({c['index']['documents']:,})"),
            "",
        ),
        row(
            "bulk build, hashing embedder, in memory",
            each(
                lambda c: (
                    f"{c['index']['bulk_build_s']:.0f} s ({c['index']['documents'] / c['index']['bulk_build_s']:,.0f} docs/s"
                    + (
                        f"; cpu {c['index']['bulk_build_cpu_s']:.0f} s)"
                        if "bulk_build_cpu_s" in c["index"]
                        else ")"
                    )
                )
            ),
            "100k documents <= 10 s",
        ),
        row(
            "BM25 top-10 (search_lexical)",
            each(lambda c: _ms(c["index"]["bm25_top10"])),
            "<= bm25s (below); 1M: <= 2 / 5; 10M: p50 <= 25",
        ),
        row("BM25 top-10, exhaustive scorer", each(lambda c: _ms(c["index"]["bm25_top10_exhaustive"])), ""),
        row(
            "BM25 top-10 identical to exhaustive",
            each(lambda c: "{same} of {of}".format(**c["index"]["bm25_identical_to_exhaustive"])),
            "all",
        ),
        row(
            "dense top-10",
            each(lambda c: f"{_ms(c['index']['dense_top10'])} ({c['index']['dense_backend']})"),
            "",
        ),
        row(
            "hnswlib over these hashed vectors: recall@10, questions / chunk vectors (ef 128)",
            each(
                lambda c: "{:.3f} / {:.3f}".format(
                    c["index"]["ann_on_hashed_vectors"]["questions_ef128"]["recall_at_10"],
                    c["index"]["ann_on_hashed_vectors"]["chunk_vectors_ef128"]["recall_at_10"],
                )
            ),
            ">= 0.98 to be the default",
        ),
        row("hybrid retrieval top-10", each(lambda c: _ms(c["index"]["hybrid_top10"])), "1M: p50 <= 10"),
        row(
            "pipeline.query, reader off",
            each(lambda c: _ms(c["index"]["query_reader_off"])),
            "1M: <= 20 / 60",
        ),
        row(
            "pipeline.query, default settings",
            each(lambda c: _ms(c["index"].get("query_default"))),
            "1M: <= 25 / 60; 10M: p50 <= 60",
        ),
        row(
            "streaming ingest (ratio to 1k chunks)",
            each(
                lambda c: (
                    f"{_ms(c['index']['stream_ingest'])} ({c['index']['stream_ingest']['p50_ms'] / small:.2f})"
                    if small
                    else _ms(c["index"]["stream_ingest"])
                )
            ),
            "p50 <= 2, ratio <= 2",
        ),
        row(
            "RSS after build",
            each(lambda c: f"{c['index']['rss_after_build_mb']:,.0f} MB"),
            "1M: <= 3 GB; 10M: <= 16 GB",
        ),
        row(
            "index RAM per chunk",
            each(lambda c: f"{c['index']['index_bytes_per_chunk']['total']:,.0f} B"),
            "",
        ),
        row(
            "rebuild from the SQLite store (no image)",
            each(lambda c: f"{c['restore']['restore_s']:.1f} s"),
            "",
        ),
        row("RSS after the rebuild", each(lambda c: f"{c['restore']['rss_after_restore_mb']:,.0f} MB"), ""),
        row(
            "index image written at a clean stop",
            each(lambda c: f"{c['restore']['image_write_s']:.1f} s ({c['restore']['image_mb']:,.0f} MB)"),
            "",
        ),
        row("restart: the image opened", each(lambda c: f"{c['reopen']['reopen_s']:.2f} s"), "1M: <= 1 s"),
        row(
            "restart: process start to the first BM25 result (first search)",
            each(
                lambda c: "{:.2f} s ({:.3f} s)".format(
                    c["reopen"]["reopen_process_start_to_first_result_s"],
                    c["reopen"]["reopen_first_search_s"],
                )
            ),
            "1M: <= 1.5 s; 10M: <= 10 s",
        ),
        row(
            "RSS after the restart",
            each(lambda c: f"{c['reopen']['rss_after_reopen_mb']:,.0f} MB"),
            "1M: <= 2 GB",
        ),
        row(
            "restart answers as the rebuild (BM25 top-10)",
            each(
                lambda c: (
                    "yes" if c["reopen"]["top10_fingerprint"] == c["restore"]["top10_fingerprint"] else "NO"
                )
            ),
            "yes",
        ),
        row(
            "a checkpoint while writes go on: its time; writes meanwhile, their p50 / longest wait",
            each(
                lambda c: "{:.1f} s; {:,}, {:.1f} ms / {:.2f} s".format(
                    c["reopen"]["checkpoint_while_writing"]["checkpoint_s"],
                    c["reopen"]["checkpoint_while_writing"]["writes"],
                    c["reopen"]["checkpoint_while_writing"]["p50_ms"],
                    c["reopen"]["checkpoint_while_writing"]["longest_write_s"],
                )
            ),
            "off the writers' path",
        ),
        row(
            "start after a crash: the image and the writes since replayed",
            each(
                lambda c: "{:.1f} s ({}), {:,.0f} MB, answers as before the crash: {}".format(
                    c["crash"]["crash_start_s"],
                    "replayed" if c["crash"]["how"].startswith("replayed") else "rebuilt",
                    c["crash"]["rss_after_crash_start_mb"],
                    "yes" if c["crash"]["top10_fingerprint"] == c["reopen"]["top10_after_writes"] else "NO",
                )
            ),
            "",
        ),
        row(
            "durable streaming ingest",
            each(
                lambda c: _ms(
                    c["reopen"]["durable_stream_ingest"]
                    if "reopen" in c
                    else c["restore"]["durable_stream_ingest"]
                )
            ),
            "",
        ),
    ]
    peers = r.get("peers", {})
    for engine, label in (
        ("bm25s", "bm25s"),
        ("rank_bm25", "rank_bm25"),
        ("haystack_inmemory", "Haystack InMemoryDocumentStore"),
        ("tantivy", "tantivy"),
    ):
        cells = []
        configs = {
            p["config"] for s in scales if isinstance(p := _get(peers, s, engine), dict) and "config" in p
        }
        if configs:  # how it was set up and called: each peer its fastest documented way
            label = f"{label} ({'; '.join(sorted(configs))})"
        for s, c in zip(scales, cols, strict=True):
            peer = _get(peers, s, engine) or {}
            ours = _get(c, "index", "bm25_top10", "p50_ms")
            if "bm25_top10" in peer and ours:
                p50 = peer["bm25_top10"]["p50_ms"]
                cells.append(
                    f"{_ms(peer['bm25_top10'])}; ours / it {ours / p50:.2f}; add {peer['add_one_chunk_ms']:,.1f} ms"
                )
            else:
                cells.append(str(peer.get("skipped") or ("failed" if "error" in peer else "n/a")))
        lines.append(row(f"{label}: BM25 top-10; ratio; add a chunk", cells, "bm25s: ratio <= 1"))
    return "\n".join(lines)
