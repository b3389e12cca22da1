"""Recipe: the learned sentence selector, written to verityrag/resources.

Training data: answerable SQuAD 2.0 questions from articles disjoint from the
eval corpus (the 11-article train prefix and the ``split_a`` dev articles), as
built into data/built/training/squad2_selector_train.jsonl.gz (git-ignored). Every paragraph is one
document of an in-memory pipeline (default HashingEmbedder); each question is
retrieved with ``pipeline.retriever.search(question, 5)`` and the sentences of
the top 3 hits are its candidates, labelled 1 when they contain a gold answer.
Questions with no positive candidate are dropped from training.

Reported: grouped-by-article cross-validation on the training articles (each
fold holds out ~20% of the articles) and, for information only, the eval's
calibration split (answerable questions over data/built/corpus.jsonl). Model vs the
baseline coverage selector (CoverageRanker), top-1 accuracy.

    python -m verityrag.train selector                 # train, report, write resources
    python -m verityrag.train selector --no-write      # report only
    python -m verityrag.train selector --build-data    # (re)build the training file from the datasets root
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import json
import platform
import random
import re
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from verityrag import (
    Settings,
    VerityRAGPipeline,
    datasets,
)
from verityrag.eval.metrics import contains_gold
from verityrag.generation.extractive import CoverageRanker
from verityrag.generation.sentence_selector import (
    FEATURE_NAMES,
    N_FEATURES,
    SentenceSelector,
)
from verityrag.pipeline import IN_MEMORY
from verityrag.serve.bundled_corpus import load_corpus, load_questions
from verityrag.train._common import MANIFEST, ROOT, command, recipe_parser, repo_relative
from verityrag.train.model_build import add_squad_arguments, read_json
from verityrag.types import Document

# Built from the SQuAD 2.0 files under the datasets root when missing (git-ignored, as all derived data).
TRAIN_FILE = ROOT / "data" / "built" / "training" / "squad2_selector_train.jsonl.gz"
RESOURCES = ROOT / "verityrag" / "resources"
EVAL_CORPUS = ROOT / "data" / "built" / "corpus.jsonl"
CALIBRATION = ROOT / "data" / "built" / "questions" / "calibration.jsonl"
RETRIEVE_K = 5
TOP_HITS = 3


# ------------------------------------------------------------------ data file


def _slug(title: str) -> str:
    folded = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", folded.lower()).strip("-")


def build_data(train_path: Path, dev_path: Path, split_path: Path, out: Path) -> None:
    """Write one JSON line per paragraph (all paragraphs, answerable questions only), gzipped reproducibly."""
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    forbidden = set(manifest["ingested_titles"]) | set(manifest["reserved_articles"])
    split_a = set(read_json(split_path)["split_a_titles"])
    sources = [
        ("squad2-train", train_path, None),
        ("squad2-dev", dev_path, split_a),
    ]
    lines: list[str] = []
    for source, path, keep in sources:
        data = read_json(path)["data"]
        for article in data:
            title = article["title"]
            if keep is not None and title not in keep:
                continue
            if title in forbidden:
                raise SystemExit(f"{title!r} is an eval article; refusing to train on it")
            for index, paragraph in enumerate(article["paragraphs"]):
                qas = []
                for qa in paragraph["qas"]:
                    if qa.get("is_impossible") or not qa["answers"]:
                        continue
                    answers = list(dict.fromkeys(a["text"] for a in qa["answers"]))
                    qas.append({"id": qa["id"], "question": qa["question"].strip(), "answers": answers})
                record = {
                    "source": source,
                    "article": title,
                    "paragraph": index,
                    "doc_id": f"{source}-{_slug(title)}-{index:03d}",
                    "context": paragraph["context"],
                    "qas": qas,
                }
                lines.append(json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":")))
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = ("\n".join(lines) + "\n").encode("utf-8")
    with out.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as fh:
        fh.write(payload)
    n_q = sum(len(json.loads(line)["qas"]) for line in lines)
    print(f"wrote {out} ({out.stat().st_size:,} bytes): {len(lines)} paragraphs, {n_q} answerable questions")


@dataclass(frozen=True)
class Question:
    qid: str
    question: str
    answers: tuple[str, ...]
    article: str


def load_training(path: Path) -> tuple[list[Document], list[Question]]:
    if not path.exists():
        raise SystemExit(f"{path} is missing: build it with {command('selector')} --build-data")
    docs: list[Document] = []
    questions: list[Question] = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            docs.append(Document(rec["doc_id"], rec["article"].replace("_", " "), rec["context"]))
            questions.extend(
                Question(q["id"], q["question"], tuple(q["answers"]), rec["article"]) for q in rec["qas"]
            )
    return docs, questions


# ------------------------------------------------------------------ candidates


@dataclass
class Candidates:
    """Feature rows of every question, grouped; questions without a positive are kept for accuracy."""

    matrices: list[npt.NDArray[np.float32]] = field(default_factory=list)
    labels: list[npt.NDArray[np.float64]] = field(default_factory=list)
    articles: list[str] = field(default_factory=list)
    baseline_correct: list[bool] = field(default_factory=list)

    def add(self, matrix: npt.NDArray[np.float32], labels: list[bool], article: str, baseline: bool) -> None:
        self.matrices.append(matrix)
        self.labels.append(np.asarray(labels, dtype=np.float64))
        self.articles.append(article)
        self.baseline_correct.append(baseline)

    def __len__(self) -> int:
        return len(self.matrices)

    def has_positive(self, i: int) -> bool:
        return bool(self.labels[i].any())

    def stack(self, idx: Sequence[int]) -> tuple[Any, Any, Any]:
        idx = [i for i in idx if self.has_positive(i)]
        features = np.concatenate([self.matrices[i] for i in idx]).astype(np.float32)
        labels = np.concatenate([self.labels[i] for i in idx])
        return features, labels, np.array([len(self.matrices[i]) for i in idx])


def collect(
    pipeline: VerityRAGPipeline, questions: Sequence[tuple[str, Sequence[str], str]], desc: str
) -> tuple[Candidates, float]:
    from tqdm.auto import tqdm

    featurizer = SentenceSelector(max_hits=TOP_HITS, analyzer=pipeline.analyzer)
    baseline = CoverageRanker(pipeline.analyzer, max_hits=TOP_HITS)
    snap = pipeline.index.snapshot()

    def idf(term: str) -> float:
        return pipeline.index.idf(term, snap)

    out = Candidates()
    featurize_s = 0.0
    for question, answers, article in tqdm(questions, desc=desc, unit="q"):
        hits = pipeline.retriever.search(question, RETRIEVE_K, snap)
        t0 = time.perf_counter()
        feats = featurizer.featurize(question, hits, idf)
        featurize_s += time.perf_counter() - t0
        labels = [contains_gold(s.text, answers) for s in feats.sentences]
        cands = baseline.candidates(question, hits, idf)
        base_ok = bool(cands) and contains_gold(cands[0].sentence.text, answers)
        out.add(feats.matrix, labels, article, base_ok)
    return out, featurize_s / max(len(questions), 1)


def _round(metrics: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in metrics.items()}


def top1(selector: SentenceSelector, cands: Candidates, idx: Sequence[int]) -> dict[str, float]:
    """Top-1 accuracy of the model and the baseline over ``idx``: all questions, and those with a positive."""
    model_ok = []
    for i in idx:
        scores = selector.score(cands.matrices[i])
        model_ok.append(bool(len(scores)) and bool(cands.labels[i][int(np.argmax(scores))]))
    base_ok = [cands.baseline_correct[i] for i in idx]
    pos = [j for j, i in enumerate(idx) if cands.has_positive(i)]
    n = max(len(idx), 1)
    return {
        "questions": len(idx),
        "with_positive": len(pos),
        "oracle": len(pos) / n,
        "model_top1": sum(model_ok) / n,
        "baseline_top1": sum(base_ok) / n,
        "model_top1_given_positive": sum(model_ok[j] for j in pos) / max(len(pos), 1),
        "baseline_top1_given_positive": sum(base_ok[j] for j in pos) / max(len(pos), 1),
    }


def grouped_folds(articles: Sequence[str], n_folds: int, seed: int) -> list[list[int]]:
    """Question indices per fold; each fold holds out a disjoint ~1/n_folds of the articles."""
    names = sorted(set(articles))
    random.Random(seed).shuffle(names)
    fold_of = {name: k % n_folds for k, name in enumerate(names)}
    folds: list[list[int]] = [[] for _ in range(n_folds)]
    for i, article in enumerate(articles):
        folds[fold_of[article]].append(i)
    return folds


def print_metrics(name: str, m: dict[str, float]) -> None:
    print(
        f"{name:<28} n={int(m['questions']):>5}  oracle={m['oracle']:.3f}  "
        f"model={m['model_top1']:.3f}  baseline={m['baseline_top1']:.3f}  "
        f"(given a positive: model={m['model_top1_given_positive']:.3f} "
        f"baseline={m['baseline_top1_given_positive']:.3f})"
    )


def latency_us(
    selector: SentenceSelector, pipeline: VerityRAGPipeline, questions: Sequence[str]
) -> dict[str, float]:
    snap = pipeline.index.snapshot()

    def idf(term: str) -> float:
        return pipeline.index.idf(term, snap)

    hits = [pipeline.retriever.search(q, RETRIEVE_K, snap) for q in questions]
    for q, h in zip(questions, hits, strict=True):  # warm caches (stemmer, idf lookups)
        selector.select(q, h, idf)
    select_t, predict_t = [], []
    for q, h in zip(questions, hits, strict=True):
        t0 = time.perf_counter()
        selector.select(q, h, idf)
        select_t.append(time.perf_counter() - t0)
        matrix = selector.featurize(q, h, idf).matrix
        t0 = time.perf_counter()
        selector.score(matrix)
        predict_t.append(time.perf_counter() - t0)
    return {
        "select_p50_us": float(np.percentile(select_t, 50) * 1e6),
        "select_p95_us": float(np.percentile(select_t, 95) * 1e6),
        "predict_p50_us": float(np.percentile(predict_t, 50) * 1e6),
        "predict_p95_us": float(np.percentile(predict_t, 95) * 1e6),
    }


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: Sequence[str] | None = None) -> int:
    parser = recipe_parser("selector", __doc__)
    parser.add_argument("--seed", type=int, default=0, help="seed for the folds and LightGBM (default 0)")
    parser.add_argument("--data", type=Path, default=TRAIN_FILE, help="training file (jsonl.gz)")
    parser.add_argument("--out-dir", type=Path, default=RESOURCES, help="where to write the model")
    parser.add_argument(
        "--folds", type=int, default=5, help="article-grouped CV folds (default 5, ~20%% held out)"
    )
    parser.add_argument("--objective", choices=["lambdarank", "binary"], default="lambdarank")
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--leaves", type=int, default=15)
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument(
        "--no-calibration", action="store_true", help="skip the eval calibration-split report"
    )
    parser.add_argument("--no-write", action="store_true", help="report only; do not write the model")
    parser.add_argument(
        "--build-data",
        action="store_true",
        help="rebuild --data from the SQuAD 2.0 files under the datasets root and exit (built when missing anyway)",
    )
    add_squad_arguments(parser)
    args = parser.parse_args(argv)

    if args.build_data or not args.data.exists():
        build_data(
            args.squad_train or datasets.dataset_file(datasets.SQUAD_V2_TRAIN_PREFIX),
            args.squad_dev or datasets.dataset_file(datasets.SQUAD_V2_DEV),
            args.split or datasets.dataset_file(datasets.SQUAD_V2_SPLIT),
            args.data,
        )
        if args.build_data:
            return 0

    started = time.perf_counter()
    docs, questions = load_training(args.data)
    pipeline = VerityRAGPipeline(
        settings=Settings(), data_dir=IN_MEMORY
    )  # defaults, whatever VERITYRAG_* says
    pipeline.ingest_documents(docs, progress=True)
    print(
        f"training corpus: {len(docs)} paragraphs, {len(pipeline.index)} chunks, {len(questions)} questions"
    )
    cands, featurize_mean_s = collect(
        pipeline, [(q.question, q.answers, q.article) for q in questions], "candidates"
    )

    def make() -> SentenceSelector:
        return SentenceSelector(
            objective=args.objective,
            n_estimators=args.trees,
            num_leaves=args.leaves,
            learning_rate=args.learning_rate,
            max_hits=TOP_HITS,
            random_state=args.seed,
        )

    # Article-grouped cross-validation: every question is scored by a model that never saw its article.
    folds = grouped_folds(cands.articles, args.folds, args.seed)
    cv = cross_validate(make, cands, folds)
    print_metrics("held-out articles (pooled)", cv)

    features, labels, group = cands.stack(range(len(cands)))
    train_sizes = {
        "articles": len(set(cands.articles)),
        "paragraphs": len(docs),
        "chunks": len(pipeline.index),
        "questions": len(questions),
        "questions_used": len(group),
        "questions_dropped_no_positive": len(questions) - len(group),
        "rows": len(features),
        "positive_rows": int(labels.sum()),
    }
    final = make().fit(features, labels, group)
    train_time = time.perf_counter() - started

    calibration: dict[str, float] | None = None
    latency: dict[str, float] = {}
    if not args.no_calibration:
        eval_pipeline = VerityRAGPipeline(settings=Settings(), data_dir=IN_MEMORY)
        eval_pipeline.ingest_documents(load_corpus(EVAL_CORPUS), progress=False)
        cal = [q for q in load_questions(CALIBRATION) if q.answerable]
        cal_cands, _ = collect(eval_pipeline, [(q.question, q.answers, "eval") for q in cal], "calibration")
        calibration = top1(final, cal_cands, range(len(cal_cands)))
        print_metrics("eval calibration (report)", calibration)
        latency = latency_us(final, eval_pipeline, [q.question for q in cal[:100]])
        print(
            f"select() for {TOP_HITS} hits: p50 {latency['select_p50_us']:.0f} us, "
            f"p95 {latency['select_p95_us']:.0f} us; of which predict p50 {latency['predict_p50_us']:.0f} us"
        )

    import lightgbm

    metadata = {
        "data": {
            "file": str(repo_relative(args.data)),
            "sha256": _sha256(args.data),
            "sources": [
                "SQuAD 2.0 train-v2.0.json, first 11 articles (answerable questions)",
                "SQuAD 2.0 dev-v2.0 (reconstructed), split_a_titles of answerability_split.json (answerable)",
            ],
            "licence": "CC BY-SA 4.0",
            "disjoint_from": "data/corpus_manifest.json ingested_titles and reserved_articles",
        },
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "sizes": train_sizes,
        "retrieval": f"VerityRAGPipeline() default HashingEmbedder, retriever.search(question, {RETRIEVE_K}), "
        f"sentences of the top {TOP_HITS} hits",
        "label": "contains_gold(sentence, gold answers)",
        "seed": args.seed,
        "metrics": {
            "cv_folds": args.folds,
            "held_out_articles_top1": _round(cv),
            "eval_calibration_answerable_top1_report_only": _round(calibration) if calibration else None,
            "latency": _round(latency),
        },
        "featurize_mean_ms_training": round(featurize_mean_s * 1000, 3),
        "train_seconds": round(train_time, 1),
        "lightgbm": lightgbm.__version__,
        "python": platform.python_version(),
        "command": command("selector") + (f" --seed {args.seed}" if args.seed else ""),
    }
    final.metadata_ = metadata
    print(f"features: {N_FEATURES}; training (incl. retrieval and CV) took {train_time:.1f}s")
    _print_importance(final)
    if not args.no_write:
        out = final.save(args.out_dir)
        print(f"wrote {out / 'sentence_selector.lgb'} and {out / 'sentence_selector.json'}")
    return 0


def cross_validate(make: Any, cands: Candidates, folds: list[list[int]]) -> dict[str, float]:
    """Score every question with a model trained without its article; per-fold and pooled top-1."""
    model_ok = base_ok = 0
    n_all = n_pos = 0
    model_pos = base_pos = 0.0
    for k, held in enumerate(folds):
        held_set = set(held)
        model = make().fit(*cands.stack([i for i in range(len(cands)) if i not in held_set]))
        m = top1(model, cands, held)
        print_metrics(f"fold {k} ({len({cands.articles[i] for i in held})} articles)", m)
        n_all += int(m["questions"])
        n_pos += int(m["with_positive"])
        model_ok += round(m["model_top1"] * m["questions"])
        base_ok += round(m["baseline_top1"] * m["questions"])
        model_pos += m["model_top1_given_positive"] * m["with_positive"]
        base_pos += m["baseline_top1_given_positive"] * m["with_positive"]
    return {
        "questions": n_all,
        "with_positive": n_pos,
        "oracle": n_pos / max(n_all, 1),
        "model_top1": model_ok / max(n_all, 1),
        "baseline_top1": base_ok / max(n_all, 1),
        "model_top1_given_positive": model_pos / max(n_pos, 1),
        "baseline_top1_given_positive": base_pos / max(n_pos, 1),
    }


def _print_importance(selector: SentenceSelector, top: int = 12) -> None:
    gains = selector.booster_.feature_importance(importance_type="gain")
    order = np.argsort(-gains)[:top]
    total = float(gains.sum()) or 1.0
    print("top features by gain: " + ", ".join(f"{FEATURE_NAMES[i]} {gains[i] / total:.2f}" for i in order))
