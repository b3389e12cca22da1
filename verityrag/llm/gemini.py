"""Google Gemini (``generateContent``) as a :class:`~verityrag.llm.completion.CompleteFn`."""

from __future__ import annotations

import os
from typing import Any

from verityrag.errors import LLMResponseError
from verityrag.llm._http import HTTPCompleteFn, RetryPolicy
from verityrag.llm._wire import CutOff, Parsed, Request, env, int_or_none, json_path, require, short

__all__ = ["gemini_complete_fn"]


def gemini_complete_fn(
    api_key: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    policy: RetryPolicy | None = None,
) -> HTTPCompleteFn:
    """Google Gemini (``generateContent``). Key from GEMINI_API_KEY or GOOGLE_API_KEY."""
    provider = "gemini"
    key = require(
        provider,
        api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"),
        "API key",
        "GEMINI_API_KEY (or GOOGLE_API_KEY)",
    )
    name = env("GEMINI_MODEL", model, "gemini-2.0-flash") or ""
    base = (env("GEMINI_BASE_URL", base_url, "https://generativelanguage.googleapis.com") or "").rstrip("/")
    url = f"{base}/v1beta/models/{name}:generateContent"

    def build(
        prompt: str, system: str | None, temperature: float, max_tokens: int, json_mode: bool
    ) -> Request:
        config: dict[str, Any] = {"temperature": temperature, "maxOutputTokens": max_tokens}
        if json_mode:
            config["responseMimeType"] = "application/json"
        body: dict[str, Any] = {
            "contents": [{"role": "user", "parts": [{"text": prompt}]}],
            "generationConfig": config,
        }
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        return Request(url, {"x-goog-api-key": key, "content-type": "application/json"}, body)

    def parse(payload: dict[str, Any], json_mode: bool) -> Parsed:
        parts = json_path(payload, "candidates", 0, "content", "parts")
        finish = json_path(payload, "candidates", 0, "finishReason")
        usage = payload.get("usageMetadata") or {}
        prompt_tokens = int_or_none(usage.get("promptTokenCount"))
        completion_tokens = int_or_none(usage.get("candidatesTokenCount"))
        cut = _gemini_cut_off(finish)
        if cut is not None:  # with or without text (a thinking model can spend all its tokens)
            partial = "".join(str(p.get("text", "")) for p in parts or [] if isinstance(p, dict))
            return Parsed(partial, prompt_tokens, completion_tokens, cut_off=cut)
        if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
            reason = json_path(payload, "promptFeedback", "blockReason") or finish
            raise LLMResponseError(
                provider,
                f"no candidate text in the answer (reason: {reason or 'unknown'}): {short(str(payload))}",
            )
        text = "".join(str(p.get("text", "")) for p in parts)
        return Parsed(text, prompt_tokens, completion_tokens)

    return HTTPCompleteFn(provider, name, build, parse, policy or RetryPolicy())


# A whole answer: the model's own end, or no reason given. Every other finishReason (SAFETY,
# RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII, LANGUAGE, OTHER, ...) stopped it early.
_GEMINI_WHOLE = frozenset({"STOP", "FINISH_REASON_UNSPECIFIED"})


def _gemini_cut_off(finish: Any) -> CutOff | None:
    if not isinstance(finish, str) or finish in _GEMINI_WHOLE:
        return None
    return CutOff("max_tokens" if finish == "MAX_TOKENS" else "stopped", f"finishReason {finish}")
