"""Where the third-party datasets are read from: one root, laid out as ``../shared/data``.

The repository holds no copy of a dataset. Every reader of SQuAD, HaluEval, the NLI
pairs or RAGTruth asks :func:`dataset_file` for its file, which looks under the root
``VERITYRAG_DATASETS`` names (default: ``../shared/data`` beside the repository, where it
exists, else the git-ignored ``data/datasets``). A missing file is a :class:`~verityrag.errors.DatasetMissingError` naming the file,
the variable and ``make data`` (which fetches what is missing from the official sources).
"""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path
from typing import Any

from verityrag.errors import DatasetMissingError
from verityrag.models.folder import CHECKOUT

#: The environment variable naming the datasets root.
ENV_VAR = "VERITYRAG_DATASETS"
#: The repository checkout this package sits in.
REPO_ROOT = CHECKOUT
#: The default root when the variable is unset and it exists.
SHARED_ROOT = REPO_ROOT.parent / "shared" / "data"
#: The default root otherwise (git-ignored): where ``make data`` downloads to.
LOCAL_ROOT = REPO_ROOT / "data" / "datasets"

# The files the project reads, relative to the root.
SQUAD_V1_DEV = "squad_v1.1/dev-v1.1.json"
SQUAD_V1_TRAIN = "squad_v1.0/train-v1.0.reconstructed.json.gz"
SQUAD_V2_DEV = "squad_v2.0/dev-v2.0.reconstructed.json"
SQUAD_V2_TRAIN_PREFIX = "squad_v2.0/train-v2.0.first11articles.json"
SQUAD_V2_SPLIT = "squad_v2.0/answerability_split.json"
#: split_a articles the reader is not trained on, to validate it (and choose settings) on.
READER_VALIDATION_TITLES = ("Force", "French_and_Indian_War")
HALUEVAL_QA = "halueval/qa_data.json.gz"
RAGTRUTH_QA = "ragtruth/ragtruth_qa_test_subset.qcnli.jsonl"
NLI_SNLI = "nli/snli_dev_test.jsonl.gz"
NLI_MNLI = "nli/mnli_taxinli.jsonl.gz"
NLI_WICE = "nli/wice_claim_oracle.jsonl.gz"


def datasets_root() -> Path:
    """The folder ``VERITYRAG_DATASETS`` names, else ``../shared/data`` beside the repository where
    it exists, else ``data/datasets`` in the repository (git-ignored; ``make data`` fills it)."""
    named = os.environ.get(ENV_VAR, "").strip()
    if named:
        return Path(named).expanduser()
    return SHARED_ROOT if SHARED_ROOT.is_dir() else LOCAL_ROOT


def dataset_file(relative: str, root: Path | None = None) -> Path:
    """The path of ``relative`` under the datasets root; raises DatasetMissingError when absent."""
    base = datasets_root() if root is None else root
    path = base / relative
    if not path.is_file():
        raise DatasetMissingError(
            relative,
            str(base),
            f"set {ENV_VAR} to a folder laid out as ../shared/data, or run `make data` to fetch it",
        )
    return path


def load_json(relative: str, root: Path | None = None) -> Any:
    """A JSON dataset file under the root, gzipped (``*.gz``) or plain."""
    path = dataset_file(relative, root)
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    return json.loads(path.read_text(encoding="utf-8"))


_RUN_TOGETHER = re.compile(r"([a-z0-9)\"])\.([A-Z])")


def halueval_knowledge(knowledge: str) -> str:
    """A HaluEval knowledge passage with its paragraphs apart: HaluEval joins them without a
    space ("...century.First for Women"), which would hide a sentence boundary."""
    return _RUN_TOGETHER.sub(r"\1. \2", knowledge)
