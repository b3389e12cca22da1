"""``python scripts/score_llm_answers.py``: score every check that is here on an LLM's recorded answers.

Which checks run depends on which models this checkout has built (``make models-guard``,
``models-nli``, ``models-nli3``, ``models-reader``); the shipped extractive reader and the
model-free verifiers are always there. A check whose model is missing is listed in the
report's ``skipped`` with the command that builds it. See :mod:`verityrag.eval.llm_checks` for
the protocol.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from verityrag import datasets
from verityrag.checks.reader_check import SHIPPED_READER_DIR
from verityrag.eval.llm_checks import (
    FIXED_THRESHOLD,
    Check,
    LabelledAnswer,
    first_attempts,
    grounding_check,
    latency_figures,
    read_records,
    score_checks,
    strictness_table,
)
from verityrag.verify.protocols import NLIScorer

ROOT = datasets.REPO_ROOT
GUARD_WORK = ROOT / "guard_work"
DEFAULT_ANSWERS = GUARD_WORK / "eval" / "llm_answers_local.jsonl"
DEFAULT_REPORT = ROOT / "eval_report_llm_local.json"
DEFAULT_OUT = ROOT / "scripts" / "results" / "llm_checks_local.json"
EXTRACTIVE_REPORT = ROOT / "eval_report.json"
RAGTRUTH_REPORT = ROOT / "eval_report_ragtruth.json"


def _ragtruth_threshold(verifier: str) -> float | None:
    """The threshold ``python -m verityrag.eval --ragtruth`` fitted for ``verifier`` on RAGTruth's fitting half."""
    try:
        rows = json.loads(RAGTRUTH_REPORT.read_text(encoding="utf-8"))["ragtruth"]["rows"]
    except (OSError, ValueError, KeyError):
        return None
    return next((float(r["threshold_p_supported"]) for r in rows if r["verifier"] == verifier), None)


def _pair_score(scorer: NLIScorer) -> Callable[[Sequence[LabelledAnswer]], list[float]]:
    def score(answers: Sequence[LabelledAnswer]) -> list[float]:
        return list(scorer.score_pairs([(a.cited, a.text) for a in answers])) if answers else []

    return score


def available_checks(strictness: str) -> tuple[list[Check], list[str]]:
    """The checks this checkout can run, and a note for each one it cannot."""
    from verityrag.errors import VerityRAGError
    from verityrag.eval.ragtruth_scorers import LexicalEntityScorer

    lexical_t = _ragtruth_threshold("lexical")
    checks = [
        grounding_check(strictness),
        Check(
            "lexical",
            _pair_score(LexicalEntityScorer()),
            lexical_t if lexical_t is not None else FIXED_THRESHOLD,
            "fitted on RAGTruth's fitting half" if lexical_t is not None else "fixed",
        ),
    ]
    skipped = []
    learned: list[tuple[str, Callable[[], Check]]] = [
        ("guard", lambda: _guard()),
        ("nli", lambda: _onnx_nli(GUARD_WORK / "nli")),
        ("nli3", lambda: _hf_nli(GUARD_WORK / "nli3", "nli3")),
        ("nli3+squad", lambda: _hf_nli(GUARD_WORK / "nli3_squad", "nli3+squad")),
        ("reader check", lambda: _reader(GUARD_WORK / "reader_check", "reader check")),
        (
            "reader check (shipped reader)",
            lambda: _reader(SHIPPED_READER_DIR, "reader check (shipped reader)"),
        ),
    ]
    for name, build in learned:
        try:
            checks.append(build())
        except (VerityRAGError, OSError) as exc:
            skipped.append(f"{name}: {exc}")
    return checks, skipped


def _guard() -> Check:
    from verityrag.checks.guard import LearnedGuard
    from verityrag.checks.registry import LLM_ANSWER_SOURCE

    guard = LearnedGuard(GUARD_WORK / "guard", answers_from=LLM_ANSWER_SOURCE)
    guard.warm_up()
    return Check(
        "guard", _pair_score(guard), guard.threshold, f"its folder's, for {LLM_ANSWER_SOURCE}'s answers"
    )


