"""Settings turn the learned checks on: the pipeline attaches them at start (or refuses to start),
``calibrate`` fits the thresholds the settings leave open by the main eval's rule, and
``stats`` says where each threshold came from.

The checks are tiny models trained in seconds (conftest.py): the answerability gate and the
guard are the span model's one-logit export, the reader its start/end export. What they
score on SQuAD text is noise; what is under test is the wiring and the threshold rule.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from _questions import labelled_questions

from verityrag import Settings, VerityRAGPipeline
from verityrag.checks.guard import THRESHOLDS_BY_SOURCE_KEY
from verityrag.checks.registry import LLM_ANSWER_SOURCE
from verityrag.generation.llm import LLMGenerator
from verityrag.llm.completion import Completion
from verityrag.models import ModelFilesMissingError, ModelMetadata
from verityrag.thresholds.learned import MAX_COVERAGE_LOSS, SWEEP_THRESHOLDS, fit_thresholds

pytestmark = pytest.mark.integration

# The extractive reader off: what is under test is the learned checks' wiring, and a question
# the reader refused would never reach them.
ALL_ON = Settings(answerability_check=True, guard_check=True, reader_check=True, reader=False)


def _copy_folder(
    source: Path, target: Path, long_side: str | None = None, metrics: dict[str, Any] | None = None
) -> Path:
    """The model folder with a 128-token window (the tiny BERT's whole range): real questions
    are too long for the 64-token window the tiny models were trained with."""
    target.mkdir()
    for name in ("model.int8.onnx", "tokenizer.json"):
        shutil.copyfile(source / name, target / name)
    meta = ModelMetadata.read(source)
    meta.max_length = 128
    if long_side is not None:
        meta.long_side = long_side
    if metrics is not None:
        meta.metrics = metrics
    meta.write(target)
    return target


@pytest.fixture
def model_dirs(span_model: tuple[Any, Path], reader_folder: Path, tmp_path: Path) -> dict[str, Path]:
    """Tiny model folders by stage; the guard is the span export with the evidence first."""
    dirs = {
        "answerability": _copy_folder(span_model[1], tmp_path / "answerability"),
        "guard": _copy_folder(
            span_model[1],
            tmp_path / "guard",
            long_side="first",
            metrics={THRESHOLDS_BY_SOURCE_KEY: {LLM_ANSWER_SOURCE: 0.2, "halueval": 0.5}},
        ),
        "reader": _copy_folder(reader_folder, tmp_path / "reader"),
    }
    return dirs


def _folders(dirs: dict[str, Path]) -> dict[str, str]:
    """The settings naming the tiny folders (VERITYRAG_ANSWER_DIR and the others at an entry point)."""
    return {
        "answerability_dir": str(dirs["answerability"]),
        "guard_dir": str(dirs["guard"]),
        "reader_check_dir": str(dirs["reader"]),
    }


def _labelled(
    corpus_slice: list[dict[str, str]], test_questions: list[dict[str, Any]]
) -> list[tuple[str, list[str]]]:
    return labelled_questions(corpus_slice, test_questions, answerable=24, unanswerable=12)


def test_no_check_is_attached_by_default() -> None:
    pipeline = VerityRAGPipeline()
    assert (pipeline.answerability, pipeline.answer_guard, pipeline.reader_check) == (None, None, None)
    assert pipeline.stats()["learned_checks"] == {}


def test_settings_attach_each_check_with_its_threshold_source(model_dirs: dict[str, Path]) -> None:
    pipeline = VerityRAGPipeline(settings=ALL_ON.replace(reader_threshold=0.3, **_folders(model_dirs)))
    checks = pipeline.stats()["learned_checks"]
    assert list(checks) == ["answerability", "guard", "reader"]  # the agent's order
    assert checks["answerability"] == {
        "threshold": 0.5,  # the tiny folder's metadata.json
        "threshold_from": "metadata",
        "model_dir": str(model_dirs["answerability"]),
    }
    assert checks["guard"]["model_dir"] == str(model_dirs["guard"])
    assert checks["reader"]["threshold"] == 0.3
    assert checks["reader"]["threshold_from"] == "settings"


def test_a_missing_model_stops_the_start_and_names_the_build_command(tmp_path: Path) -> None:
    with pytest.raises(ModelFilesMissingError, match="make models-reader"):
        VerityRAGPipeline(settings=Settings(reader_check=True, reader_check_dir=str(tmp_path)))


def test_the_environment_names_the_folders_through_settings_from_env_only(
    model_dirs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERITYRAG_READER_DIR", str(model_dirs["reader"]))
    pipeline = VerityRAGPipeline(settings=Settings.from_env().replace(reader_check=True, reader=False))
    assert pipeline.learned_checks()["reader"]["model_dir"] == str(model_dirs["reader"])
    # A pipeline given its settings reads no variable: the bogus folder is never looked at.
    monkeypatch.setenv("VERITYRAG_READER_DIR", str(tmp_path / "bogus"))
    pipeline = VerityRAGPipeline(
        settings=Settings(reader_check=True, reader=False, reader_check_dir=str(model_dirs["reader"]))
    )
    assert pipeline.learned_checks()["reader"]["model_dir"] == str(model_dirs["reader"])


def test_calibrate_fits_the_open_thresholds_by_the_eval_rule(
    model_dirs: dict[str, Path],
    corpus_slice: list[dict[str, str]],
    test_questions: list[dict[str, Any]],
) -> None:
    pipeline = VerityRAGPipeline(
        settings=ALL_ON.replace(reader_threshold=0.3, max_reformulations=0, **_folders(model_dirs))
    )
    pipeline.ingest_documents(corpus_slice, progress=False)
    summary = pipeline.calibrate(_labelled(corpus_slice, test_questions))

    fits = summary["learned_checks"]
    assert set(fits) == {"answerability", "guard"}  # the reader's threshold was fixed by the settings
    # One attempt per question (no reformulation) and unanswerable questions among the labelled:
    # the answerability gate is fitted jointly with the sufficiency gate, on all 36.
    assert fits["answerability"]["questions"] == 36
    assert fits["answerability"]["rule"] in {"joint", "sequential (no pair met the abstention target)"}
    assert fits["guard"]["questions"] == 24  # the answerable ones only
    assert fits["guard"]["rule"] == "sequential"
    for stage, fit in fits.items():
        if fit["fitted"]:
            assert fit["threshold"] in SWEEP_THRESHOLDS
            floor = fit.get("coverage_floor", (fit["coverage_check_off"] or 0.0) - MAX_COVERAGE_LOSS)
            assert fit["coverage"] >= floor
            assert pipeline.stats()["learned_checks"][stage]["threshold_from"] == "calibration"
    assert fits["answerability"]["fitted"]  # every question reaches the first check
    checks = pipeline.stats()["learned_checks"]
    assert checks["answerability"]["threshold"] == fits["answerability"]["threshold"]
    assert checks["reader"] == {
        "threshold": 0.3,
        "threshold_from": "settings",
        "model_dir": str(model_dirs["reader"]),
    }

    result = pipeline.query(_labelled(corpus_slice, test_questions)[0][0])
    assert "answerability" in [step.stage for step in result.trace]


class _CountingLLM:
    """A complete_fn that counts its calls (and answers nothing useful)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, prompt: str, **kwargs: Any) -> Completion:
        self.calls += 1
        return Completion("I do not know.", "counting", prompt_tokens=1, completion_tokens=1)


