"""What each learned check costs: start-up, query latency and answers, with none, each one, and all three.

Each configuration is built the way `make run` builds its pipeline: the bundled corpus,
the reranker, then ``calibrate`` on the calibration questions, which fits the thresholds of
the checks the settings turn on (``VERITYRAG_*_CHECK``; the main eval's rule). The build is
timed (the start-up a user waits for). Then every test question is asked twice, a warm-up
pass and a timed one, one at a time. All configurations run in one process, one after the
other, so their ratios share the machine's state.

Prints, and writes to ``scripts/results/bench_learned_checks.json``: per configuration the
start-up seconds, query p50 / p95 and the p50 ratio to no checks, each check's own p50
(its trace stage), its threshold and where it came from, and coverage / in-domain
unanswerable abstention on the test split (the eval's figures, through the settings path).

Needs the models (`make models`); a missing one is named with the target that builds it.
``--configs`` measures a subset (e.g. only the answerability gate, where the guard and reader
models have not been built); "none" always runs, as the ratios' base, and the table names
the configurations left out.

    python scripts/bench_learned_checks.py [--questions 200] [--configs answerability,guard]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from verityrag import Settings, VerityRAGPipeline
from verityrag.checks.registry import CHECK_ATTRIBUTES
from verityrag.eval.benchmarks import learned_checks_table
from verityrag.pipeline import IN_MEMORY
from verityrag.serve.bundled import bundled_pipeline
from verityrag.serve.bundled_corpus import DEFAULT_DATA_DIR, EvalQuestion, load_questions

ROOT = Path(__file__).resolve().parents[1]

OUT = ROOT / "scripts" / "results" / "bench_learned_checks.json"
#: name -> the settings' check flags; "none" first (the ratios' base), "all" last.
CONFIGS: dict[str, tuple[str, ...]] = {
    "none": (),
    "answerability": ("answerability",),
    "guard": ("guard",),
    "reader": ("reader",),
    "all three": ("answerability", "guard", "reader"),
}


def settings_for(checks: tuple[str, ...]) -> Settings:
    """The default profile with ``checks`` on, from the model folders the environment names."""
    on = {f"{stage}_check": True for stage in checks}
    return Settings.profile("default").replace(**on, **Settings.from_env().model_dirs())


def _ms(samples: list[float]) -> dict[str, float | None]:
    if not samples:
        return {"p50": None, "p95": None}
    p50, p95 = np.percentile(samples, [50, 95])
    return {"p50": float(p50), "p95": float(p95)}


def measure(name: str, checks: tuple[str, ...], questions: list[EvalQuestion]) -> dict[str, Any]:
    t0 = time.perf_counter()
    pipeline = bundled_pipeline(
        factory=lambda: VerityRAGPipeline(settings=settings_for(checks), data_dir=IN_MEMORY)
    )
    startup_s = time.perf_counter() - t0
    for q in questions:  # warm-up: sessions, caches
        pipeline.query(q.question)
    total: list[float] = []
    stage_ms: dict[str, list[float]] = {stage: [] for stage in CHECK_ATTRIBUTES}
    answered = {"answerable": 0, "unanswerable_in_domain": 0}
    refused_by: dict[str, int] = {}
    for q in questions:
        t = time.perf_counter()
        result = pipeline.query(q.question)
        total.append((time.perf_counter() - t) * 1000)
        for step in result.trace:
            if step.stage in stage_ms:
                stage_ms[step.stage].append(step.duration_ms)
        if not result.abstained and q.kind in answered:
            answered[q.kind] += 1
        if result.abstained and result.abstain_reason is not None:
            reason = result.abstain_reason.value
            refused_by[reason] = refused_by.get(reason, 0) + 1
    n_kind = {kind: sum(q.kind == kind for q in questions) for kind in answered}
    return {
        "config": name,
        "checks": {stage: info for stage, info in pipeline.learned_checks().items()},
        "startup_s": startup_s,
        "query_ms": _ms(total),
        "check_ms_p50": {stage: _ms(ms)["p50"] for stage, ms in stage_ms.items() if stage in checks},
        "coverage": answered["answerable"] / n_kind["answerable"] if n_kind["answerable"] else None,
        "in_domain_unanswerable_abstention": (
            1 - answered["unanswerable_in_domain"] / n_kind["unanswerable_in_domain"]
            if n_kind["unanswerable_in_domain"]
            else None
        ),
        "abstentions_by_reason": dict(sorted(refused_by.items())),
    }


def chosen_configs(names: str | None) -> dict[str, tuple[str, ...]]:
    """The configurations to run: "none" first, then the named ones in table order."""
    if names is None:
        return dict(CONFIGS)
    wanted = {n.strip() for n in names.split(",") if n.strip()}
    unknown = wanted - set(CONFIGS)
    if unknown:
        raise SystemExit(f"unknown configuration(s) {sorted(unknown)}; known: {', '.join(CONFIGS)}")
    return {name: checks for name, checks in CONFIGS.items() if name == "none" or name in wanted}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--questions", type=int, default=0, help="first N test questions (0: all)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--configs", default=None, help=f"comma-separated subset of: {', '.join(CONFIGS)} (default: all)"
    )
    args = parser.parse_args(argv)
    configs = chosen_configs(args.configs)
    questions = load_questions(DEFAULT_DATA_DIR / "questions" / "test.jsonl")
    if args.questions > 0:
        questions = questions[: args.questions]
    runs = []
    for name, checks in configs.items():
        run = measure(name, checks, questions)
        print(
            f"{name}: start-up {run['startup_s']:.1f} s, p50 {run['query_ms']['p50']:.1f} ms, "
            f"checks {run['check_ms_p50']}",
            file=sys.stderr,
        )
        runs.append(run)
    data = {
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
        "questions": len(questions),
        "runs": runs,
        "configs_skipped": [name for name in CONFIGS if name not in configs],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(learned_checks_table(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
