"""LightGBM reranker trained by inverse-cloze-task weak supervision from the corpus itself.

ICT (Lee et al. 2019): a sentence of the corpus plays the question and the
chunk(s) holding it are the positives; the other retrieved chunks are the
negatives. Real questions share only part of their terms with the answer
sentence, so each pseudo-query keeps a random subset of the sentence's words.
No labelled question is needed, so a user's fresh corpus trains its own reranker.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from verityrag.errors import InvalidInputError, NotFittedError
from verityrag.index.protocol import AnyIndex, SnapshotView
from verityrag.retrieval.features import CHUNK_FEATURES, ChunkTermCache, QueryTerms, feature_matrix
from verityrag.retrieval.lightgbm_params import lightgbm_params
from verityrag.text.sentences import sentence_spans
from verityrag.types import Hit

logger = logging.getLogger(__name__)

# ``calibrate`` keeps the reranker only when it ranks a gold chunk first significantly more
# often than fusion does on the labelled questions: a tie or a one-question edge is no
# evidence, while the reranker costs time per query and its ICT training is unstable across
# seeds (calibration gold@1 0.25-0.865 on the bundled corpus; the former diary, git show 147e66a:ROADMAP.md, session 12).
KEEP_RERANKER_ALPHA = 0.05


def sign_test_p(wins: int, losses: int) -> float:
    """One-sided exact sign test (McNemar's test on the discordant questions): the chance of at
    least ``wins`` of the ``wins + losses`` questions going to the reranker if neither is better."""
    if wins < 0 or losses < 0:
        raise InvalidInputError("wins", f"counts must be >= 0, got wins={wins}, losses={losses}")
    n = wins + losses
    if n == 0:
        return 1.0
    tail: int = sum(math.comb(n, k) for k in range(wins, n + 1))
    return tail / (1 << n)


@dataclass(frozen=True, slots=True)
class RankingData:
    """Feature rows, relevance labels and group sizes (one group per query), as LightGBM wants them."""

    features: npt.NDArray[np.float64]
    labels: npt.NDArray[np.int32]
    groups: npt.NDArray[np.int32]


@dataclass(eq=False)
class LightGBMReranker:
    """Lambdarank over :data:`~verityrag.retrieval.features.CHUNK_FEATURES`.

    The fields are the parameters (they are what :meth:`to_dict` saves); ``fit`` sets ``booster_``.
    """

    n_estimators: int = 150
    num_leaves: int = 15
    learning_rate: float = 0.05
    min_child_samples: int = 10
    random_state: int = 0

    def fit(self, data: RankingData) -> LightGBMReranker:
        import lightgbm as lgb

        _check_width(data.features)
        params = lightgbm_params(
            "lambdarank",
            num_leaves=self.num_leaves,
            learning_rate=self.learning_rate,
            min_child_samples=self.min_child_samples,
            seed=self.random_state,
        )
        train = lgb.Dataset(
            data.features, label=data.labels, group=data.groups, feature_name=list(CHUNK_FEATURES)
        )
        self.booster_: Any = lgb.train(params, train, num_boost_round=self.n_estimators)
        return self

    @property
    def is_fitted(self) -> bool:
        return hasattr(self, "booster_")

    def predict(self, features: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        if not self.is_fitted:
            raise NotFittedError("this LightGBMReranker is not fitted: call pipeline.train_reranker() first")
        if len(features) == 0:
            return np.zeros(0)
        _check_width(features)
        return np.asarray(self.booster_.predict(features, num_threads=1), dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        """The fitted model as JSON (its parameters and the LightGBM model text)."""
        if not self.is_fitted:
            raise NotFittedError("this LightGBMReranker is not fitted: nothing to save")
        params = {f.name: getattr(self, f.name) for f in fields(self)}
        return {
            "format": "verityrag-reranker/1",
            "params": params,
            "booster": self.booster_.model_to_string(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LightGBMReranker:
        import lightgbm as lgb

        if data.get("format") != "verityrag-reranker/1":
            raise InvalidInputError("reranker", f"not a saved reranker (format {data.get('format')!r})")
        reranker = cls(**data["params"])
        reranker.booster_ = lgb.Booster(model_str=data["booster"])
        return reranker

    def rerank(self, q: QueryTerms, hits: Sequence[Hit], cache: ChunkTermCache) -> list[Hit]:
        """Hits sorted by the model's score, which is kept on each hit as ``rerank_score``."""
        scores = self.predict(feature_matrix(q, hits, cache))
        scored = [replace(h, rerank_score=float(s)) for h, s in zip(hits, scores, strict=True)]
        return sorted(scored, key=lambda h: -(h.rerank_score or 0.0))


def _check_width(features: npt.NDArray[np.float64]) -> None:
    if features.ndim != 2 or features.shape[1] != len(CHUNK_FEATURES):
        raise InvalidInputError("features", f"need shape (n, {len(CHUNK_FEATURES)}), got {features.shape}")


def ict_queries(
    sentences: Sequence[tuple[str, str]], n: int, seed: int, keep: tuple[float, float] = (0.4, 0.8)
) -> list[tuple[str, str]]:
    """Pseudo-queries ``(query, source sentence)``: each keeps a random share of its sentence's words."""
    rng = random.Random(seed)
    picked = rng.sample(list(sentences), min(n, len(sentences)))
    out = []
    for _, sentence in picked:
        words = sentence.split()
        if len(words) < 6:
            continue
        share = rng.uniform(*keep)
        kept = [w for w in words if rng.random() < share] or words[:3]
        out.append((" ".join(kept), sentence))
    return out


class Searches(Protocol):
    """A retriever: the top ``k`` hits of a query in a snapshot."""

    def search(self, query: str, k: int, snapshot: SnapshotView | None = None) -> list[Hit]: ...


def train_ict_reranker(
    index: AnyIndex,
    retriever: Searches,
    cache: ChunkTermCache,
    candidates: int,
    n_queries: int = 800,
    seed: int = 0,
) -> LightGBMReranker | None:
    """A reranker trained on ``n_queries`` ICT pseudo-queries over ``index``'s chunks; None when the
    corpus is too small for any pseudo-query to have both a positive and a negative hit."""
    if isinstance(n_queries, bool) or not isinstance(n_queries, int) or n_queries < 1:
        # random.sample raised "Sample larger than population or is negative" for a negative
        # count, and 0 trained nothing, warning that the corpus was too small.
        raise InvalidInputError("n_queries", f"must be an integer >= 1, got {n_queries!r}")
    snap = index.snapshot()
    chunks = index.live_chunks(snap)
    if not chunks:
        raise InvalidInputError("corpus", "is empty: ingest documents before train_reranker()")
    sentences = [(c.chunk_id, c.text[s:e]) for c in chunks for s, e in sentence_spans(c.text)]
    rows: list[npt.NDArray[np.float64]] = []
    labels: list[npt.NDArray[np.int32]] = []
    groups: list[int] = []
    for query, sentence in ict_queries(sentences, n_queries, seed):
        hits = retriever.search(query, candidates, snap)
        y = np.asarray([int(sentence in h.chunk.text) for h in hits], dtype=np.int32)
        if not hits or y.sum() == 0 or y.sum() == len(y):
            continue
        q = QueryTerms.from_index(query, index, snap)
        rows.append(feature_matrix(q, hits, cache))
        labels.append(y)
        groups.append(len(hits))
    if not groups:
        return None
    data = RankingData(np.vstack(rows), np.concatenate(labels), np.asarray(groups, dtype=np.int32))
    return LightGBMReranker(random_state=seed).fit(data)
