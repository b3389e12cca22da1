"""The reader's examples from user domains: documents the way organisations write them.

SQuAD is Wikipedia prose; users ask about price lists, opening-hours tables, FAQs, staff pages
and policies, and the questions they ask that the documents do not answer name another entity the
documents *do* mention. From domain files (the format of ``../shared/domains``; the ``train``
domains and others written the same way, never the ``dev`` or ``test`` ones), examples are made
as the reader meets them in service:

- **asked**: each question is asked of a pipeline holding its domain alone (shipped defaults),
  and every text the reader is given for it is recorded (the best sentences, a heading before
  the run under it: :class:`~verityrag.generation.reading.EvidenceReader`). An answerable
  question's reads that hold a gold answer are examples with that span; when none does, the gold
  answer's sentence with its heading and the sentences beside it is one. The reads of a
  wrong-entity, false-premise, same-topic, chit-chat or off-topic question are examples with no
  answer; a conflict question's read that holds exactly one of its values answers with it.
- **tables**: each table row the parsers wrote ("Loaf: White bloomer; Size: 800g; Price: £3.10")
  asked programmatically for each of its cells ("How much is the White bloomer?"), in its table
  with its heading; and, with no answer, for a row no table of the domain has (another domain's)
  and for a column its table does not have (another attribute of the same thing).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from verityrag.eval.domains import ANSWERABLE, CONFLICT, REFUSE_KINDS, Domain, load_domains
from verityrag.text.sections import heading_before
from verityrag.text.sentences import sentence_spans
from verityrag.train.reader_data import Example, example

SOURCE = "user-domains"


class _RecordingModel:
    """A reader model that notes every (question, text) it is asked to read."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.seen: list[tuple[str, str]] = []

    def read_batch(self, pairs: Sequence[tuple[str, str]], k: int = 10) -> Any:
        self.seen.extend(pairs)
        return self.model.read_batch(pairs, k=k)

    def count_tokens(self, text: str) -> int:
        return int(self.model.count_tokens(text))


def find_answer(context: str, answers: Sequence[str]) -> dict[str, Any] | None:
    """The first gold answer found in ``context`` as whole words (case aside; "£12" is not in
    "£12.50"), as a SQuAD answer."""
    for answer in sorted(answers, key=len, reverse=True):
        pattern = r"(?<!\w)" + re.escape(answer.strip()) + r"(?![.,]?\d|\w)"
        found = re.search(pattern, context, flags=re.IGNORECASE)
        if found is not None:
            return {"text": context[found.start() : found.end()], "answer_start": found.start()}
    return None


def sentence_context(text: str, answers: Sequence[str]) -> tuple[str, dict[str, Any]] | None:
    """The sentence of ``text`` holding a gold answer, after its heading, with the sentences
    before and after it: what the reader reads when retrieval finds the right place."""
    spans = sentence_spans(text)
    for i, (start, end) in enumerate(spans):
        if find_answer(text[start:end], answers) is None:
            continue
        parts = []
        heading = heading_before(text, start)
        if heading is not None and heading[1] <= spans[max(0, i - 1)][0]:
            parts.append(text[heading[0] : heading[1]])
        parts += [text[s:e] for s, e in spans[max(0, i - 1) : i + 2]]
        context = " ".join(parts)
        found = find_answer(context, answers)
        if found is not None:
            return context, found
    return None


def asked_examples(domain: Domain, rng: random.Random) -> Iterator[Example]:
    """Every question of ``domain`` asked of a pipeline holding it alone; its reads as examples."""
    from verityrag.pipeline import IN_MEMORY, VerityRAGPipeline

    pipeline = VerityRAGPipeline(data_dir=IN_MEMORY)
    documents = {d.doc_id: d.parsed() for d in domain.documents}
    pipeline.ingest_documents(list(documents.values()), progress=False)
    assert pipeline.reader is not None, "the reader is off: VERITYRAG_READER=0"
    recorder = _RecordingModel(pipeline.reader.model)
    pipeline.reader.model = recorder
    for q in domain.questions:
        recorder.seen.clear()
        pipeline.query(q.question)
        reads = list(dict.fromkeys(text for question, text in recorder.seen if question == q.question))
        if q.kind == ANSWERABLE:
            found_any = False
            for text in reads:
                found = find_answer(text, q.answers)
                if found is not None:
                    found_any = True
                    yield example(q.question, text, found, "domain_answerable", domain.name, SOURCE)
            if not found_any and q.doc_ids:
                made = sentence_context(documents[q.doc_ids[0]].text, q.answers)
                if made is not None:
                    yield example(q.question, made[0], made[1], "domain_answerable", domain.name, SOURCE)
        elif q.kind == CONFLICT:
            for text in reads:
                held = [a for a in q.answers if find_answer(text, [a]) is not None]
                if len(held) == 1:
                    yield example(
                        q.question, text, find_answer(text, held), "domain_conflict_one", domain.name, SOURCE
                    )
        elif q.kind in REFUSE_KINDS:
            for text in reads:
                yield example(q.question, text, None, f"domain_{q.kind}", domain.name, SOURCE)
    pipeline.close()


