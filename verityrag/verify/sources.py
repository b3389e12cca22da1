"""Where an answer's evidence comes from, and whether independent documents agree on it.

Verification checks that an answer is *supported* by the passage it cites; it cannot check
that the passage is *true*. A document written to restate a question and say "the answer is
X" is retrieved first and supports X perfectly: an independent test got X answered for 19 of
20 such questions at every strictness. Two things answer that, both in the agent:

- provenance (:func:`with_provenance`, :func:`source_details`): each citation, and the trace's
  ``answer`` step (``sources``), carry the cited documents' declared ``source`` and ingest
  time, so a reader sees that an answer rests on a document added a minute ago by an unknown
  source;
- corroboration (``Settings.min_sources``, the agent's ``Corroborated`` gate): at 2 or more,
  an answer stands only when that many independent documents among the evidence say it
  (:func:`corroboration`: the reader's short answer as whole tokens, or, without one, every
  content word the answer adds to the question); otherwise the query is refused with
  ``AbstainReason.CORROBORATION``. Documents are independent when their sources differ
  (:func:`verityrag.types.source_key`) and their passages are not near copies. It raises the
  cost of targeted poisoning from one document to two from different declared sources; it
  cannot tell a lie told twice from a fact.

docs/decisions/0041-provenance-and-corroboration.md has the figures for each setting.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from verityrag.text.answers import answer_tokens, contains_gold
from verityrag.text.stopwords import ENGLISH_STOPWORDS
from verityrag.types import CitedSentence, Hit, Provenance, ShortAnswer, source_key

__all__ = [
    "NEAR_COPY_JACCARD",
    "ProvenanceLookup",
    "corroboration",
    "iso_time",
    "source_details",
    "with_provenance",
]

ProvenanceLookup = Callable[[Sequence[str]], Mapping[str, Provenance]]

#: Passages whose token sets overlap this much (Jaccard) are copies of one another: they count
#: as one source whatever sources they declare.
NEAR_COPY_JACCARD = 0.8


def iso_time(seconds: float | None) -> str | None:
    """Unix seconds as ISO 8601 UTC to the millisecond (``2025-12-02T07:14:00.123Z``); None stays None."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def unix_seconds(stamp: str | None) -> float | None:
    """:func:`iso_time`'s ``2025-12-02T07:14:00.123Z`` as Unix seconds (None stays None)."""
    if stamp is None:
        return None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def corroboration(
    question: str,
    short_answer: ShortAnswer | None,
    answer: str,
    evidence: Sequence[Hit],
    known: Mapping[str, Provenance],
) -> tuple[str, list[str], list[str]]:
    """What must agree (the claim, as text: the short answer, else the content words ``answer``
    adds to ``question``), the documents among ``evidence`` that say it (best ranked first), and
    those of them that are independent of one another (``known``: their provenance)."""
    if short_answer is not None:
        claim = short_answer.text

        def says(text: str) -> bool:
            return contains_gold(text, [claim])

    else:
        asked = set(answer_tokens(question))
        words = sorted({t for t in answer_tokens(answer) if t not in asked} - ENGLISH_STOPWORDS)
        claim = " ".join(words)

        def says(text: str) -> bool:
            return bool(words) and set(words) <= set(answer_tokens(text))

    first: dict[str, Hit] = {}
    for hit in evidence:
        if hit.chunk.doc_id not in first and says(hit.chunk.text):
            first[hit.chunk.doc_id] = hit
    counted: list[tuple[str, set[str]]] = []  # (source key, the passage's tokens)
    independent: list[str] = []
    for doc_id, hit in first.items():
        key = source_key(doc_id, known.get(doc_id))
        tokens = set(answer_tokens(hit.chunk.text))
        if any(key == other or _jaccard(tokens, seen) >= NEAR_COPY_JACCARD for other, seen in counted):
            continue
        counted.append((key, tokens))
        independent.append(doc_id)
    return claim, list(first), independent


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def source_details(doc_id: str, found: Provenance | None) -> dict[str, Any]:
    """What the trace's ``answer`` step says of a cited document's provenance."""
    return {
        "doc_id": doc_id,
        "source": found.source if found is not None else None,
        "ingested_at": iso_time(found.ingested_at) if found is not None else None,
    }


def with_provenance(sentence: CitedSentence, known: Mapping[str, Provenance]) -> CitedSentence:
    """``sentence`` with its citations' declared sources and ingest times (``known``)."""
    citations = tuple(
        dataclasses.replace(c, source=found.source, ingested_at=found.ingested_at)
        if (found := known.get(c.doc_id)) is not None
        else c
        for c in sentence.citations
    )
    return dataclasses.replace(sentence, citations=citations)
