"""A learned sentence selector: which sentence of the retrieved chunks answers the question.

The baseline (:class:`~verityrag.generation.extractive.CoverageRanker`) ranks
sentences by IDF-weighted coverage of the question's terms. Retrieval usually
finds the right chunk, but the sentence that covers the question best is often
not the one holding the answer (the answer sentence must *add* something: a
date, a name, a number). :class:`SentenceSelector` ranks the same candidates
with a small LightGBM model over lexical, positional, retrieval and answer-type
features (:data:`FEATURE_NAMES`, computed in :mod:`verityrag.generation.sentence_features`,
which also says why they do not depend on the size of the corpus).

Typical use::

    selector = SentenceSelector.default()   # the model shipped in verityrag/resources
    ranked = selector.select(question, hits, idf=lambda t: index.idf(t, snapshot))
    best = ranked[0].sentence                # a CitedSentence

Train a new one with ``python -m verityrag.train selector``.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt

from verityrag.errors import InvalidInputError, ModelLoadError, NotFittedError
from verityrag.generation.sentence_features import (
    FEATURE_INDEX,
    FEATURE_NAMES,
    N_FEATURES,
    WH_CATEGORIES,
    SentenceFeatures,
    extract_features,
    question_category,
    relative_idf_weights,
)
from verityrag.retrieval.lightgbm_params import lightgbm_params
from verityrag.text.analyzer import DEFAULT_ANALYZER, Analyzer
from verityrag.types import CitedSentence, Hit

__all__ = [
    "FEATURE_NAMES",
    "FORMAT_VERSION",
    "META_FILENAME",
    "MODEL_FILENAME",
    "N_FEATURES",
    "OBJECTIVES",
    "WH_CATEGORIES",
    "Objective",
    "ScoredSentence",
    "SentenceFeatures",
    "SentenceSelector",
    "extract_features",
    "question_category",
    "relative_idf_weights",
]

logger = logging.getLogger(__name__)

MODEL_FILENAME = "sentence_selector.lgb"
META_FILENAME = "sentence_selector.json"
FORMAT_VERSION = 1
Objective = Literal["lambdarank", "binary"]
OBJECTIVES: tuple[str, ...] = get_args(Objective)
_PREDICT_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class ScoredSentence:
    """A candidate answer sentence: its citation, the model's raw score, the hit it came from, its features."""

    sentence: CitedSentence
    score: float
    hit_rank: int
    features: npt.NDArray[np.float32] = field(compare=False, repr=False)

    def feature(self, name: str) -> float:
        """One feature by its name in :data:`FEATURE_NAMES` (e.g. ``"cov_idf"``, coverage of the question)."""
        index = FEATURE_INDEX.get(name)
        if index is None:
            raise InvalidInputError("name", f"{name!r} is not a feature; see FEATURE_NAMES")
        return float(self.features[index])


