"""A real LLM's answer on the same evidence the extractive answer used, each sentence verified.

For the demo's side-by-side view: the pipeline decides on its evidence; the LLM is shown
that evidence (numbered, as ``LLMGenerator`` prompts it) and its sentences are checked by
the same kind of verifier the agent uses. Nothing here changes what the pipeline answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from verityrag.errors import InvalidInputError, LLMError
from verityrag.generation.llm import LLMGenerator, PromptStyle
from verityrag.llm import CompleteFn
from verityrag.types import Hit
from verityrag.verify.grounding_verifier import GroundingVerifier
from verityrag.verify.protocols import Verifier

# The offline gemma model is a base model: it needs the base prompt and one sentence. A provider's
# own ``prompt_style`` attribute, when it has one, decides first.
STYLE_BY_PROVIDER: dict[str, PromptStyle] = {"gemma": "base"}


@dataclass(frozen=True, slots=True)
class LLMView:
    provider: str
    answer: str | None
    refused: bool = False
    error: str | None = None
    latency_ms: float = 0.0
    sentences: list[dict[str, Any]] = field(default_factory=list)

    @property
    def all_supported(self) -> bool:
        return bool(self.sentences) and all(s["supported"] for s in self.sentences)


def llm_side_by_side(
    provider: str,
    complete_fn: CompleteFn,
    question: str,
    hits: tuple[Hit, ...] | list[Hit],
    verifier: Verifier | None = None,
) -> LLMView:
    """Ask ``complete_fn`` over ``hits``; never raises for a provider failure (it is shown)."""
    if not hits:
        return LLMView(provider, None, error="no evidence was retrieved, so there is nothing to show the LLM")
    own = getattr(complete_fn, "prompt_style", None)
    style: PromptStyle = own if own in ("base", "instruct") else STYLE_BY_PROVIDER.get(provider, "instruct")
    generator = LLMGenerator(
        complete_fn,
        style=style,
        max_sentences=1 if style == "base" else None,
        worked_example=bool(getattr(complete_fn, "worked_example", False)),
    )
    try:
        answer = generator.generate(question, list(hits))
    except (LLMError, InvalidInputError) as exc:
        return LLMView(provider, None, error=f"{type(exc).__name__}: {exc}")
    if answer.refused:
        return LLMView(provider, None, refused=True, latency_ms=answer.latency_ms)
    checker = verifier or GroundingVerifier()
    by_chunk = {h.chunk_id: h.chunk.text for h in answer.evidence}
    rows: list[dict[str, Any]] = []
    for sentence in answer.sentences:
        cited = [by_chunk[c.chunk_id] for c in sentence.citations if c.chunk_id in by_chunk]
        if not cited:
            rows.append({"sentence": sentence.text, "cites": "", "support": 0.0, "supported": False})
            continue
        verdict = checker.verify([sentence.text], cited)[0]
        rows.append(
            {
                "sentence": sentence.text,
                "cites": ", ".join(c.chunk_id for c in sentence.citations),
                "support": round(verdict.score, 3),
                "supported": verdict.supported,
            }
        )
    return LLMView(provider, answer.text or None, latency_ms=answer.latency_ms, sentences=rows)
