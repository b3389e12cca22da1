"""A user's own documents as the benchmark (``python -m verityrag.eval --domains DIR``).

A domain is one organisation's documents (web pages, price lists and other tables, FAQs,
policies, manuals) in the formats a user uploads (plain text, Markdown, HTML), with the questions
its customers and staff ask, by kind (the format is ``../shared/domains/README.md``'s):

- ``answerable``: right when the short answer holds a gold answer; "only in the sentence" when
  the quoted sentence does and the short answer does not; else wrong, or refused;
- ``wrong_entity`` (a fact the documents give only for another entity), ``false_premise``,
  ``same_topic`` (on topic, no document says it), ``chit_chat`` and ``off_topic``: right when
  refused;
- ``conflict`` (two documents disagree): right when the reply is the ``conflict`` refusal and
  names both values.

Each domain is asked twice, as a user meets it: **alone** (a fresh ``VerityRAGPipeline()``
holding the domain's documents, shipped defaults, nothing fitted on them) and **beside** the
bundled corpus as ``make run`` serves it (the bundled articles in the ``demo`` collection with the
bundled calibration, the domain's documents added beside them and asked by the default
collection choice, the user's own). Each document goes through the file parser its format
names, as an upload would.

An answerable question that is not answered right is put in one failure category:
``not_retrieved`` (no evidence chunk holds a gold answer), ``refused_gold_in_evidence``,
``wrong_span`` (answered, the gold in the evidence but not in the answer) or ``only_in_sentence``.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verityrag.config import Settings
from verityrag.errors import InvalidInputError
from verityrag.eval.metrics import percentiles, rate, reliability
from verityrag.ingest.parsers import FileFormat, parse_file
from verityrag.text.answers import contains_gold
from verityrag.types import AbstainReason, Document, QueryResult

if TYPE_CHECKING:
    from verityrag.pipeline import VerityRAGPipeline

#: The question kinds of a domain file, and which are answered by refusing.
ANSWERABLE = "answerable"
CONFLICT = "conflict"
REFUSE_KINDS = ("wrong_entity", "false_premise", "same_topic", "chit_chat", "off_topic")
KINDS = (ANSWERABLE, CONFLICT, *REFUSE_KINDS)
#: How a domain file names a document's format, and the file name an upload of it would have.
_UPLOAD_SUFFIX: dict[str, str] = {"text": ".txt", "markdown": ".md", "html": ".html"}
MODES = ("alone", "beside")


@dataclass(frozen=True, slots=True)
class DomainDocument:
    doc_id: str
    title: str
    format: FileFormat
    text: str  # as the user would upload it (Markdown source, HTML markup)

    def parsed(self) -> Document:
        """The document as an upload of it is indexed: through the parser of its format, under the
        domain's id and title."""
        upload = parse_file(f"{self.doc_id}{_UPLOAD_SUFFIX[self.format]}", self.text.encode("utf-8"))
        return Document(self.doc_id, self.title, upload.text, {"format": self.format})


@dataclass(frozen=True, slots=True)
class DomainQuestion:
    id: str
    kind: str
    question: str
    answers: tuple[str, ...] = ()
    doc_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Domain:
    name: str
    documents: tuple[DomainDocument, ...]
    questions: tuple[DomainQuestion, ...]


def _field(where: str, item: dict[str, Any], key: str, kind: type) -> Any:
    value = item.get(key)
    if not isinstance(value, kind):
        raise InvalidInputError("domains", f"{where}: {key!r} must be a {kind.__name__}, got {value!r:.60}")
    return value