class SentenceSelector:
    """Ranks the sentences of the top hits with a LightGBM model (lambdarank by default).

    scikit-learn conventions: the constructor only stores parameters, :meth:`fit`
    returns ``self``, learned state ends in ``_`` (``booster_``, ``metadata_``),
    and an unfitted selector raises :class:`~verityrag.errors.NotFittedError`.
    """

    def __init__(
        self,
        objective: Objective = "lambdarank",
        n_estimators: int = 200,
        num_leaves: int = 15,
        learning_rate: float = 0.05,
        min_child_samples: int = 20,
        max_hits: int = 3,
        random_state: int = 0,
        analyzer: Analyzer = DEFAULT_ANALYZER,
    ) -> None:
        self.objective = objective
        self.n_estimators = n_estimators
        self.num_leaves = num_leaves
        self.learning_rate = learning_rate
        self.min_child_samples = min_child_samples
        self.max_hits = max_hits
        self.random_state = random_state
        self.analyzer = analyzer

    # ------------------------------------------------------------- features
    def featurize(self, question: str, hits: Sequence[Hit], idf: Callable[[str], float]) -> SentenceFeatures:
        """The candidates of ``question`` and their features; needs no fitted model."""
        return extract_features(question, hits, idf, self.analyzer, self.max_hits)

    # -------------------------------------------------------------- fitting
    def _params(self) -> dict[str, Any]:
        if self.objective not in OBJECTIVES:
            raise InvalidInputError("objective", f"{self.objective!r} is not one of {', '.join(OBJECTIVES)}")
        params = lightgbm_params(
            self.objective,
            num_leaves=self.num_leaves,
            learning_rate=self.learning_rate,
            min_child_samples=self.min_child_samples,
            seed=self.random_state,
            force_row_wise=True,
        )
        if self.objective == "lambdarank":
            params["lambdarank_truncation_level"] = 10
        return params

    def fit(
        self,
        features: npt.ArrayLike,
        labels: npt.ArrayLike,
        group: Sequence[int] | npt.NDArray[np.integer[Any]],
        metadata: Mapping[str, Any] | None = None,
    ) -> SentenceSelector:
        """Train on candidate rows ``features`` [n, N_FEATURES] and ``labels`` (1 = the sentence holds the answer).

        ``group`` gives the number of consecutive rows of each question (as LightGBM's
        ``group``). ``metadata`` is stored with the model (data, sizes, metrics).
        """
        import lightgbm as lgb

        matrix = np.asarray(features, dtype=np.float32)
        y = np.asarray(labels, dtype=np.float64).reshape(-1)
        sizes = np.asarray(group, dtype=np.int64).reshape(-1)
        if matrix.ndim != 2 or matrix.shape[1] != N_FEATURES:
            raise InvalidInputError("features", f"has shape {matrix.shape}; expected (n, {N_FEATURES})")
        if len(y) != len(matrix):
            raise InvalidInputError("labels", f"has {len(y)} labels for {len(matrix)} rows")
        if not np.isin(y, (0.0, 1.0)).all():
            raise InvalidInputError("labels", "must be 0 or 1")
        if (sizes < 1).any() or int(sizes.sum()) != len(matrix):
            raise InvalidInputError("group", f"sizes must be >= 1 and sum to {len(matrix)} rows")
        dataset = lgb.Dataset(
            matrix,
            label=y,
            group=sizes if self.objective == "lambdarank" else None,
            feature_name=list(FEATURE_NAMES),
            params={"verbosity": -1, "min_data_in_bin": 1},
            free_raw_data=True,
        )
        self.booster_ = lgb.train(self._params(), dataset, num_boost_round=self.n_estimators)
        self.metadata_: dict[str, Any] = dict(metadata or {})
        logger.info(
            "sentence selector fitted: %d questions, %d rows, %d trees",
            len(sizes),
            len(matrix),
            self.n_estimators,
        )
        return self

    def _check_fitted(self) -> Any:
        booster = getattr(self, "booster_", None)
        if booster is None:
            raise NotFittedError(
                "This SentenceSelector is not fitted yet: call fit(features, labels, group) with rows from "
                "featurize(), or load a trained one with SentenceSelector.default() or "
                "SentenceSelector.load(directory)."
            )
        return booster

    # ------------------------------------------------------------ inference
    def score(self, features: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
        """Raw model scores for candidate rows (higher = more likely to hold the answer)."""
        booster = self._check_fitted()
        if len(features) == 0:
            return np.zeros(0, dtype=np.float64)
        with _PREDICT_LOCK:  # LightGBM predictions are serialised (each takes ~0.1 ms)
            scores = booster.predict(features, num_threads=1, raw_score=True)
        return np.asarray(scores, dtype=np.float64)

    def select(self, question: str, hits: Sequence[Hit], idf: Callable[[str], float]) -> list[ScoredSentence]:
        """Every sentence of the top ``max_hits`` hits, best first (ties: earlier hit, earlier sentence)."""
        self._check_fitted()
        feats = self.featurize(question, hits, idf)
        scores = self.score(feats.matrix)
        order = np.lexsort((np.arange(len(scores)), -scores))
        return [
            ScoredSentence(feats.sentences[i], float(scores[i]), feats.hit_ranks[i], feats.matrix[i])
            for i in order
        ]

    # ---------------------------------------------------------- persistence
    def save(self, directory: str | Path) -> Path:
        """Write ``sentence_selector.lgb`` (LightGBM model text) and ``sentence_selector.json``."""
        booster = self._check_fitted()
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        booster.save_model(str(out / MODEL_FILENAME))
        meta = {
            "format_version": FORMAT_VERSION,
            "feature_names": list(FEATURE_NAMES),
            "params": {
                "objective": self.objective,
                "n_estimators": self.n_estimators,
                "num_leaves": self.num_leaves,
                "learning_rate": self.learning_rate,
                "min_child_samples": self.min_child_samples,
                "max_hits": self.max_hits,
                "random_state": self.random_state,
            },
            "analyzer": self.analyzer.fingerprint(),
            "training": self.metadata_,
        }
        (out / META_FILENAME).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return out

    @classmethod
    def _from_texts(
        cls, model_text: str, meta_text: str, source: str, analyzer: Analyzer = DEFAULT_ANALYZER
    ) -> SentenceSelector:
        import lightgbm as lgb

        try:
            meta = json.loads(meta_text)
        except json.JSONDecodeError as exc:
            raise ModelLoadError(
                "sentence selector", [(source, f"{META_FILENAME} is not JSON: {exc}")]
            ) from exc
        names = meta.get("feature_names")
        if names != list(FEATURE_NAMES):
            raise ModelLoadError(
                "sentence selector",
                [
                    (
                        source,
                        "its features differ from this version's FEATURE_NAMES; retrain it with "
                        "python -m verityrag.train selector",
                    )
                ],
            )
        if meta.get("analyzer") not in (None, analyzer.fingerprint()):
            logger.warning(
                "sentence selector at %s was trained with %s, now using %s",
                source,
                meta.get("analyzer"),
                analyzer.fingerprint(),
            )
        try:
            booster = lgb.Booster(model_str=model_text)
        except Exception as exc:  # LightGBM raises its own LightGBMError
            raise ModelLoadError("sentence selector", [(source, f"bad LightGBM model: {exc}")]) from exc
        params = {k: v for k, v in meta.get("params", {}).items() if k != "analyzer"}
        selector = cls(**params, analyzer=analyzer)
        selector.booster_ = booster
        selector.metadata_ = dict(meta.get("training") or {})
        return selector

    @classmethod
    def load(cls, directory: str | Path, analyzer: Analyzer = DEFAULT_ANALYZER) -> SentenceSelector:
        """Load a selector written by :meth:`save`."""
        path = Path(directory)
        try:
            model_text = (path / MODEL_FILENAME).read_text(encoding="utf-8")
            meta_text = (path / META_FILENAME).read_text(encoding="utf-8")
        except OSError as exc:
            raise ModelLoadError(
                "sentence selector", [(str(path), f"{exc.strerror or exc}: {exc.filename}")]
            ) from exc
        return cls._from_texts(model_text, meta_text, str(path), analyzer)

    @classmethod
    def default(cls, analyzer: Analyzer = DEFAULT_ANALYZER) -> SentenceSelector:
        """The selector shipped in ``verityrag/resources`` (trained on SQuAD 2.0, disjoint from the eval)."""
        folder = resources.files("verityrag") / "resources"
        source = f"package resource verityrag/resources/{MODEL_FILENAME}"
        try:
            model_text = (folder / MODEL_FILENAME).read_text(encoding="utf-8")
            meta_text = (folder / META_FILENAME).read_text(encoding="utf-8")
        except OSError as exc:
            raise ModelLoadError(
                "sentence selector",
                [(source, f"{exc}; reinstall verityrag or run python -m verityrag.train selector")],
            ) from exc
        return cls._from_texts(model_text, meta_text, source, analyzer)

    def __repr__(self) -> str:
        fitted = "fitted" if getattr(self, "booster_", None) is not None else "unfitted"
        return (
            f"SentenceSelector(objective={self.objective!r}, n_estimators={self.n_estimators}, "
            f"num_leaves={self.num_leaves}, max_hits={self.max_hits}, {fitted})"
        )
