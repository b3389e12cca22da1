"""Loading the bundled eval corpus and question files (built by data/build_corpus.py)."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from verityrag.errors import InvalidInputError
from verityrag.types import Document

# The repository's data/ folder, where the committed corpus lives.
DEFAULT_DATA_DIR = Path(__file__).resolve().parents[2] / "data"
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


def load_corpus(path: Path) -> list[Document]:
    if not path.exists():
        raise InvalidInputError("corpus", f"{path} does not exist (build it: python data/build_corpus.py)")
    docs = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if line.strip():
                d = json.loads(line)
                try:
                    docs.append(Document(d["doc_id"], d.get("title", ""), d["text"]))
                except KeyError as exc:
                    raise InvalidInputError("corpus", f"{path}:{lineno} lacks {exc.args[0]!r}") from exc
    return docs


def load_questions(path: Path) -> list[EvalQuestion]:
    """JSONL with ``id``, ``question``, ``answers`` (list; empty = unanswerable) and optional ``kind``."""
    if not path.exists():
        raise InvalidInputError("questions", f"{path} does not exist")
    out = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
                answers = d["answers"]
                if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
                    raise InvalidInputError("answers", "must be a list of strings")
                kind = d.get("kind") or (ANSWERABLE if answers else "unanswerable")
                out.append(EvalQuestion(str(d["id"]), d["question"], tuple(answers), kind))
            except (KeyError, json.JSONDecodeError, InvalidInputError) as exc:
                raise InvalidInputError("questions", f"{path}:{lineno}: {exc}") from exc
    return out


def stratified_sample(questions: Sequence[EvalQuestion], n: int, seed: int) -> list[EvalQuestion]:
    """``n`` questions keeping each kind's share (at least one of each kind), chosen by ``seed``."""
    if n >= len(questions):
        return list(questions)
    rng = random.Random(seed)
    by_kind: dict[str, list[EvalQuestion]] = {}
    for q in questions:
        by_kind.setdefault(q.kind, []).append(q)
    picked: list[EvalQuestion] = []
    for items in by_kind.values():
        share = max(1, round(n * len(items) / len(questions)))
        picked.extend(rng.sample(items, min(share, len(items))))
    return picked
