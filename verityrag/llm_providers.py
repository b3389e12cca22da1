"""``verityrag.llm_providers.gemini_complete_fn`` / ``anthropic_complete_fn``: kept importable here
(docs/architecture.md, "Public surface"); the providers live in :mod:`verityrag.llm`."""

from verityrag.llm.anthropic import anthropic_complete_fn
from verityrag.llm.gemini import gemini_complete_fn

__all__ = ["anthropic_complete_fn", "gemini_complete_fn"]
