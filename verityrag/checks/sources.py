"""Where an answer's evidence comes from, and whether independent documents agree on it.

Verification checks that an answer is *supported* by the passage it cites; it cannot check
that the passage is *true*. A document written to restate a question and say "the answer is
X" is retrieved first and supports X perfectly: an independent test got X answered for 19 of
20 such questions at every strictness. :class:`SourceReview` runs after the agent answers
(the pipeline wraps each query in it) and adds two things:

- provenance: each citation, and the trace's ``answer`` step (``sources``), carry the cited
  documents' declared ``source`` and ingest time, so a reader sees that an answer rests on a
  document added a minute ago by an unknown source;
- corroboration (``Settings.min_sources``): at 2 or more, an answer stands only when that many
  independent documents among the evidence say it (the reader's short answer as whole tokens,
  or, without one, every content word the answer adds to the question); otherwise the query is
  refused with ``AbstainReason.CORROBORATION``. Documents are independent when their declared
  sources differ (a document without one is its own source) and their passages are not near
  copies. It raises the cost of targeted poisoning from one document to two from different
  declared sources; it cannot tell a lie told twice from a fact.

docs/decisions/0041-provenance-and-corroboration.md has the figures for each setting.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from verityrag.text.answers import answer_tokens, contains_gold
from verityrag.text.stopwords import ENGLISH_STOPWORDS
from verityrag.types import AbstainReason, CitedSentence, Hit, Provenance, QueryResult, TraceStep

__all__ = ["NEAR_COPY_JACCARD", "ProvenanceLookup", "SourceReview", "iso_time"]

ProvenanceLookup = Callable[[Sequence[str]], Mapping[str, Provenance]]
Observer = Callable[[TraceStep], None]

#: Passages whose token sets overlap this much (Jaccard) are copies of one another: they count
#: as one source whatever sources they declare.
NEAR_COPY_JACCARD = 0.8


def iso_time(seconds: float | None) -> str | None:
    """Unix seconds as ISO 8601 UTC to the millisecond (``2025-12-02T07:14:00.123Z``); None stays None."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class SourceReview:
    """Provenance on an answer, and corroboration by ``min_sources`` independent documents."""

    provenance: ProvenanceLookup
    min_sources: int = 1

    def run(
        self, answer: Callable[[Observer | None], QueryResult], on_stage: Observer | None = None
    ) -> QueryResult:
        """``answer(observer)`` runs the agent; its result, reviewed.

        The agent's final ``answer`` step is held back from ``on_stage`` until the review is done,
        then sent with the sources (or replaced by an ``abstain`` step): the streamed stages stay
        the result's trace, in order.
        """
        held: list[TraceStep] = []

        def observe(step: TraceStep) -> None:
            if step.stage == "answer":
                held.append(step)
            elif on_stage is not None:
                on_stage(step)

        result = answer(observe if on_stage is not None else None)
        if result.abstained or not result.trace or result.trace[-1].stage != "answer":
            if on_stage is not None:  # not expected: the agent ends an answer with its answer step
                for step in held:
                    on_stage(step)
            return result
        reviewed = self.review(result)
        if on_stage is not None:
            on_stage(reviewed.trace[-1])
        return reviewed

    def review(self, result: QueryResult) -> QueryResult:
        """An answered ``result`` with provenance on its citations and its ``answer`` step, or the
        corroboration refusal when fewer than ``min_sources`` independent documents agree."""
        t0 = time.perf_counter()
        doc_ids = list(
            dict.fromkeys([c.doc_id for c in result.citations] + [h.chunk.doc_id for h in result.evidence])
        )
        known = self.provenance(doc_ids)
        cited = list(dict.fromkeys(c.doc_id for c in result.citations))
        details: dict[str, Any] = {
            **result.trace[-1].details,
            "sources": [_source_details(doc_id, known.get(doc_id)) for doc_id in cited],
        }
        corroborated = True
        if self.min_sources > 1:
            claim, agreeing, independent = corroboration(result, known)
            corroborated = len(independent) >= self.min_sources
            details["corroboration"] = {
                "min_sources": self.min_sources,
                "claim": claim,
                "agreeing": agreeing,
                "independent": independent,
            }
        elapsed_ms = (time.perf_counter() - t0) * 1000
        steps = result.trace[:-1]
        if not corroborated:
            n = len(details["corroboration"]["independent"])
            explanation = (
                f"only {n} independent document(s) among the evidence say this; "
                f"{self.min_sources} must agree (min_sources)"
            )
            abstain = {"reason": AbstainReason.CORROBORATION.value, **details, "explanation": explanation}
            return QueryResult(
                question=result.question,
                answer=None,
                abstained=True,
                abstain_reason=AbstainReason.CORROBORATION,
                grounding=result.grounding,
                confidence=result.confidence,
                evidence=result.evidence,
                trace=(*steps, TraceStep("abstain", elapsed_ms, abstain)),
                explanation=explanation,
            )
        sentences = tuple(_with_provenance(s, known) for s in result.sentences)
        final = TraceStep("answer", result.trace[-1].duration_ms + elapsed_ms, details)
        return dataclasses.replace(result, sentences=sentences, trace=(*steps, final))


def corroboration(result: QueryResult, known: Mapping[str, Provenance]) -> tuple[str, list[str], list[str]]:
    """What must agree (the claim, as text), the documents among the evidence that say it (best
    ranked first), and those of them that are independent of one another."""
    if result.short_answer is not None:
        claim = result.short_answer.text

        def says(text: str) -> bool:
            return contains_gold(text, [claim])

    else:
        asked = set(answer_tokens(result.question))
        words = sorted({t for t in answer_tokens(result.answer or "") if t not in asked} - ENGLISH_STOPWORDS)
        claim = " ".join(words)

        def says(text: str) -> bool:
            return bool(words) and set(words) <= set(answer_tokens(text))

    first: dict[str, Hit] = {}
    for hit in result.evidence:
        if hit.chunk.doc_id not in first and says(hit.chunk.text):
            first[hit.chunk.doc_id] = hit
    counted: list[tuple[str, set[str]]] = []  # (source key, the passage's tokens)
    independent: list[str] = []
    for doc_id, hit in first.items():
        found = known.get(doc_id)
        key = f"source:{found.source}" if found is not None and found.source else f"doc:{doc_id}"
        tokens = set(answer_tokens(hit.chunk.text))
        if any(key == other or _jaccard(tokens, seen) >= NEAR_COPY_JACCARD for other, seen in counted):
            continue
        counted.append((key, tokens))
        independent.append(doc_id)
    return claim, list(first), independent


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _source_details(doc_id: str, found: Provenance | None) -> dict[str, Any]:
    return {
        "doc_id": doc_id,
        "source": found.source if found is not None else None,
        "ingested_at": iso_time(found.ingested_at) if found is not None else None,
    }


def _with_provenance(sentence: CitedSentence, known: Mapping[str, Provenance]) -> CitedSentence:
    citations = tuple(
        dataclasses.replace(c, source=found.source, ingested_at=found.ingested_at)
        if (found := known.get(c.doc_id)) is not None
        else c
        for c in sentence.citations
    )
    return dataclasses.replace(sentence, citations=citations)
