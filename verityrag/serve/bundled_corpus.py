"""The bundled corpus and its labelled questions, as ``make data`` builds them (data/build_corpus.py).

The product's demo collection, its calibration questions and the evaluation's splits: the app,
the API and the MCP server read the corpus and calibrate on the questions; the evaluation asks
the test split.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verityrag.errors import InvalidInputError
from verityrag.types import Document

# Where ``make data`` builds the corpus and question sets (git-ignored: derived from SQuAD).
DEFAULT_DATA_DIR = Path(__file__).resolve().parents[2] / "data" / "built"
ANSWERABLE = "answerable"
KINDS_THAT_MUST_ABSTAIN = ("held_out", "unanswerable_in_domain", "unanswerable")


@dataclass(frozen=True, slots=True)
class EvalQuestion:
    id: str
    question: str
    answers: tuple[str, ...]
    kind: str

    @property
    def answerable(self) -> bool:
        return bool(self.answers)


def _jsonl_objects(path: Path, field: str, missing_hint: str = "") -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, row)`` for each non-blank line of a UTF-8 JSONL file of objects.

    Every way a file can be wrong is an :class:`InvalidInputError` on ``field`` naming the
    file and, for a bad row, its line.
    """
    if not path.exists():
        raise InvalidInputError(field, f"{path} does not exist{missing_hint}")
    if not path.is_file():
        raise InvalidInputError(field, f"{path} is not a file")
    with path.open("rb") as fh:  # decoded line by line, so a bad byte is reported on its line
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")  # a BOM (Windows editors)
            except UnicodeDecodeError as exc:
                raise InvalidInputError(field, f"{path}:{lineno}: not UTF-8 ({exc.reason})") from exc
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInputError(field, f"{path}:{lineno}: not JSON ({exc})") from exc
            if not isinstance(row, dict):
                raise InvalidInputError(field, f"{path}:{lineno}: a row must be a JSON object")
            yield lineno, row


def _text_field(row: dict[str, Any], key: str) -> str:
    if key not in row:
        raise InvalidInputError(key, "is missing")
    if not isinstance(row[key], str):
        raise InvalidInputError(key, "must be a string")
    return str(row[key])


def load_corpus(path: Path) -> list[Document]:
    """JSONL with ``doc_id``, ``text`` and optional ``title`` and ``source``, one document per
    line. A document declares its ``source`` (its metadata's), else its title: the bundled
    corpus's documents are an article's paragraphs, one source, whose answers neither
    corroborate nor contradict one another (:mod:`verityrag.generation.reading`)."""
    docs = []
    for lineno, d in _jsonl_objects(path, "corpus", " (build it with `make data`)"):
        try:
            title = str(d.get("title", ""))
            source = str(d.get("source") or title)
            metadata = {"source": source} if source else {}
            docs.append(Document(_text_field(d, "doc_id"), title, _text_field(d, "text"), metadata))
        except InvalidInputError as exc:
            raise InvalidInputError("corpus", f"{path}:{lineno}: {exc}") from exc
    return docs


def load_questions(path: Path) -> list[EvalQuestion]:
    """JSONL with ``id``, ``question``, ``answers`` (list; empty = unanswerable) and optional ``kind``."""
    out = []
    for lineno, d in _jsonl_objects(path, "questions"):
        try:
            if "id" not in d:
                raise InvalidInputError("id", "is missing")
            answers = d.get("answers")
            if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
                raise InvalidInputError("answers", "must be a list of strings ([] = unanswerable)")
            if d.get("kind") is not None and not isinstance(d["kind"], str):
                raise InvalidInputError("kind", "must be a string")
            kind = d.get("kind") or (ANSWERABLE if answers else "unanswerable")
            if kind == ANSWERABLE and not answers:  # counted neither as answerable nor to abstain on
                raise InvalidInputError("answers", f"kind {kind!r} needs at least one answer")
            if kind in KINDS_THAT_MUST_ABSTAIN and answers:
                raise InvalidInputError("answers", f"kind {kind!r} must have none ([])")
            out.append(EvalQuestion(str(d["id"]), _text_field(d, "question"), tuple(answers), kind))
        except InvalidInputError as exc:
            raise InvalidInputError("questions", f"{path}:{lineno}: {exc}") from exc
    return out
