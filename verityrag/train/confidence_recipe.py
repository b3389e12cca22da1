"""Recipe: the confidence model a fresh pipeline starts with (verityrag/resources/confidence.json).

A pipeline that has not been calibrated answers with the shipped sufficiency gate and the
shipped reader; its ``confidence`` must still be the probability that a reply is right
(:mod:`verityrag.agent.confidence`). This recipe asks every question of the bundled corpus's
calibration split (answerable, held-out-topic and in-domain unanswerable) of such a pipeline,
uncalibrated and without the reranker, on the bundled corpus, and fits the model on its replies.
``calibrate`` replaces it with one fitted on the caller's questions. ``--domains DIR`` adds the
replies of each user domain of DIR asked alone (every kind; a conflict is right when reported),
so that the probability holds for a handful of documents as for 605 articles.

    python -m verityrag.train confidence
    python -m verityrag.train confidence --domains ../shared/domains/train
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

from verityrag import VerityRAGPipeline
from verityrag.agent.confidence import SHIPPED_PATH, ConfidenceModel, ReplyRow, reply_row, reply_scores
from verityrag.eval.domains import Domain, load_domains, score_reply
from verityrag.pipeline import IN_MEMORY
from verityrag.serve.bundled_corpus import DEFAULT_DATA_DIR, load_corpus, load_questions
from verityrag.train._common import add_domains_argument, check_domains, recipe_parser
from verityrag.types import AbstainReason


def main(argv: Sequence[str] | None = None) -> int:
    parser = recipe_parser("confidence", __doc__)
    parser.add_argument("--out", type=Path, default=SHIPPED_PATH)
    add_domains_argument(parser)
    args = parser.parse_args(argv)
    check_domains(parser, args.domains)
    started = time.perf_counter()
    pipeline = VerityRAGPipeline(data_dir=IN_MEMORY)
    if pipeline.reader is None:
        parser.error("the reader is off in the VERITYRAG_* settings: the shipped model is fitted with it on")
    pipeline.ingest_documents(load_corpus(DEFAULT_DATA_DIR / "corpus.jsonl"))
    questions = load_questions(DEFAULT_DATA_DIR / "questions" / "calibration.jsonl")
    # As calibrate() fits it, on this uncalibrated pipeline's replies.
    rows = [reply_row(pipeline.query(q.question), q.answers) for q in questions]
    sources = {"bundled corpus": len(rows)}
    for folder in args.domains:
        for domain in load_domains(folder):
            rows += _domain_rows(domain)
        sources[f"domains {folder.name}"] = len(rows) - sum(sources.values())
    model = ConfidenceModel.fit(rows)
    answers = [r for r in rows if r.answered]
    summary = {
        "questions": len(rows),
        "sources": sources,
        "answers": len(answers),
        "answers_right": sum(r.right for r in answers),
        "refusals_right": sum(r.right for r in rows if not r.answered),
        "domains": [str(folder) for folder in args.domains],  # as given (the test refits with them)
    }
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


def _domain_rows(domain: Domain) -> list[ReplyRow]:
    """The replies to every question of ``domain`` asked of a fresh pipeline holding it alone, each
    right or not by its kind (:func:`verityrag.eval.domains.score_reply`)."""
    pipeline = VerityRAGPipeline(data_dir=IN_MEMORY)
    pipeline.ingest_documents([d.parsed() for d in domain.documents], progress=False)
    rows = []
    for q in domain.questions:
        result = pipeline.query(q.question)
        gate_probability, reader_logit = reply_scores(result)
        right = score_reply(domain.name, q, result, 0.0).right  # as the benchmark scores it
        conflict = result.abstain_reason is AbstainReason.CONFLICT
        rows.append(ReplyRow(not result.abstained, gate_probability, reader_logit, right, conflict))
    pipeline.close()
    return rows
