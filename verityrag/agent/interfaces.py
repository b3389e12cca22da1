"""The small interfaces the agent is built over: any object with these methods will do.

The pipeline hands the :class:`~verityrag.agent.controller.AgentController` its parts through
these protocols, so a test or a user can swap any of them (a retriever over another store, a
gate of their own, a reader or a learned check).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Protocol

import numpy.typing as npt

from verityrag.generation.sentence_selector import ScoredSentence
from verityrag.index.protocol import SnapshotView
from verityrag.retrieval.features import ChunkTermCache, QueryTerms
from verityrag.types import Hit


class Retriever(Protocol):
    """The top ``k`` hits of a query in a snapshot, best first; ``doc_ids``: only those documents'."""

    def search(
        self, query: str, k: int, snapshot: SnapshotView | None = None, doc_ids: Collection[str] | None = None
    ) -> list[Hit]: ...


class Reranker(Protocol):
    """Reorders retrieved hits; used only once fitted."""

    @property
    def is_fitted(self) -> bool: ...

    def rerank(self, q: QueryTerms, hits: Sequence[Hit], cache: ChunkTermCache) -> list[Hit]: ...


class SufficiencyModel(Protocol):
    """The sufficiency gate: the probability that an attempt's evidence holds the answer, and the
    threshold it is trusted at."""

    threshold_: float

    @property
    def reads(self) -> bool:
        """Whether it takes the reader's features after the retrieval ones (then the agent needs a reader)."""
        ...

    def predict_proba(self, features: npt.ArrayLike) -> npt.NDArray: ...  # type: ignore[type-arg]


class SentenceRanker(Protocol):
    """Ranks the sentences of the top ``max_hits`` hits as answers, best first (the extractive answer)."""

    @property
    def max_hits(self) -> int: ...

    def generate(
        self, question: str, hits: Sequence[Hit], idf: Callable[[str], float]
    ) -> list[ScoredSentence]: ...


class AnswerGuard(Protocol):
    """A learned check of (evidence, answer): ``score`` is the probability the answer is supported."""

    threshold: float

    def score(self, evidence: str, answer: str) -> float: ...


class ReaderCheckModel(Protocol):
    """A question-aware check of (question, evidence, answer): ``score`` is how far the answer says what
    an extractive reader finds in the evidence for the question (:class:`verityrag.checks.ReaderCheck`)."""

    threshold: float

    def score(self, question: str, evidence: str, answer: str) -> float: ...


class AnswerCheckModel(Protocol):
    """A learned check of (question, short answer, the sentences quoted for it): ``score`` is the
    probability that the answer answers the question (:class:`verityrag.checks.AnswerCheck`)."""

    threshold: float

    def score(self, question: str, answer: str, sentences: str) -> float: ...


class AnswerabilityModel(Protocol):
    """A learned check of (question, evidence): ``score`` is the probability it can be answered."""

    threshold: float

    def score(self, question: str, evidence: str) -> float: ...
