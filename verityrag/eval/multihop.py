"""Questions that need two documents (``python -m verityrag.eval --multihop``).

HaluEval's QA items are HotpotQA questions with the supporting sentences of the two paragraphs
they need (``knowledge``, the paragraphs run together) and the answer. Each item gives two
documents (its paragraphs apart, each titled by the thing it is about); the corpus of a slice is
every document of its items, so the other items' paragraphs are its distractors, some about the
same entities. The kinds:

- ``bridge``: the answer is in one paragraph, found through the other ("the hotel company the
  Oberoi family is part of has its head office in what city?");
- ``comparison``: which of two named things ("Which magazine was started first, Arthur's
  Magazine or First for Women?"), the answer one of them;
- ``yes_no``: are both X ("Were Scott Derrickson and Ed Wood of the same nationality?").

Each question is asked twice, of a fresh pipeline with shipped defaults (nothing fitted on these
questions): with every document (right: the short answer holds the gold answer, or says yes / no
as it does), and with the paragraph that holds the answer removed (for yes/no, the second one):
right when refused. The slices follow the split the guard's data uses of these items (items
0-7499 for training, 7500-7999 to develop on, 8000-9999 held out).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verityrag.config import Settings
from verityrag.errors import InvalidInputError
from verityrag.eval.metrics import percentiles, rate
from verityrag.text.answers import contains_gold, normalize_answer
from verityrag.types import Document, QueryResult

if TYPE_CHECKING:
    from verityrag.pipeline import VerityRAGPipeline

#: Items by index: where each slice's questions come from.
SLICES: dict[str, tuple[int, int]] = {"train": (0, 7500), "dev": (7500, 8000), "heldout": (8000, 10000)}
KINDS = ("bridge", "comparison", "yes_no")

# HaluEval runs the two paragraphs together ("...in the 19th century.First for Women is..."):
# a sentence end with no space before a capital. Inside a paragraph sentences are apart.
_PARAGRAPH_JOIN = re.compile(r"(?<=[a-z0-9)\"'’\]])\.(?=[A-Z])")
# What a paragraph's first sentence says its subject is: the words before its first verb of being.
_SUBJECT_END = re.compile(r"\s(?:is|was|are|were|has|had)\s|\s\(|,\s")


@dataclass(frozen=True, slots=True)
class HopQuestion:
    """One HotpotQA question with its two paragraphs."""

    index: int  # the item's index in the file
    question: str
    answer: str
    paragraphs: tuple[str, str]

    @property
    def kind(self) -> str:
        if normalize_answer(self.answer) in ("yes", "no"):
            return "yes_no"
        if " or " in self.question and contains_gold(self.question, [self.answer]):
            return "comparison"
        return "bridge"

    @property
    def answer_paragraph(self) -> int:
        """The paragraph to remove for the missing-hop question: the one holding the answer (the
        second when both or neither do: HotpotQA's second hop)."""
        holding = [i for i, p in enumerate(self.paragraphs) if contains_gold(p, [self.answer])]
        return holding[0] if len(holding) == 1 else 1


def split_paragraphs(knowledge: str) -> tuple[str, str] | None:
    """The two paragraphs of a HaluEval ``knowledge`` passage, or None where the join is not one
    clear place."""
    joins = [m.start() for m in _PARAGRAPH_JOIN.finditer(knowledge)]
    if len(joins) != 1:
        return None
    cut = joins[0] + 1
    first, second = knowledge[:cut].strip(), knowledge[cut:].strip()
    return (first, second) if first and second else None


def title_of(paragraph: str) -> str:
    """What a paragraph is about, as a title: its first words up to its first verb of being."""
    head = paragraph[:120]
    match = _SUBJECT_END.search(head)
    title = head[: match.start()] if match and match.start() > 0 else " ".join(head.split()[:6])
    return title.strip(" .,")


def document_of(paragraph: str) -> Document:
    """A paragraph as a document, its id from its text (a paragraph two items share is one)."""
    digest = hashlib.sha1(paragraph.encode("utf-8")).hexdigest()[:12]
    return Document(f"hop-{digest}", title_of(paragraph), paragraph, {})


def load_questions(path: Path, slice_name: str, limit: int | None = None) -> list[HopQuestion]:
    """The items of ``slice_name`` whose paragraphs split cleanly, in file order (the first
    ``limit``)."""
    if slice_name not in SLICES:
        raise InvalidInputError("slice", f"must be one of {', '.join(SLICES)}, got {slice_name!r}")
    start, end = SLICES[slice_name]
    out: list[HopQuestion] = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for index, line in enumerate(f):
            if index < start:
                continue
            if index >= end or (limit is not None and len(out) >= limit):
                break
            item = json.loads(line)
            paragraphs = split_paragraphs(item["knowledge"])
            if paragraphs is not None:
                out.append(HopQuestion(index, item["question"], item["right_answer"], paragraphs))
    return out


def corpus_of(questions: Sequence[HopQuestion]) -> list[Document]:
    """Every paragraph of ``questions`` as a document, once."""
    docs = {d.doc_id: d for q in questions for d in map(document_of, q.paragraphs)}
    return list(docs.values())


@dataclass(frozen=True, slots=True)
class HopOutcome:
    """One question's reply, scored."""

    index: int
    kind: str
    removed: bool  # asked with the answer's paragraph removed
    answered: bool
    right: bool
    gold_in_evidence: bool
    reason: str | None
    latency_ms: float


def says(result: QueryResult, q: HopQuestion) -> bool:
    """The reply gives the gold answer: its short answer holds it, or for yes/no its short
    answer's (else its answer's) first word is it."""
    if result.abstained:
        return False
    if q.kind == "yes_no":
        said = result.short_answer.text if result.short_answer is not None else result.answer
        first = normalize_answer(said or "").split()
        return bool(first) and first[0] == normalize_answer(q.answer)
    short = result.short_answer.text if result.short_answer is not None else ""
    return contains_gold(short, [q.answer])


def score(q: HopQuestion, result: QueryResult, removed: bool, latency_ms: float) -> HopOutcome:
    answered = not result.abstained
    right = not answered if removed else says(result, q)
    in_evidence = any(contains_gold(h.chunk.text, [q.answer]) for h in result.evidence)
    reason = result.abstain_reason.value if result.abstain_reason else None
    return HopOutcome(q.index, q.kind, removed, answered, right, in_evidence, reason, latency_ms)


def _asked(pipeline: VerityRAGPipeline, q: HopQuestion, removed: bool) -> HopOutcome:
    t0 = time.perf_counter()
    result = pipeline.query(q.question)
    return score(q, result, removed, (time.perf_counter() - t0) * 1000)


def ask_all(
    pipeline: VerityRAGPipeline, questions: Sequence[HopQuestion], progress: bool = True
) -> Iterator[HopOutcome]:
    """Each question asked with every document, then with its answer's paragraph removed (put
    back after)."""
    from tqdm.auto import tqdm

    for q in tqdm(questions, desc="multi-hop questions", unit="q", disable=not progress):
        yield _asked(pipeline, q, removed=False)
        missing = document_of(q.paragraphs[q.answer_paragraph])
        pipeline.delete_document(missing.doc_id)
        try:
            yield _asked(pipeline, q, removed=True)
        finally:
            pipeline.ingest_documents([missing], progress=False)


def summarise(outcomes: Sequence[HopOutcome]) -> dict[str, Any]:
    """Right / wrong / refused with every document, refused with a hop missing; by kind too."""

    def block(rows: Sequence[HopOutcome]) -> dict[str, Any]:
        full = [o for o in rows if not o.removed]
        missing = [o for o in rows if o.removed]
        right = sum(o.right for o in full)
        wrong = sum(o.answered and not o.right for o in full)
        refused = sum(not o.answered for o in full)
        missing_refused = sum(o.right for o in missing)
        return {
            "questions": len(full),
            "right": right,
            "wrong": wrong,
            "refused": refused,
            "right_rate": rate(right, len(full)),
            "wrong_rate": rate(wrong, len(full)),
            "refused_rate": rate(refused, len(full)),
            "gold_in_evidence_rate": rate(sum(o.gold_in_evidence for o in full), len(full)),
            "missing_hop_refused": missing_refused,
            "missing_hop_refused_rate": rate(missing_refused, len(missing)),
            "refusal_reasons": dict(Counter(o.reason for o in full if not o.answered).most_common()),
        }

    return {
        **block(outcomes),
        "kinds": {k: block([o for o in outcomes if o.kind == k]) for k in KINDS},
        "latency_ms": percentiles([o.latency_ms for o in outcomes if not o.removed]),
    }


def run_multihop(
    path: Path, settings: Settings, slice_name: str, limit: int | None, progress: bool = True
) -> dict[str, Any]:
    """The report of a slice (see the module docstring)."""
    from verityrag.pipeline import IN_MEMORY, VerityRAGPipeline

    started = time.perf_counter()
    questions = load_questions(path, slice_name, limit)
    corpus = corpus_of(questions)
    with VerityRAGPipeline(settings=settings, data_dir=IN_MEMORY) as pipeline:
        pipeline.ingest_documents(corpus, progress=progress)
        outcomes = list(ask_all(pipeline, questions, progress))
    return {
        "kind": "multihop",
        "data": f"HaluEval QA (HotpotQA) items {SLICES[slice_name][0]}-{SLICES[slice_name][1] - 1} "
        f"({slice_name}): {len(questions)} questions, {len(corpus)} documents",
        "settings": {**asdict(settings), "calibrated": False},
        **summarise(outcomes),
        "outcomes": [asdict(o) for o in outcomes],
        "seconds": round(time.perf_counter() - started, 1),
    }


def headline(report: dict[str, Any]) -> list[tuple[str, str]]:
    """Lines for the terminal: right / wrong / refused, and refused with a hop missing, by kind."""

    def line(block: dict[str, Any]) -> str:
        return (
            f"right {block['right_rate']:.1%}, wrong {block['wrong_rate']:.1%}, "
            f"refused {block['refused_rate']:.1%} of {block['questions']}; "
            f"hop missing refused {block['missing_hop_refused_rate']:.1%}"
        )

    rows = [("all", line(report))]
    rows += [(kind, line(block)) for kind, block in report["kinds"].items() if block["questions"]]
    p = report["latency_ms"]
    rows.append(("latency p50/p95", f"{p['p50']:.1f} / {p['p95']:.1f} ms"))
    return rows


def multihop_table(reports: dict[str, dict[str, Any]]) -> str:
    """A Markdown table of multi-hop reports by setting (``{"shipped defaults": report, ...}``):
    right / wrong / refused of each kind of question, refused with the answer's paragraph removed,
    and latency."""
    names = list(reports)
    first = reports[names[0]]
    lines = [
        f"{first['data']}; one run each.",
        "",
        "| " + " | ".join(["questions", *names]) + " |",
        "| " + " | ".join(["---"] * (len(names) + 1)) + " |",
    ]

    def cell(block: dict[str, Any]) -> str:
        return f"{block['right_rate']:.1%} / {block['wrong_rate']:.1%} / {block['refused_rate']:.1%}"

    def of(report: dict[str, Any], kind: str) -> dict[str, Any]:
        return report if kind == "all" else report["kinds"][kind]

    for kind in ("all", *KINDS):
        label = f"{kind.replace('_', '/')} ({of(first, kind)['questions']}): right / wrong / refused"
        lines.append("| " + " | ".join([label, *(cell(of(reports[n], kind)) for n in names)]) + " |")
    lines.append(
        "| refused with the answer's paragraph removed | "
        + " | ".join(f"{reports[n]['missing_hop_refused_rate']:.1%}" for n in names)
        + " |"
    )
    lines.append(
        "| latency p50 / p95 | "
        + " | ".join(
            f"{reports[n]['latency_ms']['p50']:.1f} / {reports[n]['latency_ms']['p95']:.1f} ms" for n in names
        )
        + " |"
    )
    return "\n".join(lines)
