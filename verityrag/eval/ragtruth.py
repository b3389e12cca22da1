"""RAGTruth-QA and HaluEval-QA runner: how well does each verifier tell supported answers apart?

    python -m verityrag.eval --ragtruth [--verifier NAME ...]

Data (read from the datasets root, ``VERITYRAG_DATASETS``; sources and licences in data/README.md):

- RAGTruth QA test subset (829 responses, 148 sources, QC-NLI's copy): premise = the
  MS MARCO passages (evidence only), hypothesis = the model's response. A response is
  *unsupported* when it has any annotated hallucination span (160 of 829).
- HaluEval QA (10,000 items, each with a right and a hallucinated answer): premise =
  the knowledge (evidence only; its paragraphs, which HaluEval runs together as
  "...century.First for Women", set apart as in training), hypothesis = one answer (both
  answers of an item stay in the same split).

Protocol: every decision threshold is fitted on a fixed *fitting* half (RAGTruth: sources
whose sha1(source_id) is even; HaluEval: a seeded item split) as the F1-best threshold
for flagging unsupported answers, then reported on the other half: AUROC, F1, precision
and recall of the "unsupported" class, balanced accuracy, and CPU latency per pair
(scoring wall time on the report half / pairs, 2 cores). Positive class = unsupported;
the detector score is ``1 - P(supported)``.

Verifiers (rows, cheapest first):

- ``lexical``: share of the response's content terms, numbers and capitalised names
  found in the premise (no learning) - the baseline a learned model must beat;
- ``tfidf-lr``: logistic regression on TF-IDF of the response words *absent* from the
  premise plus the lexical figures; trained on the fitting half of the same dataset
  (its threshold is fitted on 5-fold out-of-fold scores of that half);
- ``grounding``: the project's :class:`~verityrag.verify.grounding.GroundingChecker`
  (minimum claim support over the response);
- ``guard:<folder>``: Verity-Guard (:class:`verityrag.checks.guard.LearnedGuard`: evidence trimmed
  per answer sentence, min over sentences), ``guard_work/guard`` by default when present;
- ``nli:<folder>``: the NLI verifier model trained here (:class:`verityrag.verify.LearnedNLI`,
  python -m verityrag.train nli; served like the guard), ``guard_work/nli`` by default when present;
- ``onnx:<folder>``: any other cross-encoder folder of ``verityrag.crossenc`` (every
  ``guard_work/*`` folder with a metadata.json except the question-side ones in
  ``NOT_SUPPORT_MODELS`` is tried by default);
- ``hf:<model>``: any HF sequence-classification NLI model (:mod:`verityrag.verify.nli`);
- ``folds:<a>+<b>``: added when two or more cross-encoders were each trained on part of the
  RAGTruth fitting half (python -m verityrag.train nli-ragtruth ``--bucket``): their mean, with every
  fitting-half response scored by the members not trained on it (:func:`cross_fitted_run`);
- ``ens-{min,mean,max}``: :func:`~verityrag.verify.ensemble.aggregate` over the
  members' scores after an isotonic calibration fitted on the fitting half (raw scores
  of different verifiers are not on one scale); ``ens2-*`` the same over the two members
  with the best AUROC on the fitting half; ``ens-lr``: :class:`~verityrag.verify.StackedScorer`,
  a logistic regression over all members' logit scores fitted on the fitting half (its
  threshold from 5-fold out-of-fold scores of that half, as for ``tfidf-lr``).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import math
import platform
import random
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from verityrag import datasets
from verityrag.crossenc.build import halueval_knowledge
from verityrag.errors import DatasetMissingError, InvalidInputError, NotFittedError, VerityRAGError
from verityrag.eval.metrics import auroc_interval
from verityrag.text.analyzer import DEFAULT_ANALYZER
from verityrag.text.sentences import split_sentences
from verityrag.types import Chunk, Citation, CitedSentence
from verityrag.verify.calibration import IsotonicCalibrator
from verityrag.verify.ensemble import AGGREGATIONS, aggregate
from verityrag.verify.grounding import GroundingChecker
from verityrag.verify.protocols import NLIScorer

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
# Under the datasets root (VERITYRAG_DATASETS, default ../shared/data), as it was when imported.
RAGTRUTH_PATH = datasets.datasets_root() / datasets.RAGTRUTH_QA
HALUEVAL_PATH = datasets.datasets_root() / datasets.HALUEVAL_QA
GUARD_WORK = ROOT / "guard_work"
#: guard_work/ folders that hold question-side models, not (premise, hypothesis) support scorers.
NOT_SUPPORT_MODELS = {
    "answerability": "scores question-evidence answerability",
    "answer_span": "the extractive-QA answerability model the reader is exported from",
    "reader": "an extractive reader: start / end logits",
}
DEFAULT_OUT = ROOT / "eval_report_ragtruth.json"
BASE_VERIFIERS = ("lexical", "tfidf-lr", "grounding")
#: A cross-encoder folder's metadata.json ``data`` key listing the RAGTruth sources it was
#: trained on (python -m verityrag.train nli-ragtruth): its threshold is fitted without them.
TRAINED_SOURCES_KEY = "trained_on_ragtruth_sources"
ENSEMBLES = (*(f"ens-{how}" for how in AGGREGATIONS), "ens-lr")


@dataclass(frozen=True, slots=True)
class PairExample:
    premise: str
    hypothesis: str
    unsupported: int  # 1 = the hypothesis has unsupported content
    group: str  # examples of one group stay in one split


# ------------------------------------------------------------------ data


def _open_text(path: Path) -> Iterable[str]:
    if not path.exists():
        raise DatasetMissingError(
            str(path), str(path.parent), f"set {datasets.ENV_VAR} to the datasets folder (see data/README.md)"
        )
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        yield from fh


def read_ragtruth_rows(path: Path = RAGTRUTH_PATH) -> list[dict[str, Any]]:
    """The raw RAGTruth-QA rows (passages ``d1``, response ``d2``, hallucination spans ``labels``)."""
    return [json.loads(line) for line in _open_text(path)]


def load_ragtruth(path: Path = RAGTRUTH_PATH) -> list[PairExample]:
    out = []
    for row in read_ragtruth_rows(path):
        premise = row["d1"].strip()  # the evidence only: the question is not evidence
        out.append(PairExample(premise, row["d2"], int(bool(row["labels"])), str(row["source_id"])))
    return out


def split_ragtruth(examples: Sequence[PairExample]) -> tuple[list[PairExample], list[PairExample]]:
    """(fitting half, report half) by source: sha1(source_id) even / odd."""

    def fit(e: PairExample) -> bool:
        return int(hashlib.sha1(e.group.encode()).hexdigest(), 16) % 2 == 0

    return [e for e in examples if fit(e)], [e for e in examples if not fit(e)]


# HaluEval items in file order: the cross-encoder guard (python -m verityrag.train guard-data) trains on the
# first 7,500, picks its threshold on the next 500 and never sees the last 2,000. The same
# positions here keep its row honest: fit = its validation items, report = its test items.
HALUEVAL_TRAIN_END = 7500
HALUEVAL_FIT = (7500, 8000)
HALUEVAL_REPORT = (8000, 10000)


def load_halueval(
    path: Path = HALUEVAL_PATH,
    train_items: int = 3000,
    report_items: int = 2000,
    fit_items: int = 500,
    seed: int = 0,
) -> tuple[list[PairExample], list[PairExample], list[PairExample]]:
    """(train, fit, report), two pairs per item (right and hallucinated answer).

    train: ``train_items`` seeded from the first 7,500 items (for tfidf-lr); fit: the first
    ``fit_items`` of items 7,500-7,999; report: the first ``report_items`` of items 8,000-9,999.
    """
    rows = [json.loads(line) for line in _open_text(path)]
    if len(rows) < HALUEVAL_REPORT[1]:
        raise InvalidInputError("data", f"{path} has {len(rows)} items; HaluEval QA has 10,000")
    limits = {
        "train_items": (train_items, HALUEVAL_TRAIN_END),
        "fit_items": (fit_items, 500),
        "report_items": (report_items, 2000),
    }
    for field, (value, most) in limits.items():
        if not 1 <= value <= most:
            raise InvalidInputError(field, f"needs 1..{most}, got {value}")

    def pairs(indices: Iterable[int]) -> list[PairExample]:
        out = []
        for i in indices:
            r = rows[i]
            premise = halueval_knowledge(r["knowledge"])  # as the cross-encoders were trained
            out.append(PairExample(premise, r["right_answer"], 0, str(i)))
            out.append(PairExample(premise, r["hallucinated_answer"], 1, str(i)))
        return out

    train = sorted(random.Random(seed).sample(range(HALUEVAL_TRAIN_END), train_items))
    fit = range(HALUEVAL_FIT[0], HALUEVAL_FIT[0] + fit_items)
    report = range(HALUEVAL_REPORT[0], HALUEVAL_REPORT[0] + report_items)
    return pairs(train), pairs(fit), pairs(report)


# ------------------------------------------------------------------ baselines

_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")
_NAME_RE = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-zA-Z'\-]+")


def lexical_features(premise: str, hypothesis: str) -> dict[str, float]:
    """Coverage figures of the hypothesis by the premise (content terms, numbers, names)."""
    analyze = DEFAULT_ANALYZER.analyze
    p_terms = set(analyze(premise))
    h_terms = analyze(hypothesis)
    coverage = sum(t in p_terms for t in set(h_terms)) / len(set(h_terms)) if h_terms else 1.0
    sentence_cov = []
    for sentence in split_sentences(hypothesis):
        terms = set(analyze(sentence))
        if terms:
            sentence_cov.append(sum(t in p_terms for t in terms) / len(terms))
    p_numbers = {n.replace(",", "") for n in _NUMBER_RE.findall(premise)}
    h_numbers = {n.replace(",", "") for n in _NUMBER_RE.findall(hypothesis)}
    numbers = len(h_numbers & p_numbers) / len(h_numbers) if h_numbers else 1.0
    p_lower = premise.lower()
    names = {m.lower() for m in _NAME_RE.findall(hypothesis)}
    name_share = sum(n in p_lower for n in names) / len(names) if names else 1.0
    return {
        "coverage": coverage,
        "min_sentence_coverage": min(sentence_cov, default=1.0),
        "numbers": numbers,
        "names": name_share,
        "novel_terms": float(len(set(h_terms) - p_terms)),
        "log_length": math.log1p(len(h_terms)),
    }


class LexicalEntityScorer:
    """P(supported) ~ coverage x numbers share x names share. No learning, ~1 ms per pair."""

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        out = []
        for premise, hypothesis in pairs:
            f = lexical_features(premise, hypothesis)
            out.append(f["coverage"] * f["numbers"] * f["names"])
        return out


def _novel_words(premise: str, hypothesis: str) -> str:
    p_terms = set(DEFAULT_ANALYZER.analyze(premise))
    return " ".join(t for t in DEFAULT_ANALYZER.analyze(hypothesis) if t not in p_terms)


_LEXICAL_COLUMNS = ("coverage", "min_sentence_coverage", "numbers", "names", "novel_terms", "log_length")


class TfidfLogisticScorer:
    """Logistic regression on TF-IDF of the hypothesis words absent from the premise + lexical figures."""

    def __init__(self, c: float = 1.0) -> None:
        self.c = c
        self.vectorizer_: Any = None
        self.scaler_: Any = None
        self.model_: Any = None

    @staticmethod
    def _raw(pairs: Sequence[tuple[str, str]]) -> tuple[list[str], np.ndarray]:
        novel, dense = [], []
        for premise, hypothesis in pairs:
            f = lexical_features(premise, hypothesis)
            dense.append([f[c] for c in _LEXICAL_COLUMNS])
            novel.append(_novel_words(premise, hypothesis))
        return novel, np.asarray(dense, dtype=float)

    def _fit_raw(self, novel: Sequence[str], dense: np.ndarray, y: np.ndarray) -> TfidfLogisticScorer:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.preprocessing import StandardScaler

        self.vectorizer_ = TfidfVectorizer(min_df=2, sublinear_tf=True, token_pattern=r"\S+")
        self.scaler_ = StandardScaler()
        x = self._stack(self.vectorizer_.fit_transform(novel), self.scaler_.fit_transform(dense))
        self.model_ = LogisticRegression(C=self.c, max_iter=2000, class_weight="balanced").fit(x, y)
        return self

    @staticmethod
    def _stack(sparse: Any, dense: np.ndarray) -> Any:
        from scipy import sparse as sp  # type: ignore[import-untyped]

        return sp.hstack([sparse, sp.csr_matrix(dense)]).tocsr()

    def _predict_raw(self, novel: Sequence[str], dense: np.ndarray) -> list[float]:
        x = self._stack(self.vectorizer_.transform(novel), self.scaler_.transform(dense))
        return [float(p) for p in self.model_.predict_proba(x)[:, 1]]

    def fit(self, pairs: Sequence[tuple[str, str]], supported: Sequence[int]) -> TfidfLogisticScorer:
        novel, dense = self._raw(pairs)
        return self._fit_raw(novel, dense, np.asarray(supported))

    def out_of_fold(
        self, pairs: Sequence[tuple[str, str]], supported: Sequence[int], folds: int = 5
    ) -> list[float]:
        """Cross-fitted P(supported) for the training pairs themselves (to fit a threshold honestly)."""
        from sklearn.model_selection import StratifiedKFold

        novel, dense = self._raw(pairs)
        y = np.asarray(supported)
        out = np.zeros(len(pairs))
        for train_idx, held_idx in StratifiedKFold(folds, shuffle=True, random_state=0).split(dense, y):
            part = TfidfLogisticScorer(self.c)._fit_raw(
                [novel[i] for i in train_idx], dense[train_idx], y[train_idx]
            )
            out[held_idx] = part._predict_raw([novel[i] for i in held_idx], dense[held_idx])
        return [float(v) for v in out]

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        if self.model_ is None:
            raise NotFittedError("TfidfLogisticScorer is not fitted: call fit(pairs, supported) first")
        novel, dense = self._raw(pairs)
        return self._predict_raw(novel, dense)


class GroundingScorer:
    """The project's GroundingChecker as a pair scorer: the response's weakest claim."""

    def __init__(self, checker: GroundingChecker | None = None) -> None:
        self.checker = checker or GroundingChecker(evidence_cache_size=0)

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        out = []
        for premise, hypothesis in pairs:
            chunk = Chunk("ev", "ev", "", premise, 0, 0, len(premise))
            cite = (Citation("ev", "ev", "", 0, len(premise)),)
            sentences = [CitedSentence(s, cite) for s in split_sentences(hypothesis)] or [
                CitedSentence(hypothesis, cite)
            ]
            out.append(self.checker.check(sentences, {"ev": chunk}).overall_score)
        return out


# ------------------------------------------------------------------ metrics


def _binary_metrics(flag: np.ndarray, y: np.ndarray) -> dict[str, float]:
    tp = int((flag & (y == 1)).sum())
    fp = int((flag & (y == 0)).sum())
    fn = int((~flag & (y == 1)).sum())
    tn = int((~flag & (y == 0)).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    specificity = tn / (tn + fp) if tn + fp else 0.0
    return {
        "f1": f1,
        "precision": precision,
        "recall": recall,
        "balanced_accuracy": (recall + specificity) / 2,
    }


def best_f1_threshold(detector: Sequence[float] | np.ndarray, unsupported: Sequence[int]) -> float:
    """The detector threshold (flag when score >= t) with the best F1 for the unsupported class.

    The cut is placed midway between the best score and the next lower one, so it does not
    sit on a fitting example.
    """
    d, y = np.asarray(detector, dtype=float), np.asarray(unsupported)
    values = np.unique(d)
    best_i, best_f1 = len(values) - 1, -1.0
    for i, t in enumerate(values):
        f1 = _binary_metrics(d >= t, y)["f1"]
        if f1 > best_f1:
            best_i, best_f1 = i, f1
    if best_i == 0:
        return float(values[0])
    return float((values[best_i] + values[best_i - 1]) / 2)


def evaluate_scores(
    fit_support: Sequence[float],
    fit_labels: Sequence[int],
    test_support: Sequence[float],
    test_labels: Sequence[int],
    test_groups: Sequence[str] | None = None,
) -> dict[str, float]:
    """Threshold from the fitting half, figures on the report half (positive = unsupported).

    With ``test_groups`` (the report half's sources or items) the AUROC also gets its 95%
    bootstrap interval over those groups (``auroc_low``, ``auroc_high``).
    """
    from sklearn.metrics import roc_auc_score

    fit_d = 1.0 - np.asarray(fit_support, dtype=float)
    test_d = 1.0 - np.asarray(test_support, dtype=float)
    y = np.asarray(test_labels)
    threshold = best_f1_threshold(fit_d, fit_labels)
    metrics = _binary_metrics(test_d >= threshold, y)
    interval: dict[str, float] = {}
    if test_groups is not None:
        low, high = auroc_interval(test_labels, test_d.tolist(), test_groups)
        interval = {"auroc_low": low, "auroc_high": high}
    return {
        "auroc": float(roc_auc_score(y, test_d)),
        **interval,
        **metrics,
        "threshold_p_supported": float(1.0 - threshold),
    }


# ------------------------------------------------------------------ verifiers


@dataclass
class ScoredRun:
    name: str
    fit: list[float]
    test: list[float]
    ms_per_pair: float
    note: str = ""
    #: Fitting-half examples whose scores may fit a threshold (None: all). A model trained on
    #: part of the fitting half must not pick its threshold on what it was trained on.
    fit_keep: list[bool] | None = None


def _timed(
    scorer: NLIScorer, pairs: Sequence[tuple[str, str]], label: str, progress: bool
) -> tuple[list[float], float]:
    """Scores in batches of 32 (a tqdm bar on long work) and the wall time per pair in ms."""
    from tqdm import tqdm

    out: list[float] = []
    t0 = time.perf_counter()
    batches = range(0, len(pairs), 32)
    for b in tqdm(batches, desc=label, disable=not progress, leave=False):
        out.extend(scorer.score_pairs(pairs[b : b + 32]))
    return out, (time.perf_counter() - t0) * 1000 / max(1, len(pairs))


def _recorded_name(folder: Path) -> str | None:
    """The ``name`` a model folder's metadata.json records (None when unreadable)."""
    try:
        name = json.loads((folder / "metadata.json").read_text(encoding="utf-8")).get("name")
    except (OSError, ValueError, AttributeError):
        return None
    return name if isinstance(name, str) else None


def guard_work_folders(root: Path = GUARD_WORK) -> tuple[list[str], list[str]]:
    """``onnx:<folder>`` names for cross-encoder folders under guard_work/, and notes on skipped ones."""
    names, notes = [], []
    if not root.is_dir():
        return [], [f"no {root.name}/ folder: no trained cross-encoder to evaluate"]
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if not (folder / "metadata.json").exists():
            continue
        # By the model's recorded name too: the answerability recipes write several folders
        # (answerability_mpnet6, ...), none of which scores support.
        kind = _recorded_name(folder)
        why = NOT_SUPPORT_MODELS.get(folder.name) or NOT_SUPPORT_MODELS.get(kind or "")
        if why:
            notes.append(f"{folder.name}: skipped ({why}, not support)")
            continue
        where = folder.relative_to(ROOT) if folder.is_relative_to(ROOT) else folder
        # The guard and the NLI model are served as in training: evidence trimmed per sentence.
        prefix = "guard" if folder.name == "guard" else "nli" if folder.name.startswith("nli") else "onnx"
        names.append(f"{prefix}:{where}")
    if not names:
        notes.append(f"no support cross-encoder (e.g. {root.name}/guard, {root.name}/nli) found")
    return names, notes


def build_scorer(name: str) -> NLIScorer:
    """A scorer by name (the learned ``tfidf-lr`` is built in :func:`score_dataset`)."""
    if name == "lexical":
        return LexicalEntityScorer()
    if name == "grounding":
        return GroundingScorer()
    if name.startswith("onnx:"):
        from verityrag.crossenc.scorer import OnnxCrossEncoder

        folder = Path(name[5:])
        return OnnxCrossEncoder(
            folder if folder.is_absolute() else ROOT / folder, what=f"cross-encoder {folder}"
        )
    if name.startswith("guard:"):
        from verityrag.checks.guard import LearnedGuard

        folder = Path(name[6:])
        return LearnedGuard(folder if folder.is_absolute() else ROOT / folder)
    if name.startswith("nli:"):
        from verityrag.checks.nli import LearnedNLI

        folder = Path(name[4:])
        return LearnedNLI(folder if folder.is_absolute() else ROOT / folder)
    if name.startswith("hf:"):
        from verityrag.verify.nli import HFSequenceClassificationScorer

        return HFSequenceClassificationScorer(name[3:])
    raise InvalidInputError(
        "verifier",
        f"unknown verifier {name!r}: use {', '.join(BASE_VERIFIERS)}, guard:<folder>, nli:<folder>, onnx:<folder>, hf:<model> or ens-<min|mean|max|lr>",
    )


def trained_sources(scorer: object) -> set[str]:
    """RAGTruth source ids a cross-encoder's metadata says it was trained on (else empty)."""
    onnx = getattr(scorer, "scorer", scorer)  # a LearnedPairCheck wraps an OnnxCrossEncoder
    meta = getattr(onnx, "metadata", None)
    data = getattr(meta, "data", None)
    return set(data.get(TRAINED_SOURCES_KEY, [])) if isinstance(data, dict) else set()


def score_dataset(
    names: Sequence[str],
    fit: Sequence[PairExample],
    test: Sequence[PairExample],
    train: Sequence[PairExample] | None,
    progress: bool,
    dataset: str,
) -> tuple[list[ScoredRun], list[str]]:
    """Score fitting and report halves with every named verifier; failures become notes."""
    runs, notes = [], []
    fit_pairs = [(e.premise, e.hypothesis) for e in fit]
    test_pairs = [(e.premise, e.hypothesis) for e in test]
    for name in names:
        scorer: NLIScorer
        try:
            if name == "tfidf-lr":
                source = train if train else fit
                lr = TfidfLogisticScorer().fit(
                    [(e.premise, e.hypothesis) for e in source], [1 - e.unsupported for e in source]
                )
                scorer = lr
                if train:
                    fit_scores, _ = _timed(scorer, fit_pairs, f"{dataset} {name} fit", progress)
                    note = f"trained on {len(train)} {dataset} train pairs"
                else:
                    fit_scores = lr.out_of_fold(fit_pairs, [1 - e.unsupported for e in fit])
                    note = "trained on the fitting half; threshold from 5-fold out-of-fold scores"
            else:
                scorer = build_scorer(name)
                fit_scores, _ = _timed(scorer, fit_pairs, f"{dataset} {name} fit", progress)
                note = ""
            test_scores, ms = _timed(scorer, test_pairs, f"{dataset} {name} report", progress)
        except VerityRAGError as exc:
            notes.append(f"{name}: skipped on {dataset} ({exc})")
            logger.warning("%s skipped on %s: %s", name, dataset, exc)
            continue
        keep = None
        trained = trained_sources(scorer) if dataset == "ragtruth" else set()
        if trained:
            keep = [e.group not in trained for e in fit]
            note = (
                f"trained on {len(fit) - sum(keep)} fitting-half responses ({len(trained)} sources); threshold "
                f"fitted on the other {sum(keep)}; not in the ensembles"
            )
        runs.append(ScoredRun(name, fit_scores, test_scores, ms, note, keep))
    return runs, notes


def ensemble_runs(
    runs: Sequence[ScoredRun], fit_labels: Sequence[int], prefix: str = "ens"
) -> list[ScoredRun]:
    """min / mean / max of the members' isotonic-calibrated scores (maps fitted on the fitting half)."""
    if len(runs) < 2:
        return []
    supported = [1 - y for y in fit_labels]
    calibrated = []
    for run in runs:
        cal = IsotonicCalibrator().fit(run.fit, supported)
        calibrated.append((cal.transform(run.fit), cal.transform(run.test)))
    members = "+".join(r.name for r in runs)
    out = []
    for how in AGGREGATIONS:
        fit = [aggregate([c[0][i] for c in calibrated], how) for i in range(len(supported))]  # type: ignore[arg-type]
        test = [aggregate([c[1][i] for c in calibrated], how) for i in range(len(runs[0].test))]  # type: ignore[arg-type]
        out.append(
            ScoredRun(
                f"{prefix}-{how}",
                fit,
                test,
                sum(r.ms_per_pair for r in runs),
                f"isotonic-calibrated {members}",
            )
        )
    return out


def stacked_run(runs: Sequence[ScoredRun], fit_labels: Sequence[int]) -> ScoredRun | None:
    """``ens-lr``: a logistic regression over every member's scores, fitted on the fitting half.

    Its fitting-half scores are 5-fold out-of-fold, so the threshold chosen on them is
    not chosen on scores the model was fitted to.
    """
    from verityrag.verify.ensemble import StackedScorer

    if len(runs) < 2:
        return None
    supported = [1 - y for y in fit_labels]
    stack = StackedScorer([_Named(r.name) for r in runs]).fit_scores([r.fit for r in runs], supported)
    weights = ", ".join(f"{k} {v:+.2f}" for k, v in stack.coefficients().items())
    return ScoredRun(
        "ens-lr",
        stack.out_of_fold([r.fit for r in runs], supported),
        stack.combine([r.test for r in runs]),
        sum(r.ms_per_pair for r in runs),
        f"logistic regression on the logit scores, fitted on the fitting half (threshold from 5-fold "
        f"out-of-fold scores); weights: {weights}",
    )


@dataclass(frozen=True)
class _Named:
    """A member of a stack fitted from precomputed scores: only its name is needed."""

    name: str

    def __repr__(self) -> str:
        return self.name

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        raise NotImplementedError("scores of this member were precomputed")


def cross_fitted_run(runs: Sequence[ScoredRun]) -> ScoredRun | None:
    """``folds``: models each trained on part of the fitting half, used as one cross-fitted verifier.

    A fitting-half example is scored by the mean of the members that were *not* trained on
    it (its out-of-fold score), a report-half example by the mean of all members. When the
    members' held-out parts cover the whole fitting half, its threshold is fitted on every
    fitting-half example and the run can join the ensembles like any untrained verifier.
    """
    adapted = [r for r in runs if r.fit_keep is not None]
    if len(adapted) < 2:
        return None
    fit, keep = [], []
    for i in range(len(adapted[0].fit)):
        held_out = [r.fit[i] for r in adapted if r.fit_keep is not None and r.fit_keep[i]]
        keep.append(bool(held_out))
        fit.append(float(np.mean(held_out)) if held_out else 0.0)
    test = np.mean([r.test for r in adapted], axis=0).tolist()
    names = "+".join(r.name.rsplit("/", 1)[-1] for r in adapted)
    return ScoredRun(
        f"folds:{names}",
        fit,
        test,
        sum(r.ms_per_pair for r in adapted),
        f"mean of {len(adapted)} models trained on parts of the fitting half; each fitting-half response "
        f"scored by the members not trained on it ({sum(keep)} of {len(keep)} covered), the report half by all",
        None if all(keep) else keep,
    )


def top_members(runs: Sequence[ScoredRun], fit_labels: Sequence[int], k: int = 2) -> list[ScoredRun]:
    """The ``k`` runs with the best AUROC on the *fitting* half (never the report half)."""
    from sklearn.metrics import roc_auc_score

    y = [1 - v for v in fit_labels]
    return sorted(runs, key=lambda r: -float(roc_auc_score(y, r.fit)))[:k]


def _dataset_report(
    label: str,
    names: Sequence[str],
    fit: Sequence[PairExample],
    test: Sequence[PairExample],
    train: Sequence[PairExample] | None,
    progress: bool,
    with_ensembles: bool,
) -> dict[str, Any]:
    runs, notes = score_dataset(names, fit, test, train, progress, label)
    folds = cross_fitted_run(runs)
    if folds is not None:
        runs.append(folds)
    fit_labels = [e.unsupported for e in fit]
    test_labels = [e.unsupported for e in test]
    if with_ensembles:
        members = [r for r in runs if r.fit_keep is None]  # in-sample fitting scores would mislead
        ensembles = ensemble_runs(members, fit_labels)
        if len(members) > 2:  # also the two members that are best on the fitting half
            ensembles += ensemble_runs(top_members(members, fit_labels), fit_labels, prefix="ens2")
        stacked = stacked_run(members, fit_labels)
        if stacked is not None:
            ensembles.append(stacked)
        runs = runs + ensembles
    rows = []
    for run in runs:
        keep = run.fit_keep or [True] * len(fit_labels)
        figures = evaluate_scores(
            [s for s, k in zip(run.fit, keep, strict=True) if k],
            [y for y, k in zip(fit_labels, keep, strict=True) if k],
            run.test,
            test_labels,
            [e.group for e in test],
        )
        rows.append({"verifier": run.name, **figures, "ms_per_pair": run.ms_per_pair, "note": run.note})
        logger.info(
            "%s %s: AUROC %.3f F1 %.3f (%.2f ms/pair)",
            label,
            run.name,
            figures["auroc"],
            figures["f1"],
            run.ms_per_pair,
        )
    return {
        "fit": {"pairs": len(fit), "unsupported": sum(fit_labels)},
        "report": {"pairs": len(test), "unsupported": sum(test_labels)},
        "rows": rows,
        "notes": notes,
    }


def run_ragtruth(
    verifiers: Sequence[str] | None = None,
    halueval_report_items: int = 2000,
    progress: bool = True,
) -> dict[str, Any]:
    """The full report (RAGTruth QA, then HaluEval QA) as a JSON-able dict."""
    requested = list(verifiers or [])
    notes: list[str] = []
    if not requested:
        onnx, guard_notes = guard_work_folders()
        notes += guard_notes
        requested = [*BASE_VERIFIERS, *onnx, *ENSEMBLES]
    base = [n for n in requested if not n.startswith("ens-")]
    with_ensembles = any(n.startswith("ens-") for n in requested)
    for n in requested:
        if n.startswith("ens-") and n not in ENSEMBLES:
            raise InvalidInputError("verifier", f"unknown ensemble {n!r}: use {', '.join(ENSEMBLES)}")
    if verifiers:  # named by the user, so each must build and load: fail before the scoring, not skip
        for n in base:
            if n not in BASE_VERIFIERS:
                build_scorer(n).score_pairs([("A sentence.", "A sentence.")])
    rt_fit, rt_test = split_ragtruth(load_ragtruth())
    hv_train, hv_fit, hv_test = load_halueval(report_items=halueval_report_items)
    t0 = time.perf_counter()
    report: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {_cpu_count()} CPU cores, no GPU",
        "python": platform.python_version(),
        "protocol": (
            "premise = the evidence only (RAGTruth passages, HaluEval knowledge; the question is not "
            "given), hypothesis = the response / answer; threshold = F1-best for flagging unsupported answers on the fitting half, figures on the report half; "
            "positive class = unsupported; latency = scoring wall time on the report half / pairs"
        ),
        "ragtruth": _dataset_report("ragtruth", base, rt_fit, rt_test, None, progress, with_ensembles),
        "halueval": _dataset_report("halueval", base, hv_fit, hv_test, hv_train, progress, with_ensembles),
        "notes": notes,
        "sources": {
            "ragtruth": f"<datasets>/{datasets.RAGTRUTH_QA} (829 responses, RAGTruth QA test, QC-NLI copy)",
            "halueval": f"<datasets>/{datasets.HALUEVAL_QA} (HaluEval QA, file order: fit = items 7,500-7,999, "
            f"report = {len(hv_test) // 2} items from 8,000 on (never trained on by the guard cross-encoder); "
            f"tfidf-lr trained on {len(hv_train) // 2} seeded items of the first 7,500)",
        },
    }
    report["verifiers"] = requested
    report["elapsed_s"] = round(time.perf_counter() - t0, 1)
    if with_ensembles:
        report["notes"].append(
            "ensembles aggregate isotonic-calibrated member scores (min/mean/max) or stack them by "
            "logistic regression (lr); an ensemble's latency is the sum of its members'"
        )
        keep = set(requested)
        for dataset in ("ragtruth", "halueval"):
            rows = report[dataset]["rows"]
            report[dataset]["rows"] = [
                r
                for r in rows
                if not r["verifier"].startswith("ens") or f"ens-{r['verifier'].rsplit('-', 1)[1]}" in keep
            ]
    return report


