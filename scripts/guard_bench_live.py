"""Latency of the served (int8 ONNX) cross-encoders, one answer at a time, as the agent calls them.

Per call: LearnedGuard.score(evidence, answer) on HaluEval test pairs, and
LearnedAnswerability.score(question, evidence) on SQuAD 2.0 split_b pairs when that model is built
(trimming, tokenising, windowing and onnxruntime included). 2 threads, after a warm-up.
Run under ``flock /tmp/verityrag-heavy.lock`` (timings on a busy machine mean nothing).

    python scripts/guard_bench_live.py [--n 300]   # -> scripts/results/crossenc_latency.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from verityrag.checks.answerability import LearnedAnswerability
from verityrag.checks.guard import LearnedGuard
from verityrag.checks.learned_check import LearnedPairCheck
from verityrag.config import Settings
from verityrag.errors import VerityRAGError

ROOT = Path(__file__).resolve().parent.parent

RESULTS = ROOT / "scripts" / "results" / "crossenc_latency.json"


def _bench(model: LearnedPairCheck, calls: list[tuple[str, str]]) -> dict[str, Any]:
    model.warm_up()
    score = model.score  # type: ignore[attr-defined]
    for a, b in calls[:10]:
        score(a, b)
    times = []
    for a, b in calls:
        t0 = time.perf_counter()
        score(a, b)
        times.append((time.perf_counter() - t0) * 1000)
    folder = model.model_dir
    return {
        "calls": len(calls),
        "p50_ms": float(np.percentile(times, 50)),
        "p95_ms": float(np.percentile(times, 95)),
        "mean_ms": float(np.mean(times)),
        "served_file": model.scorer.metadata.onnx_file,
        "served_megabytes": (folder / model.scorer.metadata.onnx_file).stat().st_size / 1e6,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=300)
    args = p.parse_args(argv)
    out: dict[str, Any] = {"command": " ".join(sys.argv), "threads": 2}
    settings = Settings.from_env()  # the model folders (VERITYRAG_GUARD_DIR, VERITYRAG_ANSWER_DIR, ...)
    guard_rows = []
    with gzip.open(ROOT / "guard_work" / "guard" / "data" / "test.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            guard_rows.append(json.loads(line))
            if len(guard_rows) >= args.n:
                break
    # Raw (untrimmed) knowledge is not kept in the pairs file; trimmed evidence is what is scored anyway.
    out["guard"] = _bench(
        LearnedGuard.from_settings(settings), [(r["evidence"], r["answer"]) for r in guard_rows]
    )
    # The answerability model is another recipe's (make models-answerability): benched when built.
    answer_data = ROOT / "guard_work" / "answerability" / "data" / "test.jsonl.gz"
    try:
        answerability = LearnedAnswerability.from_settings(settings)
        answerability.warm_up()
        if not answer_data.is_file():
            raise FileNotFoundError(
                f"{answer_data.relative_to(ROOT)} is not built (make models-answerability)"
            )
    except (VerityRAGError, OSError) as exc:
        out["answerability"] = {"skipped": str(exc)}
    else:
        answer_rows = []
        with gzip.open(answer_data, "rt", encoding="utf-8") as f:
            for line in f:
                answer_rows.append(json.loads(line))
                if len(answer_rows) >= args.n:
                    break
        out["answerability"] = _bench(answerability, [(r["question"], r["evidence"]) for r in answer_rows])
    RESULTS.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
