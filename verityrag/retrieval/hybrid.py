"""Hybrid retrieval: BM25 and dense search on one snapshot, fused, every score kept."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Collection
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from verityrag.embed.embedder import Embedder
from verityrag.errors import InvalidInputError
from verityrag.index.protocol import AnyIndex, Scored, SnapshotView
from verityrag.retrieval.fusion import FusionMode, check_fusion_mode, rrf, weighted
from verityrag.types import Chunk, Hit

logger = logging.getLogger(__name__)

#: From this many chunks the dense side (embedding the query, then the scan) runs in a worker
#: thread while BM25 runs in the caller's: both spend most of their time in numpy, which releases
#: the GIL. Measured in one process (decision 0056): slower below ~400k chunks (the threads wait
#: on each other for the GIL between numpy calls: 4.9 -> 6.0 ms at 50k, 10.4 -> 11.0 ms at 400k),
#: faster from ~700k (14.7 -> 13.3 ms; at 1M 18.7 -> 15.3 ms, p95 41.7 -> 33.4), always at
#: ~20-40% more CPU. One core: never.
PARALLEL_FROM = 700_000

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _dense_pool() -> ThreadPoolExecutor:
    """Shared by every retriever; as many workers as cores, so concurrent queries do not queue
    behind one thread."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="verityrag-dense")
        return _pool


@dataclass(eq=False, repr=False)
class HybridRetriever:
    """``search(query, k) -> list[Hit]``: lexical + dense candidates fused by RRF or weights."""

    index: AnyIndex
    embedder: Embedder
    fusion: FusionMode = "rrf"
    candidates: int = 50
    rrf_k: int = 60
    dense_weight: float = 0.5

    def __post_init__(self) -> None:
        self.fusion = check_fusion_mode(self.fusion)

    def search(
        self,
        query: str,
        k: int = 10,
        snapshot: SnapshotView | None = None,
        doc_ids: Collection[str] | None = None,
    ) -> list[Hit]:
        """The top ``k`` hits, fused; ``doc_ids``: only these documents' chunks (a metadata filter's)."""
        if k < 0:  # the slice [:k] below returned all candidates but the last -k
            raise InvalidInputError("k", f"must be >= 0, got {k}")
        snap = snapshot or self.index.snapshot()
        n = max(k, self.candidates)
        side: Future[tuple[npt.NDArray[np.float32], list[Scored]]] | None = None
        if snap.n_live >= PARALLEL_FROM and (os.cpu_count() or 1) > 1:
            side = _dense_pool().submit(self._dense, query, n, snap, doc_ids)
        lexical = self.index.search_lexical(query, n, snap, doc_ids=doc_ids)
        vector, dense = side.result() if side is not None else self._dense(query, n, snap, doc_ids)
        chunks: dict[str, Chunk] = {}
        bm25: dict[str, float] = {}
        cos: dict[str, float] = {}
        for scored in lexical:
            chunks[scored.chunk.chunk_id] = scored.chunk
            bm25[scored.chunk.chunk_id] = scored.score
        for scored in dense:
            chunks[scored.chunk.chunk_id] = scored.chunk
            cos[scored.chunk.chunk_id] = scored.score
        if self.fusion == "rrf":
            fused = rrf([list(bm25), list(cos)], k=self.rrf_k)
        else:
            fused = weighted([bm25, cos], [1.0 - self.dense_weight, self.dense_weight])
        bm25_rank = {cid: r for r, cid in enumerate(bm25, start=1)}
        dense_rank = {cid: r for r, cid in enumerate(cos, start=1)}
        ordered = sorted(fused, key=lambda cid: (-fused[cid], cid))[:k]
        # A chunk found only lexically still has a cosine: fill it in, so every hit's
        # dense_score means the same thing (it is a feature of the models downstream).
        missing = [cid for cid in ordered if cid not in cos]
        if missing and np.any(vector):
            cos.update(zip(missing, self.index.cosines(vector, missing, snap), strict=True))
        hits = [
            Hit(
                chunk=chunks[cid],
                score=fused[cid],
                bm25_score=bm25.get(cid, 0.0),
                dense_score=cos.get(cid, 0.0),
                bm25_rank=bm25_rank.get(cid),
                dense_rank=dense_rank.get(cid),
            )
            for cid in ordered
        ]
        logger.debug(
            "hybrid search %r: %d lexical, %d dense, %d fused", query, len(bm25), len(cos), len(hits)
        )
        return hits

    def _dense(
        self, query: str, n: int, snap: SnapshotView, doc_ids: Collection[str] | None
    ) -> tuple[npt.NDArray[np.float32], list[Scored]]:
        """The query's vector and its top ``n`` dense hits (none for an all-zero vector)."""
        vector = self.embedder.encode([query])[0]
        hits = self.index.search_dense(vector, n, snap, doc_ids=doc_ids) if np.any(vector) else []
        return vector, hits
