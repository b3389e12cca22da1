"""The HTTP transport every remote provider shares: deadlines, retries with backoff, typed errors.

See :mod:`verityrag.llm` for what each failure becomes.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from verityrag.errors import (
    InvalidInputError,
    LLMConfigError,
    LLMRateLimitError,
    LLMResponseError,
    LLMTimeoutError,
)
from verityrag.llm._loop import LOOP
from verityrag.llm._wire import BuildFn, CutOff, ParseFn, Request, short
from verityrag.llm.completion import Completion, valid_unicode

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


class _RetryableStatusError(Exception):
    def __init__(self, status: int, body: str, retry_after: float | None) -> None:
        self.status = status
        self.body = body
        self.retry_after = retry_after


class HTTPCompleteFn:
    """A :class:`CompleteFn` over one provider's HTTP protocol. Thread-safe.

    Returns the whole answer or raises an ``LLMError``; an answer the provider ended early
    (``max_tokens``, the context window, a content filter) raises ``LLMResponseError`` (see
    :mod:`verityrag.llm`). ``calls`` counts the HTTP requests sent, retries included, by
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
        build: BuildFn,
        parse: ParseFn,
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
        LOOP.run_if_started(self._close_client())

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
        return LOOP.run(self._complete(None, request, json_mode, max_tokens))

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
    ) -> Request:
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
        self, client: httpx.AsyncClient | None, request: Request, json_mode: bool, max_tokens: int
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
            problem = f"HTTP {exc.status}: {short(exc.body)}"
            wait = self._wait_for(attempt, exc.retry_after)
            if not retries_left or wait is None:
                if exc.status == 429:
                    raise LLMRateLimitError(
                        self.provider, f"rate limited (HTTP 429) {tries}: {short(exc.body)}"
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
                self.provider, f"HTTP {status}: the key was refused ({short(raw)}); check the API key"
            )
        if not 200 <= status < 300:
            raise LLMResponseError(self.provider, f"HTTP {status}: {short(raw)}")
        try:
            payload = json.loads(raw)
        except json.JSONDecodeError:
            raise LLMResponseError(self.provider, f"answer is not JSON: {short(raw)}") from None
        if not isinstance(payload, dict):
            raise LLMResponseError(self.provider, f"answer is not a JSON object: {short(raw)}")
        return payload


def _cut_off_problem(cut: CutOff, text: str, max_tokens: int) -> str:
    """What went wrong with a partial answer, and what to change."""
    partial = f"Partial answer: {short(text, 120)!r}"
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


_RETRYABLE_ERRORS = (
    _RetryableStatusError,
    TimeoutError,  # asyncio.timeout: the attempt's deadline
    httpx.TimeoutException,
    httpx.TransportError,
)


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
