"""The sufficiency gate: is the retrieved evidence enough to answer? A calibrated LightGBM classifier.

It predicts the probability that answering now is right: by default that a gold answer is in
the evidence the generator reads (``Settings.gate_label``; ``answer``: in the answer it gives),
from several retrieval and selection features (never one score threshold).
Probabilities are calibrated by isotonic regression on out-of-fold predictions
(5-fold, stratified), and the answer threshold is chosen on those out-of-fold
probabilities by a stated rule:

* ``"abstention_target"`` (default): the lowest threshold at which at most
  ``1 - abstention_target`` of the questions that must be refused would be
  answered (their false-answer rate), i.e. the most coverage that keeps
  correct abstention at the target on the calibration questions.
* ``"balanced"``: the threshold that maximises the mean of the correct-answer
  rate on answerable questions and the abstention rate on the others.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from verityrag.errors import InvalidInputError, NotFittedError
from verityrag.models.folder import RESOURCES_DIR
from verityrag.retrieval.lightgbm_params import lightgbm_params

logger = logging.getLogger(__name__)

ThresholdRule = Literal["abstention_target", "balanced"]
THRESHOLD_RULES: tuple[str, ...] = ("abstention_target", "balanced")

GATE_FEATURES: tuple[str, ...] = (
    "selector_score",  # the sentence selector's score of the chosen sentence
    "selector_margin",  # ... minus the runner-up's
    "sentence_cov_w",  # IDF-weighted share of question terms in the chosen sentence
    "sentence_cov",  # plain share
    "top_cov_w",  # IDF-weighted share of question terms in the top chunk
    "top_title_cov",  # share of question terms in the top chunk's title
    "top_bm25_norm",  # top chunk's BM25 / the most the question could score
    "top_dense",  # top chunk's cosine
    # No reranker score: the reranker is trained per corpus (and may be absent), and the
    # default gate must transfer to a corpus it has never seen.
    "oov_fraction",  # share of question terms the corpus has never seen
    "top_max_missing_idf",  # the rarest question term the top chunk lacks (relative IDF)
    "query_terms",  # number of question terms
    "distinct_docs_top5",  # how scattered the top 5 hits are across documents
    # Features of the chosen sentence, computed by the sentence selector:
    "sentence_entity_cov",  # share of the question's names found in the sentence
    "sentence_entity_cov_title",  # ... in the sentence or its title
    "question_entities",  # how many names the question has
    "sentence_type_match",  # the sentence holds what the wh-word asks for (a year for "when", ...)
    "sentence_top3_matched",  # share of the question's 3 rarest terms in the sentence
    "sentence_window_cov",  # coverage by the sentence and its neighbours
)
# What the extractive reader found, appended to GATE_FEATURES for a gate that reads it.
READER_FEATURES: tuple[str, ...] = (
    "reader_logit",  # best answer span's score minus the no-answer score (clipped to +-20)
    "reader_type_ok",  # the span is of the kind the question asks for (a number for "how many" ...)
)
#: The feature sets a gate may be fitted on.
FEATURE_SETS: tuple[tuple[str, ...], ...] = (GATE_FEATURES, GATE_FEATURES + READER_FEATURES)
# Names of the selector features copied into the last gate features, in order.
SELECTOR_FEATURES_FOR_GATE: tuple[str, ...] = (
    "entity_cov",
    "entity_cov_title",
    "question_entities",
    "type_match",
    "top3_matched_frac",
    "cov_idf_window",
)


@dataclass(frozen=True, slots=True)
class GateDecision:
    probability: float
    threshold: float

    @property
    def sufficient(self) -> bool:
        return self.probability >= self.threshold


class SufficiencyGate:
    """Calibrated probability that answering now is right (the label ``calibrate`` gives it)."""

    def __init__(
        self,
        n_estimators: int = 120,
        num_leaves: int = 7,
        learning_rate: float = 0.05,
        min_child_samples: int = 10,
        threshold_rule: ThresholdRule = "abstention_target",
        abstention_target: float = 0.97,
        cv: int = 5,
        random_state: int = 0,
        cv_repeats: int = 5,
        features: Sequence[str] = GATE_FEATURES,
    ) -> None:
        if cv_repeats < 1:
            raise InvalidInputError("cv_repeats", f"must be >= 1, got {cv_repeats}")
        if tuple(features) not in FEATURE_SETS:
            raise InvalidInputError(
                "features", "must be GATE_FEATURES, or GATE_FEATURES + READER_FEATURES for a gate that reads"
            )
        self.features = tuple(features)
        self.n_estimators = n_estimators
        self.num_leaves = num_leaves
        self.learning_rate = learning_rate
        self.min_child_samples = min_child_samples
        self.threshold_rule = threshold_rule
        self.abstention_target = abstention_target
        self.cv = cv
        self.cv_repeats = cv_repeats
        self.random_state = random_state

    @property
    def reads(self) -> bool:
        """Whether the gate takes the reader's features (``READER_FEATURES``) after ``GATE_FEATURES``."""
        return len(self.features) > len(GATE_FEATURES)

    def _params(self) -> dict[str, Any]:
        return lightgbm_params(
            "binary",
            num_leaves=self.num_leaves,
            learning_rate=self.learning_rate,
            min_child_samples=self.min_child_samples,
            seed=self.random_state,
        )

    def _train(self, x: npt.NDArray[np.float64], y: npt.NDArray[np.int32]) -> Any:
        import lightgbm as lgb

        data = lgb.Dataset(x, label=y, feature_name=list(self.features))
        return lgb.train(self._params(), data, num_boost_round=self.n_estimators)

    def fit(
        self,
        features: npt.ArrayLike,
        correct: npt.ArrayLike,
        must_abstain: npt.ArrayLike,
    ) -> SufficiencyGate:
        """``correct[i]``: answering question i now would be right. ``must_abstain[i]``: it is unanswerable.

        The threshold rule needs to know which wrong answers are answers to
        unanswerable questions (the abstention target is about those).
        """
        if self.threshold_rule not in THRESHOLD_RULES:
            raise InvalidInputError(
                "threshold_rule", f"{self.threshold_rule!r} is not one of {', '.join(THRESHOLD_RULES)}"
            )
        if not 0.0 <= self.abstention_target <= 1.0:
            # Above 1 no threshold meets it but the one above every probability: a gate that
            # refuses everything, fitted without a word.
            raise InvalidInputError(
                "abstention_target", f"must be within [0, 1], got {self.abstention_target!r}"
            )
        x, y = self._check_xy(features, correct)
        neg = np.asarray(must_abstain, dtype=bool).reshape(-1)
        if len(neg) != len(y):
            raise InvalidInputError("must_abstain", f"has {len(neg)} values for {len(y)} examples")
        if not neg.any():
            # With none, every threshold meets the abstention target (and abstention counts as
            # perfect in the balanced rule), so either rule picks 0: a gate that never refuses.
            raise InvalidInputError(
                "must_abstain",
                "need some questions the corpus cannot answer (answers []): the abstention threshold is set on them",
            )
        calibrated = self.fit_probabilities(x, y)
        self.threshold_ = self.choose_threshold(calibrated, y.astype(bool), neg)
        if not (calibrated >= self.threshold_).any():
            # The rule's answer when the out-of-fold probabilities cannot tell the questions to
            # answer from those to refuse: legitimate, but it makes a gate that refuses everything.
            logger.warning(
                "sufficiency gate: its threshold %.3f answers none of the %d calibration questions, so "
                "it will refuse every question (the out-of-fold probabilities do not separate them at "
                "abstention_target=%s; a tree needs at least 2 x min_child_samples = %d examples to "
                "split at all): calibrate with more labelled questions",
                self.threshold_,
                len(y),
                self.abstention_target,
                2 * self.min_child_samples,
            )
        self.fit_summary_: dict[str, Any] = {
            "examples": len(y),
            "positives": int(y.sum()),
            "must_abstain": int(neg.sum()),
            "threshold": self.threshold_,
            "rule": self.threshold_rule,
            "abstention_target": self.abstention_target,
            "oof_brier": float(np.mean((calibrated - y) ** 2)),
        }
        logger.info("sufficiency gate fitted: %s", self.fit_summary_)
        return self

    def _check_xy(
        self, features: npt.ArrayLike, correct: npt.ArrayLike
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int32]]:
        x = np.asarray(features, dtype=np.float64)
        labels = np.asarray(correct).reshape(-1)
        if x.ndim != 2 or x.shape[1] != len(self.features):
            raise InvalidInputError("features", f"need shape (n, {len(self.features)}), got {x.shape}")
        if len(labels) != len(x):
            raise InvalidInputError("correct", f"has {len(labels)} labels for {len(x)} examples")
        if not np.isin(labels, (0, 1)).all():
            raise InvalidInputError("correct", "labels must be 0/1 or booleans")
        y = labels.astype(np.int32)
        if len(set(y.tolist())) < 2:
            raise InvalidInputError("correct", "need both correct and incorrect examples to fit the gate")
        return x, y

    def set_threshold(self, threshold: float) -> SufficiencyGate:
        """Decide at ``threshold`` (one chosen elsewhere, e.g. on the reformulation loop's outcomes)."""
        self._check_fitted()
        self.threshold_ = float(threshold)
        self.fit_summary_["threshold"] = self.threshold_
        return self

    def fit_probabilities(
        self, x: npt.NDArray[np.float64], y: npt.NDArray[np.int32]
    ) -> npt.NDArray[np.float64]:
        """Fit the booster and its isotonic calibration (no threshold); returns the calibrated
        out-of-fold probabilities. Alone it makes a gate that scores but does not decide: what an
        out-of-fold evaluation of the gate needs (its threshold is chosen on all the folds)."""
        from sklearn.isotonic import IsotonicRegression
        from sklearn.model_selection import StratifiedKFold

        folds = min(self.cv, int(np.bincount(y).min()))
        oof = np.zeros(len(y))
        if folds >= 2:
            # Each repeat splits the questions anew; the average is less tied to one split.
            for repeat in range(self.cv_repeats):
                splitter = StratifiedKFold(
                    n_splits=folds, shuffle=True, random_state=self.random_state + repeat
                )
                for train_idx, test_idx in splitter.split(x, y):
                    booster = self._train(x[train_idx], y[train_idx])
                    oof[test_idx] += booster.predict(x[test_idx], num_threads=1)
            oof /= self.cv_repeats
        else:  # too few of one class for folds: calibrate in-sample (said in the log)
            logger.warning("sufficiency gate: too few examples for cross-validation; calibrating in-sample")
            oof = self._train(x, y).predict(x, num_threads=1)
        self.isotonic_ = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(oof, y)
        calibrated: npt.NDArray[np.float64] = self.isotonic_.predict(oof)
        self.oof_probabilities_ = calibrated
        self.booster_: Any = self._train(x, y)
        return calibrated

    def choose_threshold(
        self, probs: npt.NDArray[np.float64], correct: npt.NDArray[np.bool_], neg: npt.NDArray[np.bool_]
    ) -> float:
        """The threshold the rule picks for these calibrated probabilities and labels."""
        return self.best_operating_point(probs, correct, neg)[0]

    def best_operating_point(
        self, probs: npt.NDArray[np.float64], correct: npt.NDArray[np.bool_], neg: npt.NDArray[np.bool_]
    ) -> tuple[float, float]:
        """``(threshold, objective)``: the rule's threshold and the value of what it maximises
        (the correct-answer rate at the abstention target, or the balanced accuracy)."""
        candidates = np.unique(np.concatenate([probs, [0.0, 1.0 + 1e-9]]))
        answerable = ~neg
        best_t, best = 1.0 + 1e-9, -1.0
        for t in candidates:
            answered = probs >= t
            abstention = float(np.mean(~answered[neg])) if neg.any() else 1.0
            good = float(np.mean(answered[answerable] & correct[answerable])) if answerable.any() else 0.0
            if self.threshold_rule == "balanced":
                score = (abstention + good) / 2
            else:
                score = good if abstention >= self.abstention_target else -1.0
            if score > best:
                best_t, best = float(t), score
        return best_t, best

    def _check_fitted(self) -> None:
        if not hasattr(self, "booster_"):
            raise NotFittedError(
                "this SufficiencyGate is not fitted: call pipeline.calibrate(questions) "
                "or load the default with SufficiencyGate.default()"
            )

    def predict_proba(self, features: npt.ArrayLike) -> npt.NDArray[np.float64]:
        self._check_fitted()
        x = np.atleast_2d(np.asarray(features, dtype=np.float64))
        if x.shape[1] != len(self.features):
            raise InvalidInputError("features", f"need shape (n, {len(self.features)}), got {x.shape}")
        raw = self.booster_.predict(x, num_threads=1)
        return np.asarray(self.isotonic_.predict(raw), dtype=np.float64)

    def decide(self, features: Sequence[float]) -> GateDecision:
        return GateDecision(float(self.predict_proba([features])[0]), self.threshold_)

    # ---------------------------------------------------------------- persist
    def to_dict(self) -> dict[str, Any]:
        self._check_fitted()
        return {
            "format": "verityrag-sufficiency-gate/1",
            "features": list(self.features),
            "params": {
                "n_estimators": self.n_estimators,
                "num_leaves": self.num_leaves,
                "learning_rate": self.learning_rate,
                "min_child_samples": self.min_child_samples,
                "threshold_rule": self.threshold_rule,
                "abstention_target": self.abstention_target,
                "cv": self.cv,
                "cv_repeats": self.cv_repeats,
                "random_state": self.random_state,
            },
            "threshold": self.threshold_,
            "isotonic": {
                "x": self.isotonic_.X_thresholds_.tolist(),
                "y": self.isotonic_.y_thresholds_.tolist(),
            },
            "booster": self.booster_.model_to_string(),
            "fit_summary": self.fit_summary_,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SufficiencyGate:
        import lightgbm as lgb
        from sklearn.isotonic import IsotonicRegression

        features = tuple(data.get("features") or ())
        if features not in FEATURE_SETS:
            raise InvalidInputError("gate", "saved gate was fitted on other features; refit it")
        # A file saved before cv_repeats existed was fitted with one split.
        gate = cls(**{"cv_repeats": 1, **data["params"]}, features=features)
        iso = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0)
        xs, ys = np.asarray(data["isotonic"]["x"]), np.asarray(data["isotonic"]["y"])
        gate.isotonic_ = iso.fit(xs, ys)
        gate.booster_ = lgb.Booster(model_str=data["booster"])
        gate.threshold_ = float(data["threshold"])
        gate.fit_summary_ = dict(data.get("fit_summary", {}))
        return gate

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict()), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> SufficiencyGate:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))

    @classmethod
    def default(cls) -> SufficiencyGate:
        """The gate fitted on the bundled SQuAD calibration questions (python -m verityrag.train gate)."""
        path = RESOURCES_DIR / "sufficiency_gate.json"
        if not path.exists():
            raise NotFittedError(f"no default gate at {path}: run python -m verityrag.train gate")
        return cls.load(path)
