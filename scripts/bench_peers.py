"""The BM25 engines a user would pick instead of VerityRAG's index, on the same chunks and questions.

Run by scripts/bench_scale.py with the Python of a separate virtualenv
(guard_work/bench_peers_venv, made by ``make bench-scale``), one engine per process, so that
bm25s, rank_bm25, Haystack and tantivy never become VerityRAG's dependencies and each
engine's memory is its own. Standard library only at import; the engine is imported when run.

    python scripts/bench_peers.py --engine bm25s --chunks C.jsonl --questions Q.jsonl --out R.json
    python scripts/bench_peers.py --engine bm25s --chunks C.jsonl --questions Q.jsonl --serve

``--chunks``: one JSON object per line, ``{"id", "text"}`` (the chunk's title and text, as
VerityRAG's BM25 indexes them); ``--questions``: one JSON string per line. Each engine is
built in one call, timed on top-10 queries (tokenising the question included, as
VerityRAG's ``search_lexical`` analyses it), then asked to make one more chunk searchable.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import re
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

_TOKEN = re.compile(r"(?u)\b\w\w+\b")


def rss_mb() -> float:
    """Resident memory now (Linux /proc), else the peak."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def read_chunks(path: Path) -> tuple[list[str], list[str]]:
    """The chunks' ids and texts, in the file's order."""
    ids: list[str] = []
    texts: list[str] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            ids.append(row["id"])
            texts.append(row["text"])
    return ids, texts


def stemmer() -> Any:
    """PyStemmer's Snowball English stemmer, as VerityRAG's analyzer stems."""
    import Stemmer

    return Stemmer.Stemmer("english")


class Engine:
    name = ""
    config = "defaults"  # how the engine is set up and called, for the table

    def build(self, ids: list[str], texts: list[str]) -> None:
        raise NotImplementedError

    def search(self, question: str, k: int) -> list[str]:
        raise NotImplementedError

    def add(self, chunk_id: str, text: str) -> None:
        """Make one more chunk searchable."""
        raise NotImplementedError


class Bm25s(Engine):
    """bm25s its fastest documented way: the numba backend, queries given as lists of (stemmed)
    token strings; scores precomputed in a sparse matrix; no incremental add (a rebuild)."""

    name = "bm25s"
    config = "backend='numba', queries as token strings (tokenize(return_ids=False)), n_threads=1"

    def build(self, ids: list[str], texts: list[str]) -> None:
        import bm25s

        self.bm25s = bm25s
        self.stem = stemmer()  # bm25s wants the object (it calls stemWords)
        self.ids, self.texts = ids, texts
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=self.stem, show_progress=False)
        self.retriever = bm25s.BM25(k1=1.5, b=0.75, backend="numba")
        self.retriever.index(tokens, show_progress=False)
        self.vocab = self.retriever.vocab_dict

    def search(self, question: str, k: int) -> list[str]:
        words = self.bm25s.tokenize(
            [question], stopwords="en", stemmer=self.stem, return_ids=False, show_progress=False
        )[0]
        words = [w for w in words if w in self.vocab]  # bm25s refuses a query of unknown words
        if not words:
            return []
        docs, _ = self.retriever.retrieve([words], k=k, show_progress=False, n_threads=1)
        return [self.ids[i] for i in docs[0].tolist()]

    def add(self, chunk_id: str, text: str) -> None:
        self.build([*self.ids, chunk_id], [*self.texts, text])


class RankBm25(Engine):
    """rank_bm25.BM25Okapi (VerityRAG's scoring reference): pure Python, no incremental add."""

    name = "rank_bm25"
    config = "BM25Okapi (pure Python, its only backend)"

    def build(self, ids: list[str], texts: list[str]) -> None:
        from rank_bm25 import BM25Okapi

        self.cls = BM25Okapi
        self.stem = stemmer().stemWord
        self.ids = ids
        self.tokens = [self.tokenize(t) for t in texts]
        self.bm25 = BM25Okapi(self.tokens)

    def tokenize(self, text: str) -> list[str]:
        return [self.stem(t) for t in _TOKEN.findall(text.lower())]

    def search(self, question: str, k: int) -> list[str]:
        import numpy as np

        scores = self.bm25.get_scores(self.tokenize(question))
        top = np.argpartition(-scores, min(k, len(scores) - 1))[:k]
        return [self.ids[i] for i in top[np.argsort(-scores[top], kind="stable")].tolist()]

    def add(self, chunk_id: str, text: str) -> None:
        self.ids = [*self.ids, chunk_id]
        self.tokens.append(self.tokenize(text))
        self.bm25 = self.cls(self.tokens)


class Haystack(Engine):
    """Haystack 2.x InMemoryDocumentStore, BM25Okapi: documents are added incrementally."""

    name = "haystack_inmemory"
    config = "InMemoryDocumentStore(bm25_algorithm='BM25Okapi'), bm25_retrieval"

    def build(self, ids: list[str], texts: list[str]) -> None:
        from haystack import Document
        from haystack.document_stores.in_memory import InMemoryDocumentStore

        self.document = Document
        self.store = InMemoryDocumentStore(bm25_algorithm="BM25Okapi")
        self.store.write_documents([Document(id=i, content=t) for i, t in zip(ids, texts, strict=True)])

    def search(self, question: str, k: int) -> list[str]:
        return [d.id for d in self.store.bm25_retrieval(question, top_k=k)]

    def add(self, chunk_id: str, text: str) -> None:
        self.store.write_documents([self.document(id=chunk_id, content=text)])


