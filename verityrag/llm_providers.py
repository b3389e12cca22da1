"""The LLM providers now live in :mod:`verityrag.llm`; this module keeps the old import path working.

``from verityrag.llm_providers import gemini_complete_fn`` (and every other name this module
exported) is the same object as ``verityrag.llm.gemini_complete_fn``.
"""

from __future__ import annotations

from verityrag.llm._http import HTTPCompleteFn, RetryPolicy
from verityrag.llm.anthropic import ANTHROPIC_VERSION as ANTHROPIC_VERSION
from verityrag.llm.anthropic import anthropic_complete_fn
from verityrag.llm.completion import CompleteFn as CompleteFn
from verityrag.llm.completion import Completion as Completion
from verityrag.llm.completion import valid_unicode as valid_unicode
from verityrag.llm.gemini import gemini_complete_fn
from verityrag.llm.local_gemma import GEMMA_CACHE_ENV as GEMMA_CACHE_ENV
from verityrag.llm.local_gemma import GEMMA_INSTALL as GEMMA_INSTALL
from verityrag.llm.local_gemma import GEMMA_PACKAGE as GEMMA_PACKAGE
from verityrag.llm.local_gemma import LocalGemmaCompleteFn, local_gemma_complete_fn
from verityrag.llm.local_gemma import default_gemma_cache as default_gemma_cache
from verityrag.llm.local_qwen import QWEN_CACHE_ENV as QWEN_CACHE_ENV
from verityrag.llm.local_qwen import LocalQwenCompleteFn, local_qwen_complete_fn
from verityrag.llm.local_qwen import default_qwen_cache as default_qwen_cache
from verityrag.llm.openai_compatible import OPENAI_DEFAULT_BASE_URL as OPENAI_DEFAULT_BASE_URL
from verityrag.llm.openai_compatible import openai_compatible_complete_fn
from verityrag.llm.providers import PROVIDERS, complete_fn_for

__all__ = [
    "PROVIDERS",
    "HTTPCompleteFn",
    "LocalGemmaCompleteFn",
    "LocalQwenCompleteFn",
    "RetryPolicy",
    "anthropic_complete_fn",
    "complete_fn_for",
    "gemini_complete_fn",
    "local_gemma_complete_fn",
    "local_qwen_complete_fn",
    "openai_compatible_complete_fn",
]
