"""RAGTruth-QA AUROC of Verity-Guard (and of any cross-encoder folder served raw).

Uses the loaders of verityrag.eval.ragtruth (829 QA responses, 160 with annotated
hallucination spans; premise = question + MS MARCO passages, hypothesis = response).
Scored two ways:

- ``LearnedGuard`` (how the agent calls it): each response sentence against the premise
  sentences most relevant to it (80 words), min over sentences;
- ``OnnxCrossEncoder`` raw (the NLIScorer contract the RAGTruth runner uses): the whole
  response against premise windows, max over windows (sentence split only when the
  response does not fit a window).

AUROC for flagging unsupported responses (score = 1 - P(supported)), on all 829 and on
the runner's report half (sha1(source_id) odd). Nothing is fitted on RAGTruth here.
RAGTruth is out of domain for a HaluEval-trained guard: long multi-passage premises
and long LLM responses.

    python scripts/guard_ragtruth.py [--folder guard_work/guard]   # -> scripts/results/crossenc_ragtruth.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from verityrag.checks.guard import LearnedGuard
from verityrag.errors import VerityRAGError
from verityrag.eval.metrics import auroc
from verityrag.eval.ragtruth import RAGTRUTH_PATH, load_ragtruth, split_ragtruth
from verityrag.models import OnnxCrossEncoder
from verityrag.verify.protocols import NLIScorer

ROOT = Path(__file__).resolve().parent.parent

RESULTS = ROOT / "scripts" / "results" / "crossenc_ragtruth.json"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--folder", type=Path, default=ROOT / "guard_work" / "guard")
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    if not args.folder.is_dir():
        p.error(f"--folder {args.folder}: {'not a folder' if args.folder.exists() else 'no such folder'}")
    if args.results.is_dir():
        p.error(f"--results {args.results} is a folder: give a file path")
    try:
        examples = load_ragtruth()  # a missing file raises InvalidInputError naming it
    except VerityRAGError as exc:
        p.error(str(exc))
    # gzip.BadGzipFile is an OSError, bad JSON a ValueError, a row without d1 / d2 / labels a KeyError.
    except (OSError, EOFError, ValueError, KeyError) as exc:
        p.error(f"{RAGTRUTH_PATH}: not readable RAGTruth-QA data ({type(exc).__name__}: {exc})")
    _, report_half = split_ragtruth(examples)
    report_ids = {id(e) for e in report_half}
    pairs = [(e.premise, e.hypothesis) for e in examples]
    flags = [e.unsupported for e in examples]
    out: dict[str, Any] = {
        "command": " ".join(sys.argv),
        "model_folder": str(
            args.folder.relative_to(ROOT) if args.folder.is_relative_to(ROOT) else args.folder
        ),
        "responses": len(examples),
        "unsupported": sum(flags),
    }
    guard = LearnedGuard(model_dir=args.folder)
    try:
        # The files only (both scorers serve the same ones): loading stays in the timed loop below.
        guard.scorer.check_files()
    except VerityRAGError as exc:  # a missing file: the message names it and the make target
        p.error(str(exc))
    scorers: dict[str, NLIScorer] = {
        "learned_guard_sentences_trimmed": guard,
        "onnx_raw_windows": OnnxCrossEncoder(args.folder, what="guard"),
    }
    for name, scorer in scorers.items():
        t0 = time.perf_counter()
        scores: list[float] = []
        for b in range(0, len(pairs), 32):
            scores += scorer.score_pairs(pairs[b : b + 32])
        seconds = time.perf_counter() - t0
        detector = [1 - s for s in scores]
        half = [(d, f) for d, f, e in zip(detector, flags, examples, strict=True) if id(e) in report_ids]
        out[name] = {
            "auroc_all_829": auroc(detector, flags),
            "auroc_report_half": auroc([d for d, _ in half], [f for _, f in half]),
            "report_half_responses": len(half),
            "ms_per_response": 1000 * seconds / len(pairs),
        }
        print(name, json.dumps(out[name]))
    try:
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        p.error(f"--results {args.results}: cannot write ({exc.strerror or exc})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
