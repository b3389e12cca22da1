"""Bulk ingest on both cores: documents chunked, embedded and analyzed in worker processes while
the caller's process waits to commit them.

Preparing a document (chunking, the hashing embedder, the analyzer) is about two thirds of a bulk
build's time and all Python, so threads would take turns on the GIL: worker processes do it,
each batch whole, and return what :meth:`DocumentWriter.prepare` would have made in process
(the same chunks, vectors and term counts: the same index).

The workers are forked for each bulk call and gone when it returns, and only from a process
that runs no other thread: a fork copies one thread and every lock as it was, so a lock another
thread held would never be released in the child. ``spawn`` and ``forkserver`` do not have that
problem but run the caller's main module again in every worker (a user's script without an
``if __name__ == "__main__":`` guard would ingest again in each one). A server (threads) prepares
in process.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from verityrag.embed.embedder import Embedder
from verityrag.text.analyzer import Analyzer
from verityrag.text.chunking import chunk_spans
from verityrag.types import Chunk, Document

#: Below this many documents a call prepares them in process: forking the workers and shipping
#: each batch's chunks, vectors and term counts back cost as much as they save. Measured (one call,
#: quiet machine, compiled hashing): 10,000 documents 1.78 s on the workers, 1.74 s in process;
#: 20,000 3.70 / 3.69 s; 40,000 6.6 / 7.4 s.
PARALLEL_MIN_DOCUMENTS = 20_000


class PreparedDocument(NamedTuple):
    """A validated document, chunked, embedded and analyzed: what a commit writes."""

    document: Document
    chunks: list[Chunk]
    vectors: npt.NDArray[np.float32]
    term_counts: list[dict[str, int]]  # per chunk: the terms BM25 indexes and the store keeps


Prepared = list[PreparedDocument]


@dataclass(frozen=True)
class Preparer:
    """What preparing a document takes, without the index: sent to a worker process whole."""

    embedder: Embedder
    analyzer: Analyzer
    max_words: int
    overlap_sentences: int

    def chunk(self, doc: Document) -> list[Chunk]:
        spans = chunk_spans(
            doc.doc_id, doc.text, max_words=self.max_words, overlap_sentences=self.overlap_sentences
        )
        return [
            Chunk(s.chunk_id, doc.doc_id, doc.title, doc.text[s.start : s.end], s.position, s.start, s.end)
            for s in spans
        ]

    def __call__(self, docs: Sequence[Document]) -> Prepared:
        """Chunk, embed (one encoder call for all their chunks) and count the indexed terms.

        The terms are what the index counts for a chunk (its title's, then its text's), counted
        right after embedding while the analyzer still holds the texts it analyzed for the
        (hashing) embedder."""
        chunked = [self.chunk(doc) for doc in docs]
        texts = [c.text for chunks in chunked for c in chunks]
        vectors = self.embedder.encode(texts) if texts else np.zeros((0, self.embedder.dim), np.float32)
        analyze = self.analyzer.analyze
        out = []
        offset = 0
        for doc, chunks in zip(docs, chunked, strict=True):
            counts = [dict(Counter(analyze(c.title) + analyze(c.text))) for c in chunks]
            out.append(PreparedDocument(doc, chunks, vectors[offset : offset + len(chunks)], counts))
            offset += len(chunks)
        return out


#: Threads that may run beside a fork: tqdm's monitor only sleeps and updates bars, which the
#: workers never touch.
_HARMLESS_THREADS = frozenset({"tqdm_monitor"})


def _other_threads() -> list[str]:
    """The names of this process's other threads that a fork could catch holding a lock."""
    current = threading.current_thread()
    return [t.name for t in threading.enumerate() if t is not current and t.name not in _HARMLESS_THREADS]


def _prepare(job: tuple[Preparer, Sequence[Document]]) -> Prepared:
    preparer, docs = job
    return preparer(docs)


class WorkerPool:
    """Worker processes that prepare batches of documents: forked for one call, then gone."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers if workers is not None else min(2, os.cpu_count() or 1)

    @property
    def useful(self) -> bool:
        """Two cores or more, a platform that forks, and no other thread in this process."""
        return self.workers > 1 and "fork" in multiprocessing.get_all_start_methods() and not _other_threads()

    def prepare(self, preparer: Preparer, batches: Sequence[Sequence[Document]]) -> Prepared:
        """Every batch prepared by a forked worker, in order. This process only waits: a parent
        that ran its share meanwhile took longer (each page it wrote after the fork was copied)."""
        out: Prepared = []
        # Compiled code (the hashing embedder's numba loop) is made or loaded from numba's cache
        # here, once, before the fork: each forked worker would otherwise load it again.
        preparer.embedder.encode(["warm"])
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(self.workers, mp_context=context) as executor:
            for prepared in executor.map(_prepare, [(preparer, batch) for batch in batches]):
                out += prepared
        return out
