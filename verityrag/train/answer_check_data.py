"""Recipe: the answer check's (question and answer, quoted sentence) -> right pairs.

The first text is the question with an answer (:func:`~verityrag.checks.answer_check.answer_statement`),
the second the sentence(s) holding that answer: what the user is shown.

- SQuAD 2.0 (the train prefix and dev ``split_a`` less the validation articles):
  ``answerable`` (1): a question, its gold answer, the sentence holding it;
  ``unanswerable`` (0): an unanswerable question with its ``plausible_answers`` span (the one
  a reader would wrongly give), the sentence holding it; the reconstructed dev file carries no
  plausible answers (only the train prefix's 348 unanswerables do), so there the shipped
  reader's own best span stands in for them;
  ``other_answer`` (0): for a share of the answerable questions, another question's answer from
  the same paragraph that shares no word with the gold one (a nearby fact), its sentence.
- SQuAD v1.0 train, the first ``--v1-articles`` articles (none a dev article): ``answerable``
  and ``other_answer`` as above.
- User domains (``--domains DIR``: the format of ``../shared/domains``; the ``train`` domains
  and others written the same way, never ``dev`` or ``test``), each asked of a pipeline holding
  it alone with the reader's threshold open, so every span the reader finds is answered:
  ``domain_answerable`` (1): the reader's right short answer with its quoted sentences, and the
  gold answer's own sentence; ``domain_wrong_span`` (0): its wrong span for an answerable
  question; ``domain_<kind>`` (0): its span for a question that must be refused (another entity,
  a false premise, the same topic ...).
- validation (the threshold): the answerability gate's two validation articles; test: dev
  ``split_b`` (never trained on).

    python -m verityrag.train answer-check-data --domains ../shared/domains/train
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from verityrag import datasets
from verityrag.checks.answer_check import ANSWER_CHECK_TRAINING_DIR, answer_statement
from verityrag.eval.domains import ANSWERABLE, REFUSE_KINDS, Domain, load_domains
from verityrag.text.answers import answer_tokens, contains_gold
from verityrag.text.sentences import holding, sentence_spans
from verityrag.train._common import (
    add_domains_argument,
    add_seed_and_out,
    load_squad,
    model_dir,
    recipe_parser,
)
from verityrag.train.domain_reader_data import find_answer
from verityrag.train.model_build import VALIDATION_TITLES, add_squad_arguments, write_pairs
from verityrag.train.reader_data import eval_titles

Pair = dict[str, Any]


def pair(question: str, answer: str, sentences: str, label: int, kind: str, title: str, source: str) -> Pair:
    return {
        "question": answer_statement(question, answer),
        "evidence": " ".join(sentences.split()),
        "label": label,
        "kind": kind,
        "title": title,
        "source": source,
    }


def sentences_at(text: str, start: int, end: int) -> str:
    """The sentence(s) of ``text`` holding ``text[start:end]``."""
    spans = sentence_spans(text)
    held = holding(spans, start, end)
    return text[spans[held[0]][0] : spans[held[-1]][1]] if held else text


def _shares_a_word(a: str, b: str) -> bool:
    return bool(set(answer_tokens(a)) & set(answer_tokens(b)))


def reader_spans(articles: Sequence[dict[str, Any]], batch: int = 32) -> dict[str, dict[str, Any]]:
    """The shipped reader's best span for each unanswerable question of ``articles`` that carries
    no ``plausible_answers`` (the reconstructed SQuAD 2.0 dev file has none), by question id: the
    span a reader would wrongly give, as the annotators' plausible answers are."""
    from verityrag.models.hf_reader import open_reader

    asked = [
        (qa["id"], qa["question"], para["context"])
        for article in articles
        for para in article["paragraphs"]
        for qa in para["qas"]
        if (qa.get("is_impossible") or not qa.get("answers")) and not qa.get("plausible_answers")
    ]
    if not asked:
        return {}
    reader = open_reader(None)
    found: dict[str, dict[str, Any]] = {}
    for i in tqdm(range(0, len(asked), batch), desc="answer-check data: reader spans", unit="batch"):
        part = asked[i : i + batch]
        for (qid, _, _), result in zip(
            part, reader.read_batch([(q, c) for _, q, c in part], k=1), strict=True
        ):
            best = result.best
            if best is not None and best.text.strip():
                found[qid] = {"text": best.text, "answer_start": best.start}
    return found