def _onnx_nli(folder: Path) -> Check:
    from verityrag.verify.learned_nli import LearnedNLI

    nli = LearnedNLI(folder)
    nli.warm_up()
    return Check("nli", _pair_score(nli), nli.threshold, "its folder's")


def _hf_nli(folder: Path, name: str) -> Check:
    from verityrag.errors import ModelFilesMissingError
    from verityrag.verify.nli_verifier import HFSequenceClassificationScorer

    if not (folder / "config.json").is_file():
        raise ModelFilesMissingError(name, folder, ["config.json"], "make models-nli3")
    scorer = HFSequenceClassificationScorer(folder, local_files_only=True)
    return Check(name, _pair_score(scorer), FIXED_THRESHOLD, "fixed (entailment probability)")


def _reader(folder: Path, name: str) -> Check:
    from verityrag.checks.reader_check import ReaderCheck

    check = ReaderCheck(folder)
    check.warm_up()

    def score(answers: Sequence[LabelledAnswer]) -> list[float]:
        return [check.score(a.question, a.evidence, a.text) for a in answers]

    source = (
        "its folder's, fitted on gemma's labelled answers"
        if check.records_agreement_threshold
        else "fixed (share of the reader's span probability)"
    )
    return Check(name, score, check.threshold, source)


def _extractive(path: Path) -> dict[str, Any] | None:
    try:
        metrics = json.loads(path.read_text(encoding="utf-8"))["metrics"]
    except (OSError, ValueError, KeyError):
        return None
    return {
        "coverage": metrics["coverage"],
        "accuracy_of_all_answers": metrics["accuracy_of_all_answers"],
        "latency_ms": metrics["latency_ms"]["per_question"],
    }


def run(answers_path: Path, report_path: Path, strictness: str, max_stack: int) -> dict[str, Any]:
    records = read_records(answers_path)
    checks, skipped = available_checks(strictness)
    t0 = time.perf_counter()
    scored = score_checks(records, checks, max_stack)
    llm_report: dict[str, Any] = {}
    if report_path.is_file():
        llm_report = json.loads(report_path.read_text(encoding="utf-8"))
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, Python {platform.python_version()}",
        "answers": str(answers_path.relative_to(ROOT) if answers_path.is_relative_to(ROOT) else answers_path),
        "model": llm_report.get("config", {}).get("model", ""),
        "test_questions": len(records),
        "partial_sample": llm_report.get("partial_sample"),
        "strictness": strictness,
        "checks": [{"name": c.name, "threshold": c.threshold, "source": c.threshold_source} for c in checks],
        "skipped": skipped,
        "scoring_s": time.perf_counter() - t0,
        **scored,
        "strictness_levels": strictness_table(first_attempts(records)),
        "latency": latency_figures(records),
        "llm_path": llm_report.get("metrics", {}).get("accuracy_of_all_answers"),
        "extractive_path": _extractive(EXTRACTIVE_REPORT),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--answers", type=Path, default=DEFAULT_ANSWERS, help="the LLM eval's answer record (JSONL)"
    )
    parser.add_argument(
        "--report", type=Path, default=DEFAULT_REPORT, help="the LLM eval's report (for its model)"
    )
    parser.add_argument("--strictness", default="balanced", help="the level the answers were verified at")
    parser.add_argument("--max-stack", type=int, default=3, help="largest stack of checks scored")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if not args.answers.is_file():
        print(f"error: {args.answers}: no such file (record one with `make eval-llm`)", file=sys.stderr)
        return 2
    if args.max_stack < 1:
        print("error: --max-stack must be >= 1", file=sys.stderr)
        return 2
    try:
        result = run(args.answers, args.report, args.strictness, args.max_stack)
    except ValueError as exc:
        print(f"error: {args.answers}: {exc}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for row in result["rows"]:
        if len(row["checks"]) == 1:
            own = row["own"]
            print(
                f"{row['checks'][0]:<32} AUROC {row['auroc']:.3f}  own threshold {row['threshold']:.3f}: "
                f"wrong caught {own['wrong_caught']}/{own['wrong']}, right rejected {own['right_rejected']}/{own['right']}"
            )
    for note in result["skipped"]:
        print(f"skipped {note}")
    print(f"written: {args.out}")
    return 0
