"""Re-score recorded LLM answers with the current reader check, without generating them again.

``python -m verityrag.eval --real-llm gemma --reader`` takes ~32 min on 2 cores, nearly all of
it gemma's decoding. The reader check is the agent's last stage and only ever turns an
answer into an abstention, so a new reader can be measured on the answers already
recorded: each answered record's ``reader_score`` is recomputed from its question, answer
and the first three evidence chunks (what the agent gives the reader; gemma is given
three), and the report's ``reader`` section is rebuilt with
:func:`verityrag.eval.llm_eval.reader_metrics` at the new folder's threshold. The report
records that it was re-scored, and how many recorded scores the old reader reproduced
(a check that the evidence here is the evidence the agent used: run it once with the
reader that made the recording and every score must be reproduced).

    python scripts/reader_rescore_llm.py          # scripts/results/llm_eval_reader_local.json + answers
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
from pathlib import Path
from typing import Any

from verityrag.agent.gates import QUESTION_CHECK_CHUNKS
from verityrag.checks.reader_check import ReaderCheck
from verityrag.config import Settings
from verityrag.errors import VerityRAGError
from verityrag.eval.llm_eval import reader_metrics

ROOT = Path(__file__).resolve().parent.parent

RESULTS = ROOT / "scripts" / "results"
#: What :func:`rescore` reads of an answered record.
ANSWERED_FIELDS = ("question", "answer", "evidence")


class InputError(Exception):
    """A problem with an input file; the message names the file (and line) and what is wrong."""


def read_report(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise InputError(f"{path}: {'not a file' if path.exists() else 'no such file'}")
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from exc
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise InputError(f"{path}: not a JSON report ({exc})") from exc
    if not isinstance(report, dict):
        raise InputError(f"{path}: not a JSON report (a {type(report).__name__}, not an object)")
    return report


def read_answers(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise InputError(f"{path}: {'not a file' if path.exists() else 'no such file'}")
    records = []
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line.rstrip())
                except json.JSONDecodeError as exc:
                    raise InputError(f"{path}:{n}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
                if not isinstance(r, dict) or "answered" not in r:
                    raise InputError(f"{path}:{n}: not an answer record (a JSON object with 'answered')")
                missing = [k for k in ANSWERED_FIELDS if r["answered"] and k not in r]
                if missing:
                    raise InputError(f"{path}:{n}: an answered record without {', '.join(missing)}")
                records.append(r)
    # gzip.BadGzipFile is an OSError; a truncated file raises EOFError.
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a readable gzipped JSONL file ({exc})") from exc
    return records


def rescore(records: list[dict[str, Any]], check: ReaderCheck) -> int:
    """Recompute ``reader_score`` of every answered record in place; how many old scores it reproduced."""
    same = 0
    for r in records:
        if not r["answered"]:
            continue
        evidence = " ".join(e["text"] for e in r["evidence"][:QUESTION_CHECK_CHUNKS])
        score = check.score(r["question"], evidence, r["answer"])
        same += r.get("reader_score") is not None and abs(r["reader_score"] - score) < 1e-6
        r["reader_score"] = score
    return same


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--report", type=Path, default=RESULTS / "llm_eval_reader_local.json")
    p.add_argument(
        "--answers", type=Path, default=ROOT / "guard_work" / "eval" / "llm_answers_gemma.jsonl.gz"
    )
    p.add_argument(
        "--reader-dir",
        type=Path,
        default=None,
        help="default: VERITYRAG_READER_DIR, else the reader check under VERITYRAG_MODELS_DIR, else the shipped reader",
    )
    args = p.parse_args(argv)
    try:
        report = read_report(args.report)
        if "reader" not in report:
            p.error(f"{args.report} was not run with --reader: its records have no reader scores to compare")
        records = read_answers(args.answers)
    except InputError as exc:
        p.error(str(exc))
    check = (
        ReaderCheck(args.reader_dir) if args.reader_dir else ReaderCheck.from_settings(Settings.from_env())
    )
    try:
        check.warm_up()
    except VerityRAGError as exc:  # a missing folder: the message names the make target
        p.error(str(exc))
    try:
        reproduced = rescore(records, check)
    except VerityRAGError as exc:  # e.g. an answered record with an empty question or answer
        p.error(f"{args.answers}: {exc}")
    answered = sum(r["answered"] for r in records)
    report["reader"] = reader_metrics(records, check.threshold) | {
        "rescored": {
            "by": "scripts/reader_rescore_llm.py",
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "reader_dir": str(check.model_dir),
            "answered": answered,
            "recorded_scores_reproduced": reproduced,
        }
    }
    args.report.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    with gzip.open(args.answers, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    without, with_ = report["reader"]["without_reader"], report["reader"]["with_reader"]
    print(
        f"reader {check.model_dir} at {check.threshold:.3f}: answered {without['answered']} -> {with_['answered']}, "
        f"wrong {without['answered_wrong']} -> {with_['answered_wrong']}, correct {without['answerable_correct']} -> "
        f"{with_['answerable_correct']}; {reproduced} of {answered} recorded scores reproduced"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