def _cpu_count() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def render_table(report: dict[str, Any]) -> str:
    """The README table: one row per verifier, RAGTruth then HaluEval figures."""
    halu = {r["verifier"]: r for r in report["halueval"]["rows"]}
    lines = [
        "| verifier | RAGTruth AUROC | F1 | precision | recall | bal. acc. | ms / pair | HaluEval AUROC | F1 | ms / pair |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in report["ragtruth"]["rows"]:
        h = halu.get(row["verifier"])
        hv = f"{h['auroc']:.3f} | {h['f1']:.3f} | {h['ms_per_pair']:.2f}" if h else "n/a | n/a | n/a"
        auroc = f"{row['auroc']:.3f}" + (
            f" ({row['auroc_low']:.3f}-{row['auroc_high']:.3f})" if "auroc_low" in row else ""
        )
        lines.append(
            f"| `{row['verifier']}` | {auroc} | {row['f1']:.3f} | {row['precision']:.3f} | {row['recall']:.3f} "
            f"| {row['balanced_accuracy']:.3f} | {row['ms_per_pair']:.2f} | {hv} |"
        )
    rt, hv_ = report["ragtruth"], report["halueval"]
    lines += [
        "",
        f"RAGTruth QA: threshold fitted on {rt['fit']['pairs']} responses ({rt['fit']['unsupported']} unsupported), "
        f"reported on the other {rt['report']['pairs']} ({rt['report']['unsupported']} unsupported), split by source. "
        f"HaluEval QA: fitted on {hv_['fit']['pairs']} answers, reported on {hv_['report']['pairs']} (half unsupported). "
        f"Positive class = unsupported. Measured {report['date']} on {report['machine']}."
        + (
            " RAGTruth AUROC brackets: 95% bootstrap interval, resampling the report half's sources."
            if any("auroc_low" in r for r in rt["rows"])
            else ""
        ),
    ]
    lines += [f"- {n}" for n in dict.fromkeys(report["notes"] + table_notes(report))]
    return "\n".join(lines)


def table_notes(report: dict[str, Any]) -> list[str]:
    """Each dataset's own notes, and each verifier's note. A row shows both datasets' figures,
    and a same-named run can be built differently on each (tfidf-lr is trained on HaluEval's
    train pairs there; the ensembles have other members): such notes name their dataset."""
    labels = {"ragtruth": "RAGTruth", "halueval": "HaluEval"}
    notes = [f"{labels[d]}: {n}" for d in labels for n in report[d].get("notes", [])]
    halu = {r["verifier"]: r.get("note", "") for r in report["halueval"]["rows"]}
    for row in report["ragtruth"]["rows"]:
        name, rt_note, hv_note = row["verifier"], row.get("note", ""), halu.get(row["verifier"], "")
        if rt_note and (rt_note == hv_note or row["verifier"] not in halu):
            notes.append(f"`{name}`: {rt_note}")
        elif rt_note or hv_note:
            both = [f"{labels[d]}: {n}" for d, n in (("ragtruth", rt_note), ("halueval", hv_note)) if n]
            notes.append(f"`{name}`: " + "; ".join(both))
    return notes


def run_cli(
    verifiers: Sequence[str] | None,
    out: Path = DEFAULT_OUT,
    progress: bool = True,
    halueval_report_items: int = 2000,
) -> int:
    """``python -m verityrag.eval --ragtruth``: write the JSON report and print the table."""
    import sys

    try:
        report = run_ragtruth(verifiers, halueval_report_items=halueval_report_items, progress=progress)
    except VerityRAGError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(render_table(report))
    print(f"written: {out}")
    return 0


def _split_names(values: Iterable[str] | None) -> list[str] | None:
    if not values:
        return None
    return [n.strip() for v in values for n in v.split(",") if n.strip()]


def main_from_args(args: Any) -> int:
    """Entry from ``verityrag.eval.__main__`` (``--ragtruth``, ``--verifier``, ``--no-progress``)."""
    out = args.out if str(args.out) != "eval_report.json" else DEFAULT_OUT
    return run_cli(_split_names(args.verifier), out, progress=not args.no_progress)
