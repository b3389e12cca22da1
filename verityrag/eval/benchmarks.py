"""What the benchmarks in scripts/ share with the README: their tables, and the synthetic documents
they grow an index with. The figures come from the benchmarks' JSON in scripts/results/."""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from verityrag.text import split_sentences
from verityrag.types import Document

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
