"""Loading the bundled eval corpus and question files (built by ``make data``: data/build_corpus.py)."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator, Sequence
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
    """JSONL with ``doc_id``, ``text`` and optional ``title``, one document per line."""
    docs = []
    for lineno, d in _jsonl_objects(path, "corpus", " (build it with `make data`)"):
        try:
            docs.append(Document(_text_field(d, "doc_id"), str(d.get("title", "")), _text_field(d, "text")))
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


def stratified_sample(questions: Sequence[EvalQuestion], n: int, seed: int) -> list[EvalQuestion]:
    """``n`` questions keeping each kind's share (at least one of each kind), chosen by ``seed``.

    Shares are apportioned by largest remainder (ties to the kind seen first), so exactly
    ``n`` questions come back unless ``n`` is below the number of kinds. Rounding each share
    on its own gave 11 for n = 10 and 99 for n = 100 on the bundled test split.
    """
    if n >= len(questions):
        return list(questions)
    rng = random.Random(seed)
    by_kind: dict[str, list[EvalQuestion]] = {}
    for q in questions:
        by_kind.setdefault(q.kind, []).append(q)
    groups = list(by_kind.values())
    quotas = [n * len(items) / len(questions) for items in groups]
    shares = [max(1, math.floor(q)) for q in quotas]
    kinds = range(len(groups))
    while sum(shares) < n:  # the kind furthest below its quota (max() keeps the first of a tie)
        shares[max(kinds, key=lambda i: quotas[i] - shares[i])] += 1
    while sum(shares) > n and max(shares) > 1:  # a kind raised to one: take from the furthest above
        shares[max((i for i in kinds if shares[i] > 1), key=lambda i: shares[i] - quotas[i])] -= 1
    picked: list[EvalQuestion] = []
    for items, share in zip(groups, shares, strict=True):
        picked.extend(rng.sample(items, min(share, len(items))))
    return picked