def load_domain(path: Path) -> Domain:
    """One domain file; a file that does not follow the format is refused naming what is wrong."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError("domains", f"{path}: not a readable JSON file ({exc})") from exc
    if not isinstance(raw, dict):
        raise InvalidInputError("domains", f"{path}: must hold a JSON object")
    name = str(raw.get("domain") or path.stem)
    docs = []
    for i, d in enumerate(_field(str(path), raw, "documents", list)):
        where = f"{path}: documents[{i}]"
        fmt = _field(where, d, "format", str)
        if fmt not in _UPLOAD_SUFFIX:
            raise InvalidInputError("domains", f"{where}: format must be one of {', '.join(_UPLOAD_SUFFIX)}")
        docs.append(
            DomainDocument(_field(where, d, "doc_id", str), str(d.get("title") or ""), fmt, d["text"])
        )
    ids = {d.doc_id for d in docs}
    questions = []
    for i, q in enumerate(_field(str(path), raw, "questions", list)):
        where = f"{path}: questions[{i}]"
        kind = _field(where, q, "kind", str)
        if kind not in KINDS:
            raise InvalidInputError("domains", f"{where}: kind must be one of {', '.join(KINDS)}")
        answers = tuple(q.get("answers") or ())
        doc_ids = tuple(q.get("doc_ids") or ([q["doc_id"]] if q.get("doc_id") else []))
        if kind in (ANSWERABLE, CONFLICT) and not answers:
            raise InvalidInputError("domains", f"{where}: a {kind} question needs its answers")
        unknown = [d for d in doc_ids if d not in ids]
        if unknown:
            raise InvalidInputError("domains", f"{where}: names documents not in the domain: {unknown}")
        questions.append(
            DomainQuestion(str(q.get("id", i)), kind, _field(where, q, "question", str), answers, doc_ids)
        )
    return Domain(name, tuple(docs), tuple(questions))


def load_domains(folder: Path) -> list[Domain]:
    """Every ``*.json`` domain file of ``folder``, by name."""
    if not folder.is_dir():
        raise InvalidInputError("domains", f"{folder} is not a folder")
    files = sorted(folder.glob("*.json"))
    if not files:
        raise InvalidInputError("domains", f"{folder} holds no domain files (*.json)")
    return [load_domain(f) for f in files]


@dataclass(frozen=True, slots=True)
class DomainOutcome:
    """One question's reply, scored."""

    domain: str
    id: str
    kind: str
    answered: bool
    right: bool  # by its kind: a right short answer, a refusal, a reported conflict
    in_sentence: bool  # answerable: a gold answer in the quoted sentence(s)
    gold_in_evidence: bool  # answerable: a gold answer in an evidence chunk
    reason: str | None
    confidence: float
    latency_ms: float
    short_answer: str | None

    @property
    def category(self) -> str:
        """What became of an answerable question (see the module docstring)."""
        if self.right:
            return "right"
        if not self.gold_in_evidence:
            return "not_retrieved"
        if not self.answered:
            return "refused_gold_in_evidence"
        return "only_in_sentence" if self.in_sentence else "wrong_span"


def score_reply(domain: str, q: DomainQuestion, result: QueryResult, latency_ms: float) -> DomainOutcome:
    answered = not result.abstained
    short = result.short_answer.text if answered and result.short_answer is not None else None
    in_sentence = answered and q.kind == ANSWERABLE and contains_gold(result.answer or "", q.answers)
    if q.kind == ANSWERABLE:
        right = short is not None and contains_gold(short, q.answers)
    elif q.kind == CONFLICT:
        said = result.explanation or ""
        right = result.abstain_reason is AbstainReason.CONFLICT and all(
            contains_gold(said, [a]) for a in q.answers
        )
    else:
        right = not answered
    gold_in_evidence = q.kind == ANSWERABLE and any(
        contains_gold(h.chunk.text, q.answers) for h in result.evidence
    )
    reason = result.abstain_reason.value if result.abstain_reason else None
    return DomainOutcome(
        domain,
        q.id,
        q.kind,
        answered,
        right,
        in_sentence,
        gold_in_evidence,
        reason,
        result.confidence,
        latency_ms,
        short,
    )


