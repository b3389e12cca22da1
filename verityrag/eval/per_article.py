"""Each SQuAD 2.0 dev article of ``split_b`` as a corpus of its own (``python -m verityrag.eval --per-article``).

A user's first corpus is small: a handful of documents on one topic, asked questions that
look answerable whether or not the documents hold the answer. The main eval asks its questions
of 605 articles at once, with the gates fitted on its calibration split; this one asks what a
decision is worth when the corpus is one article and nothing was fitted on it:

- a fresh pipeline per article (shipped defaults, in memory; no reranker training, no
  calibration: what ``VerityRAGPipeline()`` gives a new user), its paragraphs as documents;
- every question of the article asked: SQuAD 2.0's answerable ones (right when the answer
  holds a gold answer) and its unanswerable ones, written by crowd workers against the same
  paragraphs to look answerable (right when refused);
- pooled over the articles: coverage, answered-and-correct, in-domain unanswerable abstention,
  accuracy of all answers (right answers over all answers given), the reasons for refusals and
  latency; and the same per article, to see how a decision moves with the topic.

``split_b``'s 19 articles are never trained on by any model shipped here nor used to choose a
setting (``verityrag.train.reader_data`` asserts it for the reader).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from verityrag import datasets
from verityrag.agent.confidence import reply_right
from verityrag.config import Settings
from verityrag.eval.metrics import auroc, contains_gold, percentiles, rate, reliability
from verityrag.types import Document

#: Where ``--per-article`` writes its report unless ``--out`` is given.
DEFAULT_OUT = "eval_report_per_article.json"


@dataclass(frozen=True, slots=True)
class ArticleQuestion:
    question: str
    answers: tuple[str, ...]  # empty: SQuAD 2.0 marks it unanswerable from the article


@dataclass(frozen=True, slots=True)
class Article:
    title: str
    paragraphs: tuple[str, ...]
    questions: tuple[ArticleQuestion, ...]

    def documents(self) -> list[Document]:
        """The article's paragraphs, one document each, titled with the article's title."""
        readable = self.title.replace("_", " ")
        # Titles hold characters a document id may not ("Sky_(United_Kingdom)").
        stem = re.sub(r"[^A-Za-z0-9_:-]+", "_", self.title).strip("_") or "article"
        return [Document(f"{stem}-{i:03d}", readable, text) for i, text in enumerate(self.paragraphs)]


#: Which articles: ``test`` (split_b, never used to choose anything) or ``validation`` (the reader's
#: two validation articles of split_a: where a setting may be chosen).
ARTICLE_SETS = ("test", "validation")


def article_titles(article_set: str = "test") -> list[str]:
    """The titles of ``article_set`` (see :data:`ARTICLE_SETS`), in order."""
    if article_set == "validation":
        return list(datasets.READER_VALIDATION_TITLES)
    if article_set != "test":
        raise ValueError(f"article_set must be one of {ARTICLE_SETS}, got {article_set!r}")
    return list(datasets.load_json(datasets.SQUAD_V2_SPLIT)["split_b_titles"])


def load_articles(max_articles: int | None = None, article_set: str = "test") -> list[Article]:
    """SQuAD 2.0 dev's articles of ``article_set`` from the datasets root, in the split's order."""
    dev = {a["title"]: a for a in datasets.load_json(datasets.SQUAD_V2_DEV)["data"]}
    articles = []
    for title in article_titles(article_set)[:max_articles]:
        article = dev[title]
        questions = [
            ArticleQuestion(
                qa["question"],
                () if qa.get("is_impossible") else tuple(dict.fromkeys(a["text"] for a in qa["answers"])),
            )
            for p in article["paragraphs"]
            for qa in p["qas"]
        ]
        articles.append(Article(title, tuple(p["context"] for p in article["paragraphs"]), tuple(questions)))
    return articles


@dataclass(frozen=True, slots=True)
class Outcome:
    answerable: bool
    answered: bool
    correct: bool  # an answer holding a gold answer (never, for an unanswerable question)
    reason: str | None
    latency_ms: float
    confidence: float  # the reply's: P(it is right)

    @property
    def right(self) -> bool:
        """A right answer, or a refusal of a question the article does not answer."""
        return reply_right(self.answered, self.correct, self.answerable)

    @property
    def answer_due(self) -> float:
        """The final decision's score that an answer is due: an answer's confidence, one less a
        refusal's (P(refusing was wrong))."""
        return self.confidence if self.answered else 1.0 - self.confidence


