"""The pair-building recipes (verityrag.train): HaluEval splits without shared passages, files written whole and
the Makefile's target last, span targets independent of the hash seed, and bad arguments."""

from __future__ import annotations

import gzip
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from verityrag.train import answerability_data, reader_check_data
from verityrag.train import guard_data as guard_data_recipe
from verityrag.train.model_build import halueval_shared_passages, read_pairs, write_pairs

ROOT = Path(__file__).resolve().parents[2]


def _item(i: int, knowledge: str | None = None, answer: str | None = None) -> dict[str, str]:
    return {
        "question": f"Which town did person {i} found?",
        "right_answer": answer or f"Town{i}",
        "hallucinated_answer": f"Person {i} founded the city of Nowhere{i}.",
        "knowledge": knowledge or f"Person {i} was a settler. Person {i} founded Town{i} in 18{i:02d}.",
    }


# Items 0-1 train, 2-3 validation, 4-5 test (guard_data); item 1 is item 5, its question reworded.
SHARED = "Ann Lee was a settler. Ann Lee founded Leeton in 1801."
ITEMS = [_item(0), _item(1, SHARED, "Leeton"), _item(2), _item(3), _item(4), _item(5, SHARED, "Leeton")]


def _halueval(tmp_path: Path) -> Path:
    path = tmp_path / "qa.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(it) + "\n" for it in ITEMS)
    return path


@pytest.fixture
def guard_data(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    module = guard_data_recipe
    monkeypatch.setattr(module, "TEST_ITEMS", 2)
    monkeypatch.setattr(module, "VALIDATION_ITEMS", 2)
    return module


@pytest.mark.unit
def test_halueval_shared_passages_whitespace_apart_are_still_shared() -> None:
    items = [{"knowledge": "A  b.\nC."}, {"knowledge": "x."}, {"knowledge": "A b. C. "}]
    assert halueval_shared_passages(items, 2) == {0}


@pytest.mark.unit
def test_guard_data_passage_shared_with_a_test_item_is_not_trained_on(
    guard_data: ModuleType, tmp_path: Path
) -> None:
    assert guard_data.main(["--halueval", str(_halueval(tmp_path)), "--out", str(tmp_path / "out")]) == 0
    train, test = (read_pairs(tmp_path / "out" / f"{s}.jsonl.gz") for s in ("train", "test"))
    seen = {(r["evidence"], r["answer"]) for r in train}
    assert not [r for r in test if (r["evidence"], r["answer"]) in seen]
    assert not [r for r in train if "Leeton" in r["evidence"]]
    assert {r["answer"] for r in train if r["kind"] == "short_right"} == {"Town0"}


@pytest.mark.unit
def test_guard_data_interrupted_before_the_last_file_leaves_no_train_file(
    guard_data: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(path: Path, rows: list[dict[str, Any]]) -> None:
        if path.name.startswith("test"):
            raise KeyboardInterrupt
        write_pairs(path, rows)

    monkeypatch.setattr(guard_data, "write_pairs", failing)
    with pytest.raises(KeyboardInterrupt):
        guard_data.main(["--halueval", str(_halueval(tmp_path)), "--out", str(tmp_path / "out")])
    assert not (tmp_path / "out" / "train.jsonl.gz").exists()  # make's target: the build reruns


@pytest.mark.unit
def test_write_pairs_failing_midway_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "train.jsonl.gz"
    with pytest.raises(TypeError):
        write_pairs(path, [{"a": 1}, {"b": object()}])
    assert not path.exists()


@pytest.mark.unit
def test_answer_data_interrupted_before_the_last_file_leaves_no_train_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = answerability_data
    written: list[str] = []

    def failing(path: Path, rows: list[dict[str, Any]]) -> None:
        written.append(path.name)
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "write_pairs", failing)
    monkeypatch.setattr(module, "article_pairs", lambda *a, **k: [])  # no pairs to build: seconds
    with pytest.raises(KeyboardInterrupt):
        module.main(["--synthetic-share", "0", "--out", str(tmp_path)])
    assert written
    assert written[0] != "train.jsonl.gz"


@pytest.mark.unit
def test_reader_data_passage_shared_with_a_test_item_gives_no_pair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = reader_check_data
    monkeypatch.setattr(module, "TRAIN_ITEMS", 3)
    out = tmp_path / "reader.jsonl.gz"
    args = ["--halueval", str(_halueval(tmp_path)), "--items", "3", "--unrelated-every", "1"]
    assert module.main([*args, "--out", str(out)]) == 0
    rows = read_pairs(out)
    assert rows
    assert not [r for r in rows if "Leeton" in r["evidence"] or r["title"] == "halueval-1"]


_GOLD = """
import argparse, hashlib, json
from verityrag.train import answerability_recipe as answer_train
from verityrag.train._common import ROOT
from verityrag.train.model_build import SquadSources, add_squad_arguments
p = argparse.ArgumentParser()
add_squad_arguments(p)
args = p.parse_args([])
squad = SquadSources.load(args, ROOT / "data" / "built" / "corpus_manifest.json")
rows = [
    {"title": a["title"], "question": qa["question"], "label": 1}
    for a in [*squad.train_prefix, *(squad.dev[t] for t in squad.split_a_train_titles)]
    for para in a["paragraphs"] for qa in para["qas"] if qa.get("answers")
]
print(hashlib.sha256(json.dumps(answer_train.gold_answers(args, rows)).encode()).hexdigest())
"""


@pytest.mark.integration
def test_gold_answers_of_equal_length_order_is_independent_of_the_hash_seed() -> None:
    digests = set()
    for seed in ("0", "1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run(
            [sys.executable, "-c", _GOLD], cwd=ROOT, env=env, capture_output=True, text=True, check=True
        )
        digests.add(run.stdout.strip())
    assert len(digests) == 1


@pytest.mark.unit
@pytest.mark.parametrize(
    ("recipe", "args", "message"),
    [
        ("answerability", ["--max-minutes", "0"], "--max-minutes"),
        ("answerability", ["--teacher-weight", "2"], "--teacher-weight"),
        ("guard", ["--max-pairs", "-5"], "--max-pairs"),
        ("guard", ["--refit-threshold", "--out", "/nonexistent"], "missing"),
        ("nli", ["--epochs", "0"], "--epochs"),
        ("nli", ["--max-length", "10"], "--max-length"),
        ("answerability", ["--data", "/nonexistent"], "python -m verityrag.train answerability-data"),
        ("guard", ["--data", "/nonexistent"], "python -m verityrag.train guard-data"),
        ("nli", ["--data", "/nonexistent"], "python -m verityrag.train nli-data"),
    ],
)
def test_train_recipe_bad_argument_is_a_usage_error_not_a_traceback(
    capsys: pytest.CaptureFixture[str],
    recipe: str,
    args: list[str],
    message: str,
) -> None:
    with pytest.raises(SystemExit) as stopped:
        importlib.import_module(f"verityrag.train.{recipe}_recipe").main(args)
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err