def ask_domain(pipeline: VerityRAGPipeline, domain: Domain, scope: Any = None) -> list[DomainOutcome]:
    """Every question of ``domain`` asked of ``pipeline`` (``scope``: its filter), scored."""
    outcomes = []
    for q in domain.questions:
        t0 = time.perf_counter()
        result = pipeline.query(q.question, filter=scope)
        outcomes.append(score_reply(domain.name, q, result, (time.perf_counter() - t0) * 1000))
    return outcomes


def summarise(outcomes: Sequence[DomainOutcome]) -> dict[str, Any]:
    """Per kind: right / asked; for answerable questions, the categories and refusal reasons."""
    by_kind: dict[str, list[DomainOutcome]] = defaultdict(list)
    for o in outcomes:
        by_kind[o.kind].append(o)
    kinds: dict[str, Any] = {}
    for kind in KINDS:
        group = by_kind.get(kind, [])
        if not group:
            continue
        row: dict[str, Any] = {"asked": len(group), "right": sum(o.right for o in group)}
        row["rate"] = rate(row["right"], row["asked"])
        row["refusal_reasons"] = dict(Counter(o.reason for o in group if o.reason))
        if kind == ANSWERABLE:
            row["right_only_in_sentence"] = sum(o.in_sentence and not o.right for o in group)
            row["wrong"] = sum(o.answered and not o.right for o in group)
            row["refused"] = sum(not o.answered for o in group)
            row["categories"] = dict(Counter(o.category for o in group))
        kinds[kind] = row
    chit_chat = [o for o in outcomes if o.kind in ("chit_chat", "off_topic")]
    return {
        "questions": len(outcomes),
        "kinds": kinds,
        "chit_chat_refused": rate(sum(o.right for o in chit_chat), len(chit_chat)),
        "confidence_calibration": reliability([o.confidence for o in outcomes], [o.right for o in outcomes]),
        "latency_ms": percentiles([o.latency_ms for o in outcomes]),
    }


@contextmanager
def beside_bundled(settings: Settings) -> Iterator[VerityRAGPipeline]:
    """The index ``make run`` serves on a first start (in memory): the bundled corpus in the demo
    collection, with the bundled calibration."""
    from verityrag.index.collections import DEMO_COLLECTION
    from verityrag.pipeline import IN_MEMORY, VerityRAGPipeline
    from verityrag.serve.bundled import bundled_pipeline

    pipeline = bundled_pipeline(
        store_dir=IN_MEMORY,
        collection=DEMO_COLLECTION,
        factory=lambda: VerityRAGPipeline(settings=settings, data_dir=IN_MEMORY),
    )
    try:
        yield pipeline
    finally:
        pipeline.close()


def run_domains(
    folder: Path, settings: Settings, modes: Sequence[str] = MODES, progress: bool = True
) -> dict[str, Any]:
    """The report: per mode, pooled and per domain (see the module docstring)."""
    from tqdm.auto import tqdm

    from verityrag.index.collections import scoped_filter
    from verityrag.pipeline import IN_MEMORY, VerityRAGPipeline

    started = time.perf_counter()
    domains = load_domains(folder)
    parsed = {d.name: [doc.parsed() for doc in d.documents] for d in domains}
    report: dict[str, Any] = {
        "kind": "domains",
        "data": f"{folder.name}: {len(domains)} domains, {sum(len(d.documents) for d in domains)} documents, "
        f"{sum(len(d.questions) for d in domains)} questions",
        "settings": {**dataclasses.asdict(settings), "calibrated": False},
        "modes": {},
    }
    for mode in modes:
        pooled: list[DomainOutcome] = []
        per_domain: dict[str, Any] = {}
        bar = tqdm(domains, desc=f"domains ({mode})", unit="domain", disable=not progress)
        if mode == "alone":
            for domain in bar:
                pipeline = VerityRAGPipeline(settings=settings, data_dir=IN_MEMORY)
                pipeline.ingest_documents(parsed[domain.name], progress=False)
                outcomes = ask_domain(pipeline, domain)
                pipeline.close()
                pooled += outcomes
                per_domain[domain.name] = summarise(outcomes)
        elif mode == "beside":
            with beside_bundled(settings) as pipeline:
                for domain in bar:
                    pipeline.ingest_documents(parsed[domain.name], progress=False)
                    scope = scoped_filter(None, None, pipeline.writer.metadata_index)
                    outcomes = ask_domain(pipeline, domain, scope)
                    for doc in domain.documents:
                        pipeline.delete_document(doc.doc_id)
                    pooled += outcomes
                    per_domain[domain.name] = summarise(outcomes)
        else:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        report["modes"][mode] = {
            **summarise(pooled),
            "domains": per_domain,
            # Outcomes by question id, without the replies' text (the domains' own words stay theirs).
            "replies": [
                {k: v for k, v in dataclasses.asdict(o).items() if k != "short_answer"} for o in pooled
            ],
        }
    report["seconds"] = round(time.perf_counter() - started, 1)
    return report


