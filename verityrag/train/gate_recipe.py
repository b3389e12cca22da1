"""Recipe: the sufficiency gate that ships with the package (verityrag/resources/sufficiency_gate.json).

It is fitted on the bundled corpus's calibration split (answerable and
held-out-topic questions; the in-domain unanswerable ones are kept out), after
training the ICT reranker, exactly as ``python -m verityrag.eval`` does. Its
features are ratios, so it transfers to a user's fresh corpus until
``pipeline.calibrate(...)`` refits it on their questions. It is fitted with the reader off, so it
takes none of the reader's features and serves pipelines with the reader on or off
(``calibrate`` on a pipeline with the reader refits it with them).

A user's corpus may be ten documents or a hundred thousand; fitted on one 605-article corpus the
gate refused most questions asked of ten. ``--articles-alone`` adds every calibration question
asked of its own article alone (a corpus of one article's paragraphs; each held-out question asked
of one article it is not about), and ``--domains DIR`` the user domains of DIR each asked alone
(answerable questions, and chit-chat and off-topic ones to refuse; the on-topic unanswerable kinds
are the reader's to refuse, as the in-domain ones are left out here): one gate fitted on all of
those rows (without the reformulation check, which runs on one corpus).

    python -m verityrag.train gate
    python -m verityrag.train gate --articles-alone --domains ../shared/domains/train
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from verityrag import VerityRAGPipeline
from verityrag.agent.calibration import gate_rows
from verityrag.agent.sufficiency import GATE_FEATURES, SufficiencyGate
from verityrag.config import Settings
from verityrag.models.folder import RESOURCES_DIR
from verityrag.pipeline import IN_MEMORY
from verityrag.serve.bundled_corpus import DEFAULT_DATA_DIR, load_corpus, load_questions
from verityrag.train._common import add_domains_argument, check_domains, recipe_parser
from verityrag.types import Document

OUT = RESOURCES_DIR / "sufficiency_gate.json"


def main(argv: Sequence[str] | None = None) -> int:
    parser = recipe_parser("gate", __doc__)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--articles-alone", action="store_true", help="add each question asked of its article alone"
    )
    add_domains_argument(parser)
    args = parser.parse_args(argv)
    check_domains(parser, args.domains)
    if args.articles_alone or args.domains:
        return _fit_spread(args)
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


Rows = tuple[list[list[float]], list[bool], list[bool]]


def _add(rows: Rows, more: Rows) -> None:
    rows[0].extend(more[0])
    rows[1].extend(more[1])
    rows[2].extend(more[2])


def _asked_alone(
    documents: list[Document], labelled: list[tuple[str, tuple[str, ...]]], settings: Settings
) -> Rows:
    pipeline = VerityRAGPipeline(data_dir=IN_MEMORY, settings=settings)
    pipeline.ingest_documents(documents, progress=False)
    rows = gate_rows(pipeline.new_controller(), labelled, settings.gate_label)
    pipeline.close()
    return rows


def _fit_spread(args: argparse.Namespace) -> int:
    """The gate fitted on the bundled corpus, each article alone and each user domain alone."""
    from verityrag.eval.domains import ANSWERABLE, load_domains

    started = time.perf_counter()
    settings = Settings(reader=False)
    rng = random.Random(args.seed)
    corpus = load_corpus(DEFAULT_DATA_DIR / "corpus.jsonl")
    questions = [
        q
        for q in load_questions(DEFAULT_DATA_DIR / "questions" / "calibration.jsonl")
        if q.kind != "unanswerable_in_domain"
    ]
    rows: Rows = ([], [], [])
    sources: dict[str, int] = {}
    _add(rows, _asked_alone(corpus, [(q.question, q.answers) for q in questions], settings))
    sources["bundled corpus"] = len(questions)
    if args.articles_alone:
        by_article: dict[str, list[Document]] = defaultdict(list)
        for doc in corpus:
            by_article[doc.doc_id.rsplit("-", 1)[0]].append(doc)
        source_of = {}
        for line in (
            (DEFAULT_DATA_DIR / "questions" / "calibration.jsonl").read_text(encoding="utf-8").splitlines()
        ):
            row = json.loads(line)
            source_of[row["id"]] = str(row.get("source_doc_id") or "").rsplit("-", 1)[0]
        asked: dict[str, list[tuple[str, tuple[str, ...]]]] = defaultdict(list)
        for q in questions:
            if q.answers and source_of.get(q.id) in by_article:
                asked[source_of[q.id]].append((q.question, q.answers))
        articles = sorted(asked)
        for q in questions:
            if not q.answers:  # a held-out question, asked of one article it is not about
                asked[rng.choice(articles)].append((q.question, ()))
        for article in articles:
            _add(rows, _asked_alone(by_article[article], asked[article], settings))
        sources["articles alone"] = sum(len(v) for v in asked.values())
    for folder in args.domains:
        for domain in load_domains(folder):
            labelled = [
                (q.question, q.answers if q.kind == ANSWERABLE else ())
                for q in domain.questions
                if q.kind in (ANSWERABLE, "chit_chat", "off_topic")
            ]
            _add(rows, _asked_alone([d.parsed() for d in domain.documents], labelled, settings))
            sources[f"domains {folder.name}"] = sources.get(f"domains {folder.name}", 0) + len(labelled)
    features, correct, must_abstain = rows
    gate = SufficiencyGate(abstention_target=settings.abstention_target, features=GATE_FEATURES).fit(
        features, correct, must_abstain
    )
    gate.fit_summary_["reformulation"] = {"used": True, "checked": False}
    data = gate.to_dict()
    data["trained_on"] = {
        "data": sources,
        "date": time.strftime("%Y-%m-%d"),
        "seed": args.seed,
    }
    out: Path = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data), encoding="utf-8")
    print(json.dumps({k: v for k, v in gate.fit_summary_.items()}, indent=1, default=str))
    print(f"{sources}; written {out} in {time.perf_counter() - started:.1f} s")
    return 0
