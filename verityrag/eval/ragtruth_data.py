"""RAGTruth-QA and HaluEval-QA as (premise, hypothesis, unsupported) pairs, and their fixed splits.

Used by the RAGTruth runner (:mod:`verityrag.eval.ragtruth`) and the RAGTruth-adapted NLI recipe
(``python -m verityrag.train nli-ragtruth``). Sources and licences: data/README.md.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verityrag import datasets
from verityrag.datasets import halueval_knowledge
from verityrag.errors import DatasetMissingError, InvalidInputError

# Under the datasets root (VERITYRAG_DATASETS, default ../shared/data), as it was when imported.
RAGTRUTH_PATH = datasets.datasets_root() / datasets.RAGTRUTH_QA
HALUEVAL_PATH = datasets.datasets_root() / datasets.HALUEVAL_QA


@dataclass(frozen=True, slots=True)
class PairExample:
    premise: str
    hypothesis: str
    unsupported: int  # 1 = the hypothesis has unsupported content
    group: str  # examples of one group stay in one split


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
