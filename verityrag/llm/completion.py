"""The contract between VerityRAG and any LLM: one prompt in, one ``Completion`` out.

Every provider in :mod:`verityrag.llm` returns a ``CompleteFn``; the LLM generator
and the LLM-prompt verifier take one. Failures raise ``verityrag.errors.LLMError``
subclasses, never hang (providers apply a timeout) and never return partial garbage: a
remote provider's answer that the model stopped at ``max_tokens`` raises
``LLMResponseError`` naming the limit, so a ``Completion`` is always a whole answer, in
valid Unicode (:func:`valid_unicode`).
(The offline base model stops at ``max_tokens`` by design: its answers are cut to
whole sentences by the caller.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["CompleteFn", "Completion", "valid_unicode"]


def valid_unicode(text: str) -> str:
    """``text`` with each lone surrogate as U+FFFD (a split pair joined).

    A provider's JSON may escape half of an emoji (``"\\ud83c"``), which ``json.loads`` keeps as a
    lone surrogate; a string holding one cannot be encoded as UTF-8, so ``POST /query`` answered
    an answer or trace holding one with a 500.
    """
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


@dataclass(frozen=True, slots=True)
class Completion:
    """The text a model produced, with the accounting the trace reports."""

    text: str
    model: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float = 0.0


class CompleteFn(Protocol):
    """Complete ``prompt``. ``json_mode`` asks for a JSON object where the provider supports it."""

    def __call__(
        self,
        prompt: str,
        *,
        system: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 256,
        json_mode: bool = False,
    ) -> Completion: ...