def squad_pairs(
    article: dict[str, Any],
    source: str,
    other_share: float,
    rng: random.Random,
    wrong_spans: dict[str, dict[str, Any]] | None = None,
) -> Iterator[Pair]:
    """One SQuAD article's pairs (see the module docstring); ``wrong_spans``: the reader's spans
    for unanswerable questions without plausible answers (:func:`reader_spans`)."""
    title = article["title"]
    for para in article["paragraphs"]:
        context = para["context"]
        answered = [
            qa["answers"][0] for qa in para["qas"] if not qa.get("is_impossible") and qa.get("answers")
        ]
        for qa in para["qas"]:
            question = qa["question"]
            if qa.get("is_impossible") or not qa.get("answers"):
                given = qa.get("plausible_answers") or [
                    span for span in [(wrong_spans or {}).get(qa.get("id", ""))] if span is not None
                ]
                for plausible in given[:1]:
                    start = plausible["answer_start"]
                    text = plausible["text"]
                    yield pair(
                        question,
                        text,
                        sentences_at(context, start, start + len(text)),
                        0,
                        "unanswerable",
                        title,
                        source,
                    )
                continue
            gold = qa["answers"][0]
            golds = [a["text"] for a in qa["answers"]]
            start = gold["answer_start"]
            yield pair(
                question,
                gold["text"],
                sentences_at(context, start, start + len(gold["text"])),
                1,
                "answerable",
                title,
                source,
            )
            others = [a for a in answered if not any(_shares_a_word(a["text"], g) for g in golds)]
            if others and rng.random() < other_share:
                other = rng.choice(others)
                at = other["answer_start"]
                held = sentences_at(context, at, at + len(other["text"]))
                yield pair(question, other["text"], held, 0, "other_answer", title, source)


def domain_pairs(domain: Domain) -> Iterator[Pair]:
    """``domain``'s questions asked of a pipeline holding it alone, the reader's threshold open."""
    from verityrag.pipeline import IN_MEMORY, VerityRAGPipeline

    pipeline = VerityRAGPipeline(data_dir=IN_MEMORY)
    documents = {d.doc_id: d.parsed() for d in domain.documents}
    pipeline.ingest_documents(list(documents.values()), progress=False)
    ask = pipeline.reader_open_query()
    source = "user-domains"
    for q in domain.questions:
        if q.kind != ANSWERABLE and q.kind not in REFUSE_KINDS:
            continue
        result = ask(q.question)
        short = result.short_answer
        said = " ".join(s.text for s in result.sentences)
        if not result.abstained and short is not None and said:
            if q.kind == ANSWERABLE:
                right = contains_gold(short.text, list(q.answers))
                kind = "domain_answerable" if right else "domain_wrong_span"
                yield pair(q.question, short.text, said, int(right), kind, domain.name, source)
            else:
                yield pair(q.question, short.text, said, 0, f"domain_{q.kind}", domain.name, source)
        if q.kind == ANSWERABLE:  # the gold answer's own sentence, whatever the reader found
            for doc_id in q.doc_ids[:1]:
                text = documents[doc_id].text
                found = find_answer(text, q.answers)
                if found is not None:
                    start = found["answer_start"]
                    held = sentences_at(text, start, start + len(found["text"]))
                    yield pair(q.question, found["text"], held, 1, "domain_answerable", domain.name, source)
    pipeline.close()


def main(argv: Sequence[str] | None = None) -> int:
    p = recipe_parser("answer-check-data", __doc__)
    add_squad_arguments(p)
    add_domains_argument(p)
    p.add_argument("--v1-articles", type=int, default=60, help="SQuAD v1.0 train articles to read")
    p.add_argument(
        "--other-share", type=float, default=0.5, help="share of answerable questions given an other_answer"
    )
    p.add_argument("--domain-repeat", type=int, default=2, help="times the domain pairs are repeated")
    add_seed_and_out(p, model_dir(ANSWER_CHECK_TRAINING_DIR.name) / "data")
    args = p.parse_args(argv)
    if any(folder.name == "test" for folder in args.domains):
        p.error("the test domains measure; they are never trained on")
    rng = random.Random(args.seed)
    squad = load_squad(args)
    v1 = datasets.load_json(datasets.SQUAD_V1_TRAIN)["data"][: args.v1_articles]
    leaked = {a["title"] for a in v1} & eval_titles()
    if leaked:
        raise AssertionError(f"answer-check training would read evaluation articles: {sorted(leaked)}")
    split_a = [squad.dev[t] for t in [*squad.split_a_train_titles, *VALIDATION_TITLES]]
    split_b = [squad.dev[t] for t in squad.split["split_b_titles"]]
    wrong = reader_spans([*squad.train_prefix, *split_a, *split_b])
    train: list[Pair] = []
    for article in squad.train_prefix:
        train += squad_pairs(article, "squad2-train-prefix", args.other_share, rng, wrong)
    for t in squad.split_a_train_titles:
        train += squad_pairs(squad.dev[t], "squad2-dev-split_a", args.other_share, rng, wrong)
    for article in v1:
        train += squad_pairs(article, "squad1-train", args.other_share, rng)
    domains = [d for folder in args.domains for d in load_domains(folder)]
    from_domains: list[Pair] = []
    for domain in tqdm(domains, desc="answer-check data: user domains", unit="domain"):
        from_domains += domain_pairs(domain)
    train += from_domains * args.domain_repeat
    validation = [
        r for t in VALIDATION_TITLES for r in squad_pairs(squad.dev[t], "squad2-dev-split_a", 1.0, rng, wrong)
    ]
    test = [r for a in split_b for r in squad_pairs(a, "squad2-dev-split_b", 1.0, rng, wrong)]
    rng.shuffle(train)
    # train.jsonl.gz last: a recipe that finds it takes the set as written.
    for name, rows in (("validation", validation), ("test", test), ("train", train)):
        write_pairs(Path(args.out) / f"{name}.jsonl.gz", rows)
        kinds = dict(sorted(Counter(r["kind"] for r in rows).items()))
        print(f"{name}: {len(rows)} pairs {kinds}")
    return 0