def test_an_llm_pipeline_keeps_the_thresholds_recorded_for_llm_answers(
    model_dirs: dict[str, Path],
    corpus_slice: list[dict[str, str]],
    test_questions: list[dict[str, Any]],
) -> None:
    llm = _CountingLLM()
    pipeline = VerityRAGPipeline(
        generator=LLMGenerator(llm),
        settings=Settings(guard_check=True, max_reformulations=0, **_folders(model_dirs)),
    )
    # The guard's threshold for LLM-written answers, not its default (0.5 in the tiny folder).
    assert pipeline.learned_checks()["guard"]["threshold"] == 0.2
    pipeline.ingest_documents(corpus_slice, progress=False)
    summary = pipeline.calibrate(_labelled(corpus_slice, test_questions))
    assert summary["learned_checks"]["guard"]["fitted"] is False
    assert llm.calls == 0  # fitting would have asked the LLM once per answerable question
    assert pipeline.learned_checks()["guard"] == {
        "threshold": 0.2,
        "threshold_from": "metadata",
        "model_dir": str(model_dirs["guard"]),
    }


class _FailingCheck:
    """An answerability check whose model breaks when it is asked."""

    threshold = 0.7

    def score(self, question: str, evidence: str) -> float:
        raise RuntimeError("model broke")


def test_a_failing_fit_changes_no_check(corpus_slice: list[dict[str, str]], answered_question: str) -> None:
    pipeline = VerityRAGPipeline()
    pipeline.ingest_documents(corpus_slice, progress=False)
    check = _FailingCheck()
    pipeline.answerability = check
    with pytest.raises(RuntimeError, match="model broke"):
        fit_thresholds(
            pipeline.query_with, pipeline.checks(), [(answered_question, ["x"])], ["answerability"]
        )
    assert pipeline.answerability is check
    assert check.threshold == 0.7
    assert pipeline.stats()["learned_checks"]["answerability"]["threshold_from"] == "attached"


