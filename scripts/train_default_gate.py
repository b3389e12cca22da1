"""Fit the sufficiency gate that ships with the package (verityrag/resources/sufficiency_gate.json).

It is fitted on the bundled corpus's calibration split (answerable and
held-out-topic questions; the in-domain unanswerable ones are kept out), after
training the ICT reranker, exactly as ``python -m verityrag.eval`` does. Its
features are ratios, so it transfers to a user's fresh corpus until
``pipeline.calibrate(...)`` refits it on their questions.

    python scripts/train_default_gate.py
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verityrag import VerityRAGPipeline  # noqa: E402
from verityrag.eval.dataset import DEFAULT_DATA_DIR, load_corpus, load_questions  # noqa: E402
from verityrag.pipeline import IN_MEMORY  # noqa: E402

OUT = ROOT / "verityrag" / "resources" / "sufficiency_gate.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    pipeline = VerityRAGPipeline(data_dir=IN_MEMORY)
    pipeline.ingest_documents(load_corpus(DEFAULT_DATA_DIR / "corpus.jsonl"))
    pipeline.train_reranker(seed=args.seed)
    questions = [
        q
        for q in load_questions(DEFAULT_DATA_DIR / "questions" / "calibration.jsonl")
        if q.kind != "unanswerable_in_domain"
    ]
    summary = pipeline.calibrate([(q.question, q.answers) for q in questions])
    data = pipeline.gate.to_dict()
    data["trained_on"] = {
        "data": "data/questions/calibration.jsonl (answerable + held_out)",
        "date": time.strftime("%Y-%m-%d"),
        "seed": args.seed,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data), encoding="utf-8")
    print(json.dumps(summary, indent=1))
    print(f"written {args.out} in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