def headline(report: dict[str, Any]) -> list[tuple[str, str]]:
    """One line per mode and kind: right / asked (rate)."""
    rows = []
    for mode, m in report["modes"].items():
        for kind, row in m["kinds"].items():
            rows.append((f"{mode} {kind}", f"{row['right']}/{row['asked']} ({row['rate']:.0%})"))
        rows.append((f"{mode} ECE", f"{m['confidence_calibration']['ece']:.3f}"))
        lat = m["latency_ms"]
        rows.append((f"{mode} latency p50/p95", f"{lat['p50']:.1f} / {lat['p95']:.1f} ms"))
    return rows


#: The rows of the README table: (label, kind), in order.
_TABLE_ROWS = (
    ("answerable right (a gold answer in the short answer)", ANSWERABLE),
    ("wrong-entity refused", "wrong_entity"),
    ("false premise refused", "false_premise"),
    ("same-topic refused", "same_topic"),
    ("conflicts reported (both values named)", CONFLICT),
)


def domains_table(reports: dict[str, dict[str, Any]]) -> str:
    """The README table: one column per split and mode, right / asked per kind, then the answerable
    questions' other outcomes, chit-chat, ECE and latency."""
    columns = [(split, mode) for split, r in reports.items() for mode in r["modes"]]
    head = " | ".join(
        f"{split} ({reports[split]['data'].split(':')[1].split(',')[0].strip()}), {mode}"
        for split, mode in columns
    )
    lines = [f"| | {head} |", "|---" * (len(columns) + 1) + "|"]

    def cell(split: str, mode: str, kind: str) -> str:
        row = reports[split]["modes"][mode]["kinds"].get(kind)
        return "n/a" if row is None else f"{row['right']}/{row['asked']} ({row['rate']:.0%})"

    def answerable(split: str, mode: str, key: str) -> str:
        row = reports[split]["modes"][mode]["kinds"].get(ANSWERABLE) or {}
        return str(row.get(key, "n/a"))

    for label, kind in _TABLE_ROWS:
        lines.append(f"| {label} | " + " | ".join(cell(s, m, kind) for s, m in columns) + " |")
    for label, key in (
        ("answerable: right only in the quoted sentence", "right_only_in_sentence"),
        ("answerable: answered wrong", "wrong"),
        ("answerable: refused", "refused"),
    ):
        lines.append(f"| {label} | " + " | ".join(answerable(s, m, key) for s, m in columns) + " |")
    chit = [f"{reports[s]['modes'][m]['chit_chat_refused']:.0%}" for s, m in columns]
    lines.append("| chit-chat and off-topic refused | " + " | ".join(chit) + " |")
    ece = [f"{reports[s]['modes'][m]['confidence_calibration']['ece']:.3f}" for s, m in columns]
    lines.append("| ECE of `confidence` | " + " | ".join(ece) + " |")
    lat = [
        f"{reports[s]['modes'][m]['latency_ms']['p50']:.1f} / {reports[s]['modes'][m]['latency_ms']['p95']:.1f} ms"
        for s, m in columns
    ]
    lines.append("| latency p50 / p95 | " + " | ".join(lat) + " |")
    return "\n".join(lines)
