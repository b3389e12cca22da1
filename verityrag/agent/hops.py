"""Bridges: the second hop of a question whose answer is in a document another one leads to.

"The Oberoi family is part of a hotel company that has a head office in what city?": one
passage names the Oberoi family and The Oberoi Group; The Oberoi Group's own document says Delhi,
and never names the family. Read alone, that document cannot answer (it does not name what the
question names) and the family's passage does not say the city. A bridge joins them:

- the **link**: a passage among the first hop's evidence that names something the question names
  (those naming most first);
- the **target**: a thing the link names that the question does not (a name in it), whose own
  document (one whose title or first sentence names it) is among the first hop's candidates or
  found by a second retrieval asking for it;
- the **read**: the reader reads the link and the target's passages together; a span of the
  target's passages must name, with the link, everything the question names.

A bridge that leads nowhere (the link names things, no document about them answers) is what a
refusal for a missing hop names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from verityrag.text.answer_types import MONTH_NAMES
from verityrag.text.sentences import sentence_spans
from verityrag.text.subjects import Subject, is_named, missing_subjects, question_subjects, text_terms
from verityrag.types import Citation, CitedSentence, Hit, ShortAnswer

#: Things a link names that are looked for by a second retrieval, in the order the link names them.
MAX_TARGETS = 2
#: The first hop's candidates whose documents are tried as targets of a link that names them.
CANDIDATE_TARGETS = 10
# A name that starts with a month is a date ("February 22, 1953"), not a thing.
_MONTH = re.compile(r"^(?:{})\b".format("|".join(sorted(m.capitalize() for m in MONTH_NAMES))))
#: Names that say where something is from, not a thing with a document of its own.
DEMONYMS = frozenset(
    "american british english french german italian spanish canadian australian chinese japanese indian "
    "russian irish scottish welsh dutch swedish norwegian danish polish swiss austrian mexican brazilian "
    "korean european african asian greek roman turkish israeli egyptian persian arab".split()
)
#: The first hop's passages tried as links, best ranked first.
MAX_LINKS = 3
#: Passages of a target's document read with the link.
TARGET_CHUNKS = 2


@dataclass(frozen=True, slots=True)
class Bridge:
    """A link passage, the thing it names that the question does not, and that thing's passages."""

    link: Hit
    target: str
    passages: tuple[Hit, ...]  # the target's document's best chunks (empty: none found)

    def link_sentence(self) -> CitedSentence:
        """The link's sentence that names the target (its first one when none alone does)."""
        chunk = self.link.chunk
        subject = _subject(self.target)
        spans = sentence_spans(chunk.text) or [(0, len(chunk.text))]
        start, end = next(
            (
                (s, e)
                for s, e in spans
                if subject is not None and is_named(subject, text_terms([chunk.text[s:e]]))
            ),
            spans[0],
        )
        citation = Citation(chunk.chunk_id, chunk.doc_id, chunk.title, start, end)
        return CitedSentence(chunk.text[start:end], (citation,))


def through(question: str, bridge: Bridge, chunk_id: str) -> bool:
    """Whether a span read in passage ``chunk_id`` is one the bridge leads to: in the target's
    passages, and a passage that does not name all the question names by itself (the link names
    the rest). A span in the link, or in a passage that needs no link, is one the first hop read
    and refused, not an answer the hop found."""
    passage = next((h.chunk for h in bridge.passages if h.chunk_id == chunk_id), None)
    if passage is None:
        return False
    subjects = question_subjects(question)
    return bool(missing_subjects(subjects, text_terms([passage.text, passage.title])))


def name_in(hit: Hit, name: str) -> ShortAnswer | None:
    """``name`` as the passage writes it (its first place, any case), a span; None when it does not."""
    at = hit.chunk.text.lower().find(name.lower())
    if at < 0:
        return None
    return ShortAnswer(hit.chunk.text[at : at + len(name)], hit.chunk.chunk_id, at, at + len(name), 1.0)


def _subject(name: str) -> Subject | None:
    found = question_subjects(f"x {name}")  # the first word of a question is not a name alone
    return next((s for s in found if s.kind != "number"), None)


def links(question: str, hits: Sequence[Hit]) -> list[Hit]:
    """The first hop's passages that name something the question names, those naming most first
    (then by rank; none: the question names nothing)."""
    subjects = question_subjects(question)
    if not subjects:
        return []
    lacking = [len(missing_subjects(subjects, text_terms([h.chunk.text, h.chunk.title]))) for h in hits]
    order = sorted((n, i) for i, n in enumerate(lacking) if n < len(subjects))
    return [hits[i] for _, i in order[:MAX_LINKS]]


def targets(question: str, link: Hit) -> list[str]:
    """The names the link holds that the question does not name, in the link's order (not dates,
    numbers or where something is from)."""
    asked = text_terms([question, link.chunk.title])
    out: list[str] = []
    for subject in question_subjects(link.chunk.text):
        name = subject.text
        if subject.kind == "number" or _MONTH.match(name) or any(c.isdigit() for c in name):
            continue
        if name.lower() in DEMONYMS or is_named(subject, asked) or name in out:
            continue
        out.append(name)
    return out


def _opening(text: str) -> str:
    """A passage's first sentence: where a document says what it is about."""
    spans = sentence_spans(text)
    return text[: spans[0][1]] if spans else text[:200]


def about(name: str, hits: Sequence[Hit], exclude: str) -> tuple[Hit, ...]:
    """The best chunks of the first document among ``hits`` about ``name`` (its title or its
    first sentence names it; not the document ``exclude``)."""
    subject = _subject(name)
    if subject is None:
        return ()
    for hit in hits:
        names = text_terms([hit.chunk.title, _opening(hit.chunk.text)])
        if hit.chunk.doc_id != exclude and is_named(subject, names):
            doc = hit.chunk.doc_id
            return tuple(h for h in hits if h.chunk.doc_id == doc)[:TARGET_CHUNKS]
    return ()


def named_documents(link: Hit, candidates: Sequence[Hit]) -> list[Bridge]:
    """The bridges from ``link`` to the first hop's other documents it names (by their title)."""
    terms = text_terms([link.chunk.text])
    out: list[Bridge] = []
    seen = {link.chunk.doc_id}
    for hit in candidates[:CANDIDATE_TARGETS]:
        title = hit.chunk.title
        subject = _subject(title) if title else None
        if hit.chunk.doc_id in seen or subject is None or not is_named(subject, terms):
            continue
        seen.add(hit.chunk.doc_id)
        passages = tuple(h for h in candidates if h.chunk.doc_id == hit.chunk.doc_id)[:TARGET_CHUNKS]
        out.append(Bridge(link, title, passages))
    return out


def bridges(question: str, candidates: Sequence[Hit], search: Callable[[str], Sequence[Hit]]) -> list[Bridge]:
    """Every bridge from the first hop's ``candidates``: for each link, the candidates' documents
    it names first, then the first names it holds that no candidate is about, each looked for by
    ``search(name)``."""
    out: list[Bridge] = []
    for link in links(question, candidates):
        found = named_documents(link, candidates)
        out += found
        reached = [b.target for b in found]
        others = [t for t in targets(question, link) if not any(_same(t, r) for r in reached)]
        for target in others[:MAX_TARGETS]:
            out.append(Bridge(link, target, about(target, search(target), link.chunk.doc_id)))
    return out


def _same(name: str, title: str) -> bool:
    subject = _subject(name)
    return subject is not None and is_named(subject, text_terms([title]))