def ask_article(
    article: Article, settings: Settings, max_questions: int | None = None
) -> tuple[list[Outcome], float]:
    """The article's questions asked of a fresh pipeline holding it alone; and its ingest seconds."""
    from verityrag.pipeline import IN_MEMORY, VerityRAGPipeline

    pipeline = VerityRAGPipeline(settings=settings, data_dir=IN_MEMORY)
    t0 = time.perf_counter()
    pipeline.ingest_documents(article.documents(), progress=False)
    ingest_s = time.perf_counter() - t0
    outcomes = []
    for q in article.questions[:max_questions]:
        q0 = time.perf_counter()
        result = pipeline.query(q.question)
        latency = (time.perf_counter() - q0) * 1000
        answered = not result.abstained
        correct = answered and bool(q.answers) and contains_gold(result.answer or "", q.answers)
        reason = result.abstain_reason.value if result.abstain_reason else None
        outcomes.append(Outcome(bool(q.answers), answered, correct, reason, latency, result.confidence))
    return outcomes, ingest_s


def summarise(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Coverage, answered-and-correct, abstention on the unanswerable ones, accuracy of all answers."""
    answerable = [o for o in outcomes if o.answerable]
    unanswerable = [o for o in outcomes if not o.answerable]
    answers = [o for o in outcomes if o.answered]
    return {
        "questions": len(outcomes),
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "coverage": rate(sum(o.answered for o in answerable), len(answerable)),
        "answered_and_correct": rate(sum(o.correct for o in answerable), len(answerable)),
        "unanswerable_abstention": rate(sum(not o.answered for o in unanswerable), len(unanswerable)),
        "accuracy_of_all_answers": rate(sum(o.correct for o in answers), len(answers)),
        "abstain_reasons": {
            "answerable": dict(Counter(o.reason for o in answerable if o.reason)),
            "unanswerable": dict(Counter(o.reason for o in unanswerable if o.reason)),
        },
    }


def _decision_auroc(outcomes: Sequence[Outcome]) -> float | None:
    labels = [int(o.answerable) for o in outcomes]
    return auroc([o.answer_due for o in outcomes], labels) if 0 < sum(labels) < len(labels) else None


def run_per_article(
    settings: Settings,
    max_articles: int | None = None,
    max_questions: int | None = None,
    progress: bool = True,
    article_set: str = "test",
) -> dict[str, Any]:
    """The report: pooled figures, per-article figures and latency (see the module docstring)."""
    from tqdm.auto import tqdm

    started = time.perf_counter()
    articles = load_articles(max_articles, article_set)
    pooled: list[Outcome] = []
    per_article: dict[str, Any] = {}
    for article in tqdm(articles, desc="per-article eval", unit="article", disable=not progress):
        outcomes, ingest_s = ask_article(article, settings, max_questions)
        pooled += outcomes
        per_article[article.title] = {
            **summarise(outcomes),
            "documents": len(article.paragraphs),
            "ingest_seconds": round(ingest_s, 3),
        }
    return {
        "kind": "per_article",
        "data": f"SQuAD 2.0 dev {'split_b' if article_set == 'test' else 'validation'} ({len(articles)} "
        "articles), each article a corpus of its own",
        "article_set": article_set,
        "settings": {**dataclasses.asdict(settings), "calibrated": False},
        "metrics": summarise(pooled),
        # `confidence` of a fresh pipeline: the shipped confidence model's (agent.confidence)
        "confidence_calibration": reliability([o.confidence for o in pooled], [o.right for o in pooled]),
        # Answerable vs not, by the final answer-or-refuse score (reader, gate and decision together)
        "decision_auroc": _decision_auroc(pooled),
        "latency_ms": percentiles([o.latency_ms for o in pooled]),
        "articles": per_article,
        "seconds": round(time.perf_counter() - started, 1),
    }
