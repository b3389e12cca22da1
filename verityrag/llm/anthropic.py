"""The Anthropic Messages API as a :class:`~verityrag.llm.completion.CompleteFn`."""

from __future__ import annotations

from typing import Any

from verityrag.errors import LLMResponseError
from verityrag.llm._http import HTTPCompleteFn, RetryPolicy
from verityrag.llm._wire import CutKind, Parsed, Request, cut_off_by, env, int_or_none, require, short

__all__ = ["ANTHROPIC_VERSION", "anthropic_complete_fn"]

# The stop reasons of a partial answer; end_turn and stop_sequence (and tool stops, unused
# here) end a whole one.
_ANTHROPIC_CUT: dict[str, CutKind] = {
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "context_window",
    "refusal": "stopped",  # its safety classifiers ended the answer, maybe mid-sentence
}

ANTHROPIC_VERSION = "2023-06-01"


def anthropic_complete_fn(
    api_key: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    policy: RetryPolicy | None = None,
) -> HTTPCompleteFn:
    """Anthropic Messages API. Key from ANTHROPIC_API_KEY.

    The Messages API has no JSON switch: ``json_mode`` prefills the assistant turn with
    ``{`` (Anthropic's documented technique) and puts it back in front of the text.
    """
    provider = "anthropic"
    key = require(provider, env("ANTHROPIC_API_KEY", api_key), "API key", "ANTHROPIC_API_KEY")
    name = env("ANTHROPIC_MODEL", model, "claude-3-5-haiku-latest") or ""
    base = (env("ANTHROPIC_BASE_URL", base_url, "https://api.anthropic.com") or "").rstrip("/")

    def build(
        prompt: str, system: str | None, temperature: float, max_tokens: int, json_mode: bool
    ) -> Request:
        messages: list[dict[str, str]] = [{"role": "user", "content": prompt}]
        if json_mode:
            messages.append({"role": "assistant", "content": "{"})
        body: dict[str, Any] = {
            "model": name,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "messages": messages,
        }
        if system:
            body["system"] = system
        headers = {
            "x-api-key": key,
            "anthropic-version": ANTHROPIC_VERSION,
            "content-type": "application/json",
        }
        return Request(f"{base}/v1/messages", headers, body)

    def parse(payload: dict[str, Any], json_mode: bool) -> Parsed:
        content = payload.get("content")
        if not isinstance(content, list) or not all(isinstance(c, dict) for c in content):
            raise LLMResponseError(provider, f"no 'content' list in the answer: {short(str(payload))}")
        text = "".join(str(c.get("text", "")) for c in content if c.get("type") == "text")
        if json_mode:
            text = "{" + text
        usage = payload.get("usage") or {}
        stop = payload.get("stop_reason")
        return Parsed(
            text,
            int_or_none(usage.get("input_tokens")),
            int_or_none(usage.get("output_tokens")),
            cut_off=cut_off_by(_ANTHROPIC_CUT, "stop_reason", stop),
        )

    return HTTPCompleteFn(provider, name, build, parse, policy or RetryPolicy())
