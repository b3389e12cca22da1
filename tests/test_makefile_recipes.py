"""The learned checks' recipes in the Makefile restart at their first unfinished step.

Each step of ``make models-answerability`` and ``make models-answerability-mpnet`` is a file
target (the step's results.json), so a step that has finished is not rerun, and building the
mpnet gate's pairs never retrains the MiniLM gate. ``make models-guard`` likewise: its training
stages by their results.json, gemma's answers per split by a stamp written when the split is
done. ``make models-nli``, ``models-nli-ragtruth``, ``models-nli3`` and ``models-reader`` likewise, by their
pairs, each model's results.json and each adapted fold's stamp. Checked with ``make -n`` (a
dry run) in a scratch folder holding a copy of the Makefile and the files its setup stamp
hashes. The training commands are ``python -m verityrag.train NAME`` recipes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAKE = shutil.which("make")
pytestmark = [
    pytest.mark.integration,  # runs make, which runs the recipes' commands
    pytest.mark.skipif(MAKE is None, reason="make is not installed"),
]

PLAIN_DATA = "guard_work/answerability/data_plain/train.jsonl.gz"
DATA = "guard_work/answerability/data/train.jsonl.gz"
STAGE1 = "guard_work/answerability_stages/stage1/results.json"
STAGE2 = "guard_work/answerability_stages/stage2/results.json"
MINILM = "guard_work/answerability/results.json"
MPNET_BASE = "guard_work/all-mpnet-base-v2/model.safetensors"
MPNET_STEPS = [
    "guard_work/answerability_mpnet/epoch1/results.json",
    "guard_work/answerability_mpnet/epoch2/results.json",
    "guard_work/answerability_mpnet/cut6/results.json",
    "guard_work/answerability_mpnet6/results.json",
]


def _scratch(tmp_path: Path, built: list[str]) -> Path:
    for name in ("Makefile", "requirements.txt", "requirements-dev.txt", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    # Built in order, one second apart, as make compares modification times.
    for age, rel in enumerate(reversed(built)):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
        stamp = 1_700_000_000 - age
        os.utime(path, (stamp, stamp))
    return tmp_path


def _dry_run(folder: Path, target: str) -> list[str]:
    assert MAKE is not None
    done = subprocess.run(
        [MAKE, "-n", target], cwd=folder, capture_output=True, text=True, check=True, timeout=60
    )
    return [line for line in done.stdout.splitlines() if "scripts/" in line or "verityrag.train" in line]


def _step_of(words: list[str]) -> str | None:
    """What a command runs: the recipe's name (``-m verityrag.train NAME``) or the script's, if any."""
    if "verityrag.train" in words:
        return words[words.index("verityrag.train") + 1]
    script = next((w for w in words if w.startswith("scripts/") and w.endswith(".py")), None)
    return None if script is None else Path(script).stem


def _running(lines: list[str], *steps: str) -> list[str]:
    """The commands that run one of ``steps``."""
    return [line for line in lines if _step_of(line.split()) in steps]


def _outs(lines: list[str]) -> list[str]:
    """The ``--out`` folder of each training command, in order."""
    outs = []
    for line in _running(lines, "answerability"):
        words = line.split()
        outs.append(words[words.index("--out") + 1])
    return outs


def test_minilm_recipe_from_nothing_runs_every_step(tmp_path: Path) -> None:
    lines = _dry_run(_scratch(tmp_path, []), "models-answerability")
    assert _outs(lines) == [
        "guard_work/answerability_stages/stage1",
        "guard_work/answerability_stages/stage2",
        "guard_work/answerability",
    ]
    data_builds = _running(lines, "answerability-data")
    assert len(data_builds) == 2
    assert "--synthetic-share 0 " in data_builds[0] + " "
    assert "--typed-entities" in data_builds[1]


def test_minilm_recipe_restarts_after_its_last_finished_stage(tmp_path: Path) -> None:
    lines = _dry_run(_scratch(tmp_path, [PLAIN_DATA, DATA, STAGE1]), "models-answerability")
    assert _outs(lines) == ["guard_work/answerability_stages/stage2", "guard_work/answerability"]
    assert not _running(lines, "answerability-data")
    # The plain-pair stages train on their own pairs, the last stage on the synthetic ones.
    stage2, last = _running(lines, "answerability")
    assert "--data guard_work/answerability/data_plain" in stage2
    assert "--data" not in last


FINISHED_MINILM = [PLAIN_DATA, DATA, STAGE1, STAGE2, MINILM]


def test_finished_minilm_recipe_runs_nothing(tmp_path: Path) -> None:
    assert _outs(_dry_run(_scratch(tmp_path, FINISHED_MINILM), "models-answerability")) == []


def test_mpnet_recipe_builds_its_pairs_without_training_minilm(tmp_path: Path) -> None:
    lines = _dry_run(_scratch(tmp_path, [MPNET_BASE]), "models-answerability-mpnet")
    assert [line for line in _running(lines, "answerability-data") if "--typed-entities" in line]
    assert _outs(lines) == [str(Path(step).parent) for step in MPNET_STEPS]
    assert all("--base-model" in line for line in _running(lines, "answerability"))


def test_mpnet_recipe_restarts_at_its_first_unfinished_step(tmp_path: Path) -> None:
    built = [DATA, MPNET_BASE, *MPNET_STEPS[:2]]
    lines = _dry_run(_scratch(tmp_path, built), "models-answerability-mpnet")
    assert _outs(lines) == [str(Path(step).parent) for step in MPNET_STEPS[2:]]
    assert not _running(lines, "answerability-data", "mpnet-base")


GUARD_DATA = "guard_work/guard/data/train.jsonl.gz"
GUARD_STAGE1 = "guard_work/guard_stages/stage1/results.json"
GEMMA = {split: f"guard_work/gemma_answers/{split}.done" for split in ("test", "train", "validation")}
GUARD = "guard_work/guard/results.json"
GUARD_FINAL = "guard_work/guard/final.json"
FINISHED_GUARD = [GUARD_DATA, GUARD_STAGE1, *GEMMA.values(), GUARD, GUARD_FINAL]


def _guard_steps(lines: list[str]) -> list[str]:
    """Each guard step as 'train <out>', 'gemma <split>' or the recipe's or script's name."""
    steps = []
    for line in lines:
        words = line.split()
        step = _step_of(words)
        if step is None:  # the copy of the figures into scripts/results
            continue
        if step == "guard" and "--refit-threshold" not in words:
            steps.append(f"train {words[words.index('--out') + 1]}")
        elif step == "gemma-answers":
            steps.append(f"gemma {words[words.index('--split') + 1]}")
        else:
            steps.append(step + (" refit" if "--refit-threshold" in words else ""))
    return steps


def test_guard_recipe_from_nothing_runs_every_step_in_order(tmp_path: Path) -> None:
    steps = _guard_steps(_dry_run(_scratch(tmp_path, []), "models-guard"))
    assert steps == [
        "guard-data",
        "train guard_work/guard_stages/stage1",
        "gemma test",
        "gemma train",
        "train guard_work/guard",
        "gemma validation",
        "guard refit",
        "guard_probe",
        "guard_bench_live",
    ]


def test_guard_recipe_restarts_at_its_first_unfinished_step(tmp_path: Path) -> None:
    built = [GUARD_DATA, GUARD_STAGE1, GEMMA["test"]]
    lines = _dry_run(_scratch(tmp_path, built), "models-guard")
    assert _guard_steps(lines)[:2] == ["gemma train", "train guard_work/guard"]
    # The second stage continues the first stage's model.
    assert "--warm-start guard_work/guard_stages/stage1" in next(
        line for line in lines if "--gemma-repeat" in line
    )


def test_finished_guard_runs_nothing_and_nli_starts_from_it(tmp_path: Path) -> None:
    folder = _scratch(tmp_path, FINISHED_GUARD)
    assert _dry_run(folder, "models-guard") == []
    assert _guard_steps(_dry_run(folder, "models-nli")) == ["nli-data", "nli"]


NLI_DATA = "guard_work/nli/data/validation.jsonl.gz"
NLI = "guard_work/nli/results.json"
NLI_FOLDS = ["guard_work/nli_ragtruth/adapt.done", "guard_work/nli_ragtruth_b2/adapt.done"]


def _script_steps(lines: list[str]) -> list[str]:
    """Each command as its recipe's or script's name, plus ``--out`` or ``--bucket`` where it has one."""
    steps = []
    for line in lines:
        words = line.split()
        step = _step_of(words)
        if step is None:  # the copy of the figures into the model folder
            continue
        for flag in ("--out", "--bucket"):
            if flag in words:
                step += f" {flag} {words[words.index(flag) + 1]}"
        steps.append(step)
    return steps


def test_nli_recipes_from_a_finished_guard_run_every_step(tmp_path: Path) -> None:
    folder = _scratch(tmp_path, FINISHED_GUARD)
    assert _script_steps(_dry_run(folder, "models-nli-ragtruth")) == [
        "nli-data",
        "nli",
        "nli-ragtruth",
        "nli-ragtruth --bucket 2",
    ]


def test_nli_recipes_restart_at_the_first_unfinished_step(tmp_path: Path) -> None:
    folder = _scratch(tmp_path, [*FINISHED_GUARD, NLI_DATA, NLI, NLI_FOLDS[0]])
    assert _dry_run(folder, "models-nli") == []
    assert _script_steps(_dry_run(folder, "models-nli-ragtruth")) == ["nli-ragtruth --bucket 2"]


def test_a_retrained_guard_rebuilds_the_nli_pairs_and_model(tmp_path: Path) -> None:
    # The guard finished after the NLI model was built from it: the NLI pairs mix in its rows.
    folder = _scratch(tmp_path, [*FINISHED_GUARD[:-1], NLI_DATA, NLI, *NLI_FOLDS, GUARD_FINAL])
    assert _script_steps(_dry_run(folder, "models-nli-ragtruth"))[:2] == ["nli-data", "nli"]


NLI3_DATA = "guard_work/nli3/data/wice_test.jsonl.gz"
NLI3 = "guard_work/nli3/results.json"


def test_nli3_recipe_builds_its_pairs_then_trains_and_restarts_where_it_stopped(tmp_path: Path) -> None:
    # Needs no other model: from nothing, the pairs then the model (with the benchmark rows).
    for name in "abc":
        (tmp_path / name).mkdir()
    assert _script_steps(_dry_run(_scratch(tmp_path / "a", []), "models-nli3")) == ["nli3-data", "nli3"]
    assert "--ragtruth" in _dry_run(_scratch(tmp_path / "b", [NLI3_DATA]), "models-nli3")[0]
    assert _dry_run(_scratch(tmp_path / "c", [NLI3_DATA, NLI3]), "models-nli3") == []


SPAN_STAGES = [
    "guard_work/answer_span/stage1/results.json",
    "guard_work/answer_span/stage2/results.json",
    "guard_work/answer_span/results.json",
]
READER_DATA = "guard_work/reader_data/halueval_qa.jsonl.gz"
READER = "guard_work/reader_check/results.json"


def test_reader_recipe_from_finished_gates_runs_every_step_in_order(tmp_path: Path) -> None:
    lines = _dry_run(_scratch(tmp_path, [*FINISHED_MINILM, *FINISHED_GUARD]), "models-reader")
    steps = _script_steps(lines)
    assert steps == [
        "answerability --out guard_work/answer_span/stage1",
        "answerability --out guard_work/answer_span/stage2",
        "reader-check-data",
        "answerability --out guard_work/answer_span",
        "reader-check",
    ]
    # Each stage continues the one before it; the first continues the MiniLM gate.
    warm = [line.split()[line.split().index("--warm-start") + 1] for line in lines if "--span" in line]
    assert warm == [
        "guard_work/answerability",
        "guard_work/answer_span/stage1",
        "guard_work/answer_span/stage2",
    ]


def test_reader_recipe_restarts_at_its_first_unfinished_step(tmp_path: Path) -> None:
    built = [*FINISHED_MINILM, *FINISHED_GUARD, SPAN_STAGES[0]]
    steps = _script_steps(_dry_run(_scratch(tmp_path, built), "models-reader"))
    assert steps[0] == "answerability --out guard_work/answer_span/stage2"
    assert "answerability --out guard_work/answer_span/stage1" not in steps


def test_finished_reader_runs_nothing(tmp_path: Path) -> None:
    built = [*FINISHED_MINILM, *FINISHED_GUARD, READER_DATA, *SPAN_STAGES, READER]
    assert _dry_run(_scratch(tmp_path, built), "models-reader") == []
