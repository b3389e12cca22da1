"""The providers by name, for settings, CLIs and the demo app."""

from __future__ import annotations

from collections.abc import Callable

from verityrag.errors import InvalidInputError
from verityrag.llm.anthropic import anthropic_complete_fn
from verityrag.llm.completion import CompleteFn
from verityrag.llm.gemini import gemini_complete_fn
from verityrag.llm.local_gemma import local_gemma_complete_fn
from verityrag.llm.local_qwen import local_qwen_complete_fn
from verityrag.llm.openai_compatible import openai_compatible_complete_fn

__all__ = ["LOCAL_PROVIDERS", "PROVIDERS", "complete_fn_for"]

PROVIDERS: dict[str, Callable[[], CompleteFn]] = {
    "gemini": gemini_complete_fn,
    "anthropic": anthropic_complete_fn,
    "openai": openai_compatible_complete_fn,
    # Offline, from PyPI wheels: the instruct model by default, the gemma base model by name.
    "local": local_qwen_complete_fn,
    "gemma": local_gemma_complete_fn,
}
#: The offline providers: each factory takes the model's cache folder as its first argument.
LOCAL_PROVIDERS: dict[str, Callable[..., CompleteFn]] = {
    "local": local_qwen_complete_fn,
    "gemma": local_gemma_complete_fn,
}


def complete_fn_for(provider: str) -> CompleteFn:
    """The provider named ``provider`` (one of :data:`PROVIDERS`), configured from the environment."""
    factory = PROVIDERS.get(provider)
    if factory is None:
        raise InvalidInputError(
            "provider", f"unknown provider {provider!r}; choose one of {sorted(PROVIDERS)}"
        )
    return factory()
