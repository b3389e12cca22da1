"""Recipe: the confidence model a fresh pipeline starts with (verityrag/resources/confidence.json).

A pipeline that has not been calibrated answers with the shipped sufficiency gate and the
shipped reader; its ``confidence`` must still be the probability that a reply is right
(:mod:`verityrag.agent.confidence`). This recipe asks every question of the bundled corpus's
calibration split (answerable, held-out-topic and in-domain unanswerable) of such a pipeline,
uncalibrated and without the reranker, on the bundled corpus, and fits the model on its replies.
``calibrate`` replaces it with one fitted on the caller's questions.

    python -m verityrag.train confidence
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

from verityrag import VerityRAGPipeline
from verityrag.agent.calibration import fit_confidence
from verityrag.agent.confidence import SHIPPED_PATH
from verityrag.pipeline import IN_MEMORY
from verityrag.serve.bundled_corpus import DEFAULT_DATA_DIR, load_corpus, load_questions
from verityrag.train._common import recipe_parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = recipe_parser("confidence", __doc__)
    parser.add_argument("--out", type=Path, default=SHIPPED_PATH)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    pipeline = VerityRAGPipeline(data_dir=IN_MEMORY)
    if pipeline.reader is None:
        parser.error("the reader is off in the VERITYRAG_* settings: the shipped model is fitted with it on")
    pipeline.ingest_documents(load_corpus(DEFAULT_DATA_DIR / "corpus.jsonl"))
    questions = load_questions(DEFAULT_DATA_DIR / "questions" / "calibration.jsonl")
    # As calibrate() fits it, on this uncalibrated pipeline's replies.
    model, fit = fit_confidence(pipeline.query, [(q.question, q.answers) for q in questions])
    summary = {k: v for k, v in fit.items() if k != "model"}
    data = {
        **model.to_dict(),
        "trained_on": {
            "data": "data/questions/calibration.jsonl (every kind), the bundled corpus, uncalibrated",
            "date": time.strftime("%Y-%m-%d"),
            **summary,
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=1))
    print(f"written {args.out} in {time.perf_counter() - started:.1f} s")
    return 0
