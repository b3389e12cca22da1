"""The SQuAD 2.0 files under the datasets root are what the training scripts read by default.

They must load, hold the documented questions, and keep the main eval's articles out.
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from verityrag import datasets
from verityrag.train.model_build import SquadSources, add_squad_arguments, read_json

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "data" / "built" / "corpus_manifest.json"


def _questions(articles: list[dict]) -> tuple[int, int]:
    qas = [qa for a in articles for p in a["paragraphs"] for qa in p["qas"]]
    return len(qas), sum(1 for qa in qas if qa.get("is_impossible"))


@pytest.fixture
def sources(require_dataset: Callable[[str], Path]) -> SquadSources:
    for name in (datasets.SQUAD_V2_TRAIN_PREFIX, datasets.SQUAD_V2_DEV, datasets.SQUAD_V2_SPLIT):
        require_dataset(name)
    parser = argparse.ArgumentParser()
    add_squad_arguments(parser)
    return SquadSources.load(parser.parse_args([]), MANIFEST)


def test_default_files_are_the_datasets_root_files_with_the_documented_counts(sources: SquadSources) -> None:
    assert _questions(sources.train_prefix) == (5147, 348)
    assert len(sources.train_prefix) == 11
    assert _questions(list(sources.dev.values())) == (11873, 5945)
    assert len(sources.dev) == 35
    split = sources.split
    assert not set(split["split_a_titles"]) & set(split["split_b_titles"])
    assert set(split["split_a_titles"]) | set(split["split_b_titles"]) == set(sources.dev)


def test_reserved_articles_are_never_training_articles(sources: SquadSources) -> None:
    reserved = set(json.loads(MANIFEST.read_text(encoding="utf-8"))["reserved_articles"])
    assert reserved  # the guard below would pass vacuously otherwise
    assert not reserved & set(sources.split_a_train_titles)
    assert not reserved & {a["title"] for a in sources.train_prefix}


def test_read_json_reads_gzipped_and_plain_files_alike(tmp_path: Path) -> None:
    value = {"data": [{"title": "Ünïcode", "paragraphs": []}]}
    plain, packed = tmp_path / "a.json", tmp_path / "a.json.gz"
    plain.write_text(json.dumps(value), encoding="utf-8")
    with gzip.open(packed, "wt", encoding="utf-8") as f:
        json.dump(value, f)
    assert read_json(plain) == read_json(packed) == value
