"""The completion contract moved to :mod:`verityrag.llm.completion`; this path keeps working."""

from verityrag.llm.completion import CompleteFn, Completion, valid_unicode

__all__ = ["CompleteFn", "Completion", "valid_unicode"]