def test_the_eval_fits_its_gate_through_calibrate_and_its_sweep_matches_the_real_run(
    model_dirs: dict[str, Path],
) -> None:
    from verityrag.eval.runner import EvalOptions, run_eval

    options = EvalOptions(
        max_test_questions=60,
        progress=False,
        answerability=True,
        settings=Settings(max_reformulations=0, **_folders(model_dirs)),
    )
    report = run_eval(options)
    gate = report["learned_gates"]["answerability"]
    fit = report["calibration"]["learned_checks"]["answerability"]
    assert gate["fit"] == fit
    assert gate["threshold"] == fit["threshold"]
    assert gate["model_dir"] == str(model_dirs["answerability"])
    paired = fit.get("sufficiency_threshold") if fit["rule"] == "joint" else None
    assert gate["sufficiency_threshold"] == (
        paired if paired is not None else report["calibration"]["threshold"]
    )
    # One pass with the gate at 0 gives every threshold's figures exactly: the row of the chosen
    # threshold is what the real run at that threshold measured.
    row = next(r for r in gate["test_sweep"] if r["threshold"] == gate["threshold"])
    metrics = report["metrics"]
    assert row["coverage"] == pytest.approx(metrics["coverage"])
    assert row["answered_and_correct"] == pytest.approx(metrics["answered_and_correct"])
    assert row["held_out_abstention"] == pytest.approx(metrics["correct_abstention"]["held_out"])
    assert row["in_domain_unanswerable_abstention"] == pytest.approx(
        metrics["correct_abstention"]["unanswerable_in_domain"]
    )


def test_model_folders_are_found_under_one_root_whatever_the_working_directory(
    tmp_path: Path, child_env: dict[str, str], python_exe: str
) -> None:
    import subprocess

    import verityrag

    code = (
        "from verityrag import Settings\n"
        "from verityrag.checks.guard import LearnedGuard\n"
        "from verityrag.verify.learned_nli import LearnedNLI\n"
        "settings = Settings.from_env()\n"
        "print(LearnedGuard().model_dir); print(LearnedNLI().model_dir)\n"
        "print(LearnedGuard.from_settings(settings).model_dir, LearnedNLI.from_settings(settings).model_dir)\n"
    )
    checkout = Path(verityrag.__file__).resolve().parents[1]
    default = [str(checkout / "guard_work" / "guard"), str(checkout / "guard_work" / "nli")]
    env = dict(child_env)  # no VERITYRAG_* settings
    run = subprocess.run([python_exe, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == default * 2
    # The root the environment names reaches the checks through Settings.from_env(), not their constructors.
    env["VERITYRAG_MODELS_DIR"] = str(tmp_path / "models")
    run = subprocess.run([python_exe, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [
        *default,
        str(tmp_path / "models" / "guard"),
        str(tmp_path / "models" / "nli"),
    ]


def test_the_constructors_ignore_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from verityrag.checks.answer_check import ANSWER_CHECK_TRAINING_DIR, AnswerCheck
    from verityrag.checks.answerability import DEFAULT_ANSWER_DIR, LearnedAnswerability
    from verityrag.checks.guard import DEFAULT_GUARD_DIR, LearnedGuard
    from verityrag.checks.reader_check import ReaderCheck, default_reader_dir
    from verityrag.models.folder import DEFAULT_MODELS_ROOT, model_folder, models_root
    from verityrag.verify.learned_nli import DEFAULT_NLI_DIR, LearnedNLI

    bogus = str(tmp_path / "bogus")
    for name in (
        "VERITYRAG_MODELS_DIR",
        "VERITYRAG_ANSWER_CHECK_DIR",
        "VERITYRAG_ANSWER_DIR",
        "VERITYRAG_GUARD_DIR",
        "VERITYRAG_READER_DIR",
        "VERITYRAG_NLI_DIR",
    ):
        monkeypatch.setenv(name, bogus)
    assert models_root() == DEFAULT_MODELS_ROOT
    assert model_folder("guard") == DEFAULT_MODELS_ROOT / "guard" == DEFAULT_GUARD_DIR
    assert AnswerCheck().model_dir == ANSWER_CHECK_TRAINING_DIR
    assert LearnedAnswerability().model_dir == DEFAULT_ANSWER_DIR
    assert LearnedGuard().model_dir == DEFAULT_GUARD_DIR
    assert LearnedNLI().model_dir == DEFAULT_NLI_DIR
    assert ReaderCheck().model_dir == default_reader_dir()
    # Settings.from_env() is where the variables are read.
    settings = Settings.from_env()
    assert LearnedGuard.from_settings(settings).model_dir == Path(bogus)
    assert ReaderCheck.from_settings(settings).model_dir == Path(bogus)