class Tantivy(Engine):
    """tantivy (Rust, Lucene-like) in memory: an add is visible after a commit and a reload."""

    name = "tantivy"
    config = "in memory, en_stem, boolean of term queries, one searcher"

    def build(self, ids: list[str], texts: list[str]) -> None:
        import tantivy

        self.tantivy = tantivy
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw")
        builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
        self.schema = builder.build()
        self.index = tantivy.Index(self.schema)
        self.writer = self.index.writer(heap_size=200_000_000, num_threads=1)
        for chunk_id, text in zip(ids, texts, strict=True):
            self.writer.add_document(tantivy.Document(id=chunk_id, body=text))
        self.writer.commit()
        self.index.reload()
        self.searcher = self.index.searcher()
        self.stem = stemmer().stemWord

    def search(self, question: str, k: int) -> list[str]:
        # Term queries, not parse_query (which refuses many questions' punctuation); tantivy's
        # en_stem lower-cases and Snowball-stems, so the terms are made the same way here.
        terms = {self.stem(t) for t in re.findall(r"[^\W_]+", question.lower())}
        if not terms:
            return []
        query = self.tantivy.Query.boolean_query(
            [
                (self.tantivy.Occur.Should, self.tantivy.Query.term_query(self.schema, "body", t))
                for t in terms
            ]
        )
        hits = self.searcher.search(query, k).hits
        return [self.searcher.doc(address)["id"][0] for _, address in hits]

    def add(self, chunk_id: str, text: str) -> None:
        self.writer.add_document(self.tantivy.Document(id=chunk_id, body=text))
        self.writer.commit()
        self.index.reload()
        self.searcher = self.index.searcher()


ENGINES: dict[str, type[Engine]] = {e.name: e for e in (Bm25s, RankBm25, Haystack, Tantivy)}


def percentiles(times_ms: list[float]) -> dict[str, float]:
    ordered = sorted(times_ms)
    return {
        "p50_ms": statistics.median(ordered),
        "p95_ms": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "n": len(ordered),
    }


def run(
    engine: Engine, chunks: Path, questions: list[str], query_seconds: float, add_text: str
) -> dict[str, Any]:
    ids, texts = read_chunks(chunks)
    gc.collect()
    before = rss_mb()
    started = time.perf_counter()
    engine.build(ids, texts)
    build_s = time.perf_counter() - started
    del ids, texts
    gc.collect()
    out: dict[str, Any] = {
        "engine": engine.name,
        "config": engine.config,
        "build_s": build_s,
        "rss_after_build_mb": rss_mb(),
    }
    out["index_rss_mb"] = out["rss_after_build_mb"] - before
    for q in questions[:5]:  # warm caches
        engine.search(q, 10)
    times = []
    deadline = time.perf_counter() + query_seconds
    for q in questions:
        t0 = time.perf_counter()
        engine.search(q, 10)
        times.append((time.perf_counter() - t0) * 1000)
        if time.perf_counter() > deadline and len(times) >= 10:
            break
    out["bm25_top10"] = percentiles(times)
    code = add_text.split()[-1].rstrip(".")
    t0 = time.perf_counter()
    engine.add("added#0", add_text)
    out["add_one_chunk_ms"] = (time.perf_counter() - t0) * 1000
    out["added_found"] = engine.search(code, 1) == ["added#0"]
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def serve(engine: Engine, chunks: Path, questions: list[str]) -> None:
    """Build, say ``ready``, then time one pass over the questions for each ``pass`` read from
    stdin (a JSON line of its percentiles each), until ``quit``: a caller alternates these passes
    with its own, so a busy machine slows both alike."""
    ids, texts = read_chunks(chunks)
    engine.build(ids, texts)
    del ids, texts
    gc.collect()
    for q in questions[:10]:  # warm caches
        engine.search(q, 10)
    print(json.dumps({"ready": True, "config": engine.config}), flush=True)
    for line in sys.stdin:
        if line.strip() != "pass":
            return
        times = []
        for q in questions:
            t0 = time.perf_counter()
            engine.search(q, 10)
            times.append((time.perf_counter() - t0) * 1000)
        print(json.dumps(percentiles(times)), flush=True)


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("bm25s", "numba", "rank-bm25", "haystack-ai", "tantivy", "numpy", "scipy", "PyStemmer"):
        with contextlib.suppress(PackageNotFoundError):
            out[name] = version(name)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--engine", choices=sorted(ENGINES), help="the engine to run")
    parser.add_argument("--chunks", type=Path)
    parser.add_argument("--questions", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--query-seconds", type=float, default=60.0, help="stop querying after this (>= 10 queries)"
    )
    parser.add_argument(
        "--versions", action="store_true", help="print the engines' versions as JSON and exit"
    )
    parser.add_argument(
        "--serve", action="store_true", help="build, then time a pass for each 'pass' line on stdin"
    )
    args = parser.parse_args(argv)
    if args.versions:
        print(json.dumps(versions()))
        return 0
    if not (args.engine and args.chunks and args.questions and (args.out or args.serve)):
        parser.error("--engine, --chunks, --questions and --out (or --serve) are required")
    questions = [json.loads(line) for line in args.questions.read_text(encoding="utf-8").splitlines() if line]
    if args.serve:
        serve(ENGINES[args.engine](), args.chunks, questions)
        return 0
    add_text = "An added chunk about rivers and engines. Reference code zqadded0001."
    result = run(ENGINES[args.engine](), args.chunks, questions, args.query_seconds, add_text)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
