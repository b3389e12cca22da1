"""Probe Verity-Guard with hand-written cases that separate what it checks from shortcuts.

Each probe is (evidence, answer, expected supported?). The interesting rows are the
pairs that differ in one thing: a swapped number or name, a negation, a paraphrase,
a short vs a full-sentence answer. Prints the scores and writes
scripts/results/crossenc_guard_probe.json. Not a benchmark: 16 cases.

    python scripts/guard_probe.py
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from verityrag.checks.guard import BUILD_GUARD, LearnedGuard
from verityrag.config import Settings
from verityrag.errors import VerityRAGError

ROOT = Path(__file__).resolve().parent.parent

RESULTS = ROOT / "scripts" / "results" / "crossenc_guard_probe.json"
TESLA = (
    "Nikola Tesla was born on 10 July 1856 in Smiljan, in the Austrian Empire. "
    "He emigrated to the United States in 1884 and worked for Thomas Edison in New York. "
    "He later developed the alternating current induction motor."
)
RHINE = (
    "The Rhine rises in the Swiss Alps and flows 1,230 km to the North Sea. "
    "It forms part of the border between Switzerland and Germany."
)
PROBES = [
    ("short, right", TESLA, "1856", True),
    ("short, wrong year", TESLA, "1865", False),
    ("short, right place", TESLA, "Smiljan", True),
    ("short, wrong place", TESLA, "Vienna", False),
    ("sentence, verbatim", TESLA, "He emigrated to the United States in 1884.", True),
    ("sentence, swapped year", TESLA, "He emigrated to the United States in 1894.", False),
    ("sentence, paraphrase", TESLA, "Tesla moved to America in 1884, where he worked for Edison.", True),
    (
        "sentence, wrong employer",
        TESLA,
        "Tesla moved to America in 1884, where he worked for Westinghouse.",
        False,
    ),
    ("sentence, negation", TESLA, "Tesla never worked for Thomas Edison.", False),
    ("sentence, unrelated claim", TESLA, "Tesla won the Nobel Prize in Physics in 1915.", False),
    ("sentence, right length", RHINE, "The Rhine is 1,230 km long.", True),
    ("sentence, wrong length", RHINE, "The Rhine is 2,130 km long.", False),
    ("sentence, right source", RHINE, "The river rises in the Swiss Alps.", True),
    ("sentence, wrong source", RHINE, "The river rises in the Black Forest.", False),
    ("two sentences, both supported", RHINE, "The Rhine rises in the Alps. It flows to the North Sea.", True),
    ("two sentences, one wrong", RHINE, "The Rhine rises in the Alps. It flows to the Black Sea.", False),
]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.parse_args(argv)  # no options: --help only, before any model is loaded
    guard = LearnedGuard.from_settings(Settings.from_env())  # VERITYRAG_GUARD_DIR, else the models root's
    try:
        guard.warm_up()
    except VerityRAGError as exc:
        # A missing folder's message already names the make target; other load errors may not.
        hint = "" if BUILD_GUARD in str(exc) else f" (build it with `{BUILD_GUARD}`)"
        p.error(f"{exc}{hint}")
    rows: list[dict[str, Any]] = []
    for name, evidence, answer, expected in PROBES:
        score = guard.score(evidence, answer)
        rows.append(
            {"probe": name, "answer": answer, "expected_supported": expected, "score": round(score, 4)}
        )
        verdict = "ok " if (score >= guard.threshold) == expected else "MISS"
        print(f"{verdict} {score:.3f}  {name}: {answer}")
    correct = sum((r["score"] >= guard.threshold) == r["expected_supported"] for r in rows)
    summary = {"threshold": guard.threshold, "correct": correct, "probes": len(rows), "rows": rows}
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(f"{correct}/{len(rows)} probes decided as expected at threshold {guard.threshold:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
