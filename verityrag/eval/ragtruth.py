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
- ``onnx:<folder>``: any other cross-encoder folder of ``verityrag.models`` (every
  ``guard_work/*`` folder with a metadata.json except the question-side ones in
  ``NOT_SUPPORT_MODELS`` is tried by default);
- ``hf:<model>``: any HF sequence-classification NLI model (:mod:`verityrag.verify.nli_verifier`); a
  ``guard_work/*`` folder holding one (``config.json`` of a ``*ForSequenceClassification`` whose
  labels name a supported class, e.g. python -m verityrag.train nli3) is tried by default;
- ``lettuce:<model>``, ``hhem:<model>``, ``minicheck:<model>``: the detectors users bring
  (:mod:`verityrag.verify.detectors`): a token-classification hallucination detector, a
  custom-code pair model (needs ``VERIFIER_TRUST_REMOTE_CODE=1``), a seq2seq support checker;
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

import json
import logging
import platform
import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from verityrag import datasets
from verityrag.errors import InvalidInputError, VerityRAGError
from verityrag.eval.ragtruth_data import (
    HALUEVAL_FIT,
    HALUEVAL_PATH,
    HALUEVAL_REPORT,
    HALUEVAL_TRAIN_END,
    RAGTRUTH_PATH,
    PairExample,
    load_halueval,
    load_ragtruth,
    read_ragtruth_rows,
    split_ragtruth,
)
from verityrag.eval.ragtruth_ensembles import (
    ScoredRun,
    cross_fitted_run,
    ensemble_runs,
    stacked_run,
    top_members,
)
from verityrag.eval.ragtruth_metrics import best_f1_threshold, evaluate_scores
from verityrag.eval.ragtruth_scorers import (
    GroundingScorer,
    LexicalEntityScorer,
    TfidfLogisticScorer,
    lexical_features,
)
from verityrag.eval.ragtruth_table import render_table, table_notes
from verityrag.verify.ensemble import AGGREGATIONS
from verityrag.verify.protocols import NLIScorer

logger = logging.getLogger(__name__)

ROOT = datasets.REPO_ROOT
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

__all__ = [
    "BASE_VERIFIERS",
    "DEFAULT_OUT",
    "ENSEMBLES",
    "GUARD_WORK",
    "HALUEVAL_FIT",
    "HALUEVAL_PATH",
    "HALUEVAL_REPORT",
    "HALUEVAL_TRAIN_END",
    "NOT_SUPPORT_MODELS",
    "RAGTRUTH_PATH",
    "TRAINED_SOURCES_KEY",
    "GroundingScorer",
    "LexicalEntityScorer",
    "PairExample",
    "ScoredRun",
    "TfidfLogisticScorer",
    "best_f1_threshold",
    "build_scorer",
    "cross_fitted_run",
    "ensemble_runs",
    "evaluate_scores",
    "guard_work_folders",
    "lexical_features",
    "load_halueval",
    "load_ragtruth",
    "main_from_args",
    "read_ragtruth_rows",
    "render_table",
    "run_cli",
    "run_ragtruth",
    "score_dataset",
    "split_ragtruth",
    "stacked_run",
    "table_notes",
    "top_members",
    "trained_sources",
]


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
            if _hf_support_model(folder):
                where = folder.relative_to(ROOT) if folder.is_relative_to(ROOT) else folder
                names.append(f"hf:{where}")
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


def _hf_support_model(folder: Path) -> bool:
    """Whether ``folder`` holds a HF sequence classifier whose labels name a supported class (not a
    causal LM cache such as guard_work/qwen, nor a head of other labels)."""
    from verityrag.verify.nli_verifier import supported_class

    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        if not any(str(a).endswith("ForSequenceClassification") for a in config.get("architectures", [])):
            return False
        labels = config.get("id2label") or {}
        return supported_class(labels, len(labels) or 2) is not None or len(labels) == 1
    except (OSError, ValueError, AttributeError, TypeError):
        return False


#: The detector adapters by verifier-name prefix: their class in verityrag.verify.detectors.
DETECTOR_PREFIXES = {
    "lettuce:": "TokenHallucinationDetector",
    "hhem:": "RemoteCodePairScorer",
    "minicheck:": "Seq2SeqSupportScorer",
}


def build_scorer(name: str) -> NLIScorer:
    """A scorer by name (the learned ``tfidf-lr`` is built in :func:`score_dataset`)."""
    if name == "lexical":
        return LexicalEntityScorer()
    if name == "grounding":
        return GroundingScorer()
    if name.startswith("onnx:"):
        from verityrag.models.scorer import OnnxCrossEncoder

        folder = Path(name[5:])
        return OnnxCrossEncoder(
            folder if folder.is_absolute() else ROOT / folder, what=f"cross-encoder {folder}"
        )
    if name.startswith("guard:"):
        from verityrag.checks.guard import LearnedGuard

        folder = Path(name[6:])
        return LearnedGuard(folder if folder.is_absolute() else ROOT / folder)
    if name.startswith("nli:"):
        from verityrag.verify.learned_nli import LearnedNLI

        folder = Path(name[4:])
        return LearnedNLI(folder if folder.is_absolute() else ROOT / folder)
    if name.startswith("hf:"):
        from verityrag.verify.nli_verifier import HFSequenceClassificationScorer

        return HFSequenceClassificationScorer(name[3:])
    for prefix, cls in DETECTOR_PREFIXES.items():
        if name.startswith(prefix):
            from verityrag.verify import detectors

            scorer: NLIScorer = getattr(detectors, cls)(name[len(prefix) :])
            return scorer
    raise InvalidInputError(
        "verifier",
        f"unknown verifier {name!r}: use {', '.join(BASE_VERIFIERS)}, guard:<folder>, nli:<folder>, onnx:<folder>, "
        "hf:<model>, lettuce:<model>, hhem:<model>, minicheck:<model> or ens-<min|mean|max|lr>",
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