@dataclass(frozen=True)
class _Row:
    cells: tuple[tuple[str, str], ...]  # (column, value)
    line: str
    start: int  # of the line in the document text


_PRICE_COLUMN = re.compile(r"price|cost|fee|charge|£|\$|€|from|rate|fare", re.IGNORECASE)
_TIME_COLUMN = re.compile(r"time|hours|open|when|date|day|departs|arrives", re.IGNORECASE)


def table_rows(text: str) -> list[list[_Row]]:
    """The tables of a parsed document: runs of row lines ("Column: value; Column: value")."""
    tables: list[list[_Row]] = []
    current: list[_Row] = []
    position = 0
    for line in text.split("\n"):
        start = position
        position += len(line) + 1
        if not line.strip():
            continue
        pairs = [p.split(": ", 1) for p in line.split("; ")]
        if len(pairs) >= 2 and all(len(p) == 2 and p[0] and p[1] and len(p[0]) <= 60 for p in pairs):
            current.append(_Row(tuple((p[0], p[1]) for p in pairs), line, start))
        elif current and ";" not in line:  # a header line ("Loaf; Price") stays in the table
            tables.append(current)
            current = []
    if current:
        tables.append(current)
    return [t for t in tables if t]


def _question(label: str, column: str, rng: random.Random) -> str:
    if _PRICE_COLUMN.search(column):
        forms = [
            "How much is {l}?",
            "What does {l} cost?",
            "What's the {c} for {l}?",
            "how much do you charge for {l}",
        ]
    elif _TIME_COLUMN.search(column):
        forms = ["What are the {c} for {l}?", "When is {l}?", "what {c} for {l}?"]
    else:
        forms = [
            "What is the {c} of {l}?",
            "What's the {c} for {l}?",
            "{l}: what {c}?",
            "Tell me the {c} of {l}",
        ]
    return rng.choice(forms).format(l=label, c=column.lower())


def table_examples(domain: Domain, other_labels: Sequence[str], rng: random.Random) -> Iterator[Example]:
    """Each table row asked for its cells; and unanswerable: a row no table has, a column its
    table lacks (see the module docstring)."""
    for doc in domain.documents:
        text = doc.parsed().text
        tables = table_rows(text)
        columns_here = {c for table in tables for row in table for c, _ in row.cells}
        for table in tables:
            first = table[0].start
            heading = heading_before(text, first)
            lead = text[heading[0] : heading[1]] + " " if heading is not None else ""
            context = lead + " ".join(r.line for r in table[:12])
            own_columns = {c for row in table for c, _ in row.cells}
            for row in table[:12]:
                label = row.cells[0][1]
                for column, value in row.cells[1:]:
                    at = context.find(row.line)
                    offset = row.line.find(f"{column}: {value}")
                    if at < 0 or offset < 0:
                        continue
                    start = at + offset + len(column) + 2
                    answer = {"text": value, "answer_start": start}
                    yield example(
                        _question(label, column, rng), context, answer, "table_cell", domain.name, SOURCE
                    )
                if other_labels and rng.random() < 0.5:
                    absent = rng.choice(other_labels)
                    if absent.lower() not in context.lower():
                        column = rng.choice([c for c, _ in row.cells[1:]] or [row.cells[0][0]])
                        yield example(
                            _question(absent, column, rng),
                            context,
                            None,
                            "table_absent_row",
                            domain.name,
                            SOURCE,
                        )
                missing = sorted(columns_here - own_columns)
                if missing and rng.random() < 0.3:
                    yield example(
                        _question(label, rng.choice(missing), rng),
                        context,
                        None,
                        "table_absent_column",
                        domain.name,
                        SOURCE,
                    )


def build(folders: Sequence[Path], seed: int = 13, progress: bool = True) -> list[Example]:
    """Every example of every domain in ``folders`` (their ``*.json`` files)."""
    rng = random.Random(seed)
    domains = [d for folder in folders for d in load_domains(folder)]
    labels = sorted(
        {
            row.cells[0][1]
            for d in domains
            for doc in d.documents
            for t in table_rows(doc.parsed().text)
            for row in t
        }
    )
    rows: list[Example] = []
    for domain in tqdm(domains, desc="reader data: user domains", unit="domain", disable=not progress):
        rows += asked_examples(domain, rng)
        own = {
            row.cells[0][1] for doc in domain.documents for t in table_rows(doc.parsed().text) for row in t
        }
        rows += table_examples(domain, [label for label in labels if label not in own], rng)
    return rows
