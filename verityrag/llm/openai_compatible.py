"""Any OpenAI-compatible ``/chat/completions`` server as a :class:`~verityrag.llm.completion.CompleteFn`."""

from __future__ import annotations

from typing import Any

from verityrag.errors import LLMConfigError, LLMResponseError
from verityrag.llm._http import HTTPCompleteFn, RetryPolicy
from verityrag.llm._wire import (
    CutKind,
    Parsed,
    Request,
    cut_off_by,
    env,
    int_or_none,
    json_path,
    require,
    short,
)

__all__ = ["OPENAI_DEFAULT_BASE_URL", "openai_compatible_complete_fn"]

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"

# The finish reasons of a partial answer. Servers differ in the others (stop, eos, tool_calls,
# none at all), so only these two, which OpenAI documents as cutting the answer, count.
_OPENAI_CUT: dict[str, CutKind] = {"length": "max_tokens", "content_filter": "stopped"}


def openai_compatible_complete_fn(
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    policy: RetryPolicy | None = None,
) -> HTTPCompleteFn:
    """Any ``/chat/completions`` server: OpenAI, Ollama (``http://localhost:11434/v1``), vLLM,
    llama.cpp server. OPENAI_BASE_URL and OPENAI_MODEL; OPENAI_API_KEY is optional for local
    servers and required for the default base URL (api.openai.com)."""
    provider = "openai-compatible"
    base = (env("OPENAI_BASE_URL", base_url, OPENAI_DEFAULT_BASE_URL) or "").rstrip("/")
    key = env("OPENAI_API_KEY", api_key)
    if base == OPENAI_DEFAULT_BASE_URL and not key:
        raise LLMConfigError(
            provider,
            "no API key for api.openai.com: set OPENAI_API_KEY, or OPENAI_BASE_URL to a local server "
            "(e.g. http://localhost:11434/v1 for Ollama)",
        )
    name = require(provider, env("OPENAI_MODEL", model), "model name", "OPENAI_MODEL")

    def build(
        prompt: str, system: str | None, temperature: float, max_tokens: int, json_mode: bool
    ) -> Request:
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt})
        body: dict[str, Any] = {
            "model": name,
            "messages": messages,
            "temperature": temperature,
            "max_tokens": max_tokens,
        }
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        headers = {"content-type": "application/json"}
        if key:
            headers["authorization"] = f"Bearer {key}"
        return Request(f"{base}/chat/completions", headers, body)

    def parse(payload: dict[str, Any], json_mode: bool) -> Parsed:
        text = json_path(payload, "choices", 0, "message", "content")
        if not isinstance(text, str):
            raise LLMResponseError(
                provider, f"no choices[0].message.content in the answer: {short(str(payload))}"
            )
        usage = payload.get("usage") or {}
        finish = json_path(payload, "choices", 0, "finish_reason")
        return Parsed(
            text,
            int_or_none(usage.get("prompt_tokens")),
            int_or_none(usage.get("completion_tokens")),
            cut_off=cut_off_by(_OPENAI_CUT, "finish_reason", finish),
        )

    return HTTPCompleteFn(provider, name, build, parse, policy or RetryPolicy())
