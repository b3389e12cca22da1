"""Recipe: the sufficiency gate that ships with the package (verityrag/resources/sufficiency_gate.json).

It is fitted on the bundled corpus's calibration split (answerable and
held-out-topic questions; the in-domain unanswerable ones are kept out), after
training the ICT reranker, exactly as ``python -m verityrag.eval`` does. Its
features are ratios, so it transfers to a user's fresh corpus until
``pipeline.calibrate(...)`` refits it on their questions. It is fitted with the reader off, so it
takes none of the reader's features and serves pipelines with the reader on or off
(``calibrate`` on a pipeline with the reader refits it with them).

    python -m verityrag.train gate
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

from verityrag import VerityRAGPipeline
from verityrag.config import Settings
from verityrag.models.folder import RESOURCES_DIR
from verityrag.pipeline import IN_MEMORY
from verityrag.serve.bundled_corpus import DEFAULT_DATA_DIR, load_corpus, load_questions
from verityrag.train._common import recipe_parser

OUT = RESOURCES_DIR / "sufficiency_gate.json"


def main(argv: Sequence[str] | None = None) -> int:
    parser = recipe_parser("gate", __doc__)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    pipeline = VerityRAGPipeline(data_dir=IN_MEMORY, settings=Settings(reader=False))
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
