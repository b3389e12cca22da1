"""The three-way NLI recipe end to end on a few hundred real pairs and a tiny random model.

``nli3-data`` builds its splits from the datasets root (SNLI, MultiNLI, WiCE; ``--per-source``
keeps a sample), ``nli3`` trains a tiny random BERT with the all-MiniLM-L6-v2 tokenizer, saves a
plain Hugging Face folder that the HF scorer serves ("entailment" as the support score), and
measures it on the held-out pairs and WiCE test. The trainer resumes a stopped run to the very
weights of an unbroken one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from models._tiny_bert import TINY_BERT

from verityrag import datasets
from verityrag.train.__main__ import RECIPES
from verityrag.train.model_build import read_pairs
from verityrag.train.nli3_data import LABELS, best_window, detokenise
from verityrag.train.nli3_data import main as data_main
from verityrag.train.nli3_recipe import EXIT_RESUME
from verityrag.train.nli3_recipe import main as train_main
from verityrag.train.nli3_trainer import NLITrainer, NLITrainingConfig
from verityrag.verify.nli_verifier import HFSequenceClassificationScorer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for name in (datasets.NLI_SNLI, datasets.NLI_MNLI, datasets.NLI_WICE):
        if not (datasets.datasets_root() / name).is_file():
            pytest.skip(f"{name} is not under the datasets root")
    out = tmp_path_factory.mktemp("nli3_data")
    assert data_main(["--out", str(out), "--per-source", "100", "--window-words", "60"]) == 0
    return out


def test_recipes_are_registered() -> None:
    assert {"nli3-data", "nli3"} <= set(RECIPES)


def test_detokenise_and_best_window() -> None:
    assert detokenise("Two women are holding packages .") == "Two women are holding packages."
    assert detokenise("The man does n't know ( yet ) .") == "The man doesn't know (yet)."
    premise = (
        " ".join(f"Sentence {i} is about nothing." for i in range(30)) + " Watt built the engine in 1769."
    )
    window = best_window("Watt built an engine.", premise, max_words=20)
    assert "Watt built the engine in 1769." in window
    assert len(window.split()) <= 20
    assert best_window("x", "Short premise.", 20) == "Short premise."


def test_nli3_data_splits_sources_and_keeps_wice_test_apart(pairs: Path) -> None:
    train = read_pairs(pairs / "train.jsonl.gz")
    validation = read_pairs(pairs / "validation.jsonl.gz")
    wice_test = read_pairs(pairs / "wice_test.jsonl.gz")
    assert {r["source"] for r in train} == {"snli", "mnli", "wice"}
    assert len(train) == 300
    assert {r["label"] for r in train} == {0, 1, 2}
    assert {r["source"] for r in validation} <= {"snli", "mnli"}
    assert {r["source"] for r in wice_test} == {"wice"}
    # WiCE trains on dev claims only, each with its best window of evidence.
    test_claims = {r["hypothesis"] for r in wice_test}
    wice_train = [r for r in train if r["source"] == "wice"]
    assert not test_claims & {r["hypothesis"] for r in wice_train}
    assert max(len(r["premise"].split()) for r in wice_train) <= 200
    assert not {(r["premise"], r["hypothesis"]) for r in validation} & {
        (r["premise"], r["hypothesis"]) for r in train
    }


def test_nli3_trains_a_tiny_model_that_the_hf_scorer_serves(pairs: Path, tmp_path: Path) -> None:
    out, results = tmp_path / "model", tmp_path / "nli3.json"
    args = ["--data", str(pairs), "--out", str(out), "--results", str(results), "--epochs", "1"]
    args += ["--run", str(tmp_path / "run")]
    args += [
        "--batch-size",
        "16",
        "--max-length",
        "96",
        "--lr",
        "1e-3",
        "--precision",
        "fp32",
        "--no-progress",
    ]
    args += ["--random-init-config", json.dumps(TINY_BERT)]
    assert train_main(args) == 0
    config = json.loads((out / "config.json").read_text())
    assert [config["id2label"][str(i)] for i in range(3)] == list(LABELS)
    assert not (tmp_path / "run" / "checkpoint.pt").exists()
    figures = json.loads(results.read_text())
    assert figures["validation"]["pairs"] == 100
    assert 0.0 <= figures["validation"]["accuracy"] <= 1.0
    assert figures["wice_test"]["pairs"] == 100
    assert 0.0 <= figures["wice_test"]["auroc"] <= 1.0
    scorer = HFSequenceClassificationScorer(out, local_files_only=True)
    [score] = scorer.score_pairs([("A man plays a guitar on stage.", "A man plays music.")])
    assert scorer.support_index_ == 0
    assert scorer.max_length_ == 96  # windows of the length it was trained on
    assert 0.0 <= score <= 1.0


def test_a_stopped_run_resumes_to_the_same_weights_as_an_unbroken_one(pairs: Path, tmp_path: Path) -> None:
    import torch

    rows = read_pairs(pairs / "train.jsonl.gz")[:96]
    config = NLITrainingConfig(max_length=64, epochs=2, batch_size=16, learning_rate=1e-3)

    def trainer(out: Path, **kwargs: float) -> NLITrainer:
        return NLITrainer(
            out, config, random_init_config=TINY_BERT, precision="fp32", progress=False, **kwargs
        )

    unbroken = trainer(tmp_path / "a").fit(rows, "d")
    stopped = trainer(tmp_path / "b", max_minutes=0).fit(rows, "d")
    assert not stopped.finished_
    assert stopped.stopped_early_
    assert (tmp_path / "b" / "checkpoint.pt").exists()
    resumed = trainer(tmp_path / "b").fit(rows, "d")
    assert resumed.finished_
    for (name, a), (_, b) in zip(
        unbroken.model_.state_dict().items(), resumed.model_.state_dict().items(), strict=True
    ):
        assert torch.allclose(a, b, atol=1e-6), name
    # Its step-1 checkpoint is still there: other data starts over from step 0, the checkpoint kept aside.
    other = trainer(tmp_path / "b").fit(rows[:50], "other")
    assert other.finished_
    assert other.step_ == other.plan_.total_steps
    assert (tmp_path / "b" / "checkpoint.replaced.pt").exists()


def test_nli3_stopped_by_its_budget_exits_75_and_says_how_to_continue(
    pairs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--data", str(pairs), "--out", str(tmp_path), "--results", str(tmp_path / "r.json")]
    args += [
        "--max-minutes",
        "0",
        "--max-length",
        "64",
        "--no-progress",
        "--random-init-config",
        json.dumps(TINY_BERT),
    ]
    assert train_main(args) == EXIT_RESUME
    assert "run the same command again" in capsys.readouterr().out
    # Without --run the checkpoint is kept in the training folder (the test's own VERITYRAG_TRAIN_DIR).
    assert (Path(os.environ["VERITYRAG_TRAIN_DIR"]) / "nli3" / "run" / "checkpoint.pt").exists()
