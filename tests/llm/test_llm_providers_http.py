"""Each remote provider against a real local HTTP server that speaks its protocol."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
from llm_http_server import Reply, ScriptedServer

from verityrag.errors import LLMConfigError, LLMRateLimitError, LLMResponseError, LLMTimeoutError
from verityrag.llm import (
    HTTPCompleteFn,
    RetryPolicy,
    anthropic_complete_fn,
    complete_fn_for,
    gemini_complete_fn,
    openai_compatible_complete_fn,
)

pytestmark = pytest.mark.integration

FAST = RetryPolicy(
    timeout_s=2.0, max_retries=2, backoff_base_s=0.01, backoff_max_s=0.05, max_retry_after_s=1.0
)


@dataclass(frozen=True)
class Protocol:
    name: str
    make: Callable[[str, RetryPolicy], HTTPCompleteFn]
    ok: Callable[[str], dict[str, Any]]  # a success body carrying this text (prompt 11 / completion 7 tokens)
    path: str


PROTOCOLS = [
    Protocol(
        "gemini",
        lambda url, p: gemini_complete_fn(api_key="g-key", model="gemini-test", base_url=url, policy=p),
        lambda text: {
            "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 7},
        },
        "/v1beta/models/gemini-test:generateContent",
    ),
    Protocol(
        "anthropic",
        lambda url, p: anthropic_complete_fn(api_key="a-key", model="claude-test", base_url=url, policy=p),
        lambda text: {
            "id": "msg_1",
            "type": "message",
            "model": "claude-test",
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 11, "output_tokens": 7},
        },
        "/v1/messages",
    ),
    Protocol(
        "openai",
        lambda url, p: openai_compatible_complete_fn(base_url=url + "/v1", model="llama-test", policy=p),
        lambda text: {
            "model": "llama-test",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7},
        },
        "/v1/chat/completions",
    ),
]
IDS = [p.name for p in PROTOCOLS]


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "GEMINI_API_KEY GOOGLE_API_KEY GEMINI_MODEL GEMINI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_MODEL "
        "ANTHROPIC_BASE_URL OPENAI_API_KEY OPENAI_BASE_URL OPENAI_MODEL"
    ).split():
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("proto", PROTOCOLS, ids=IDS)
def test_provider_success_returns_text_and_token_counts(server: ScriptedServer, proto: Protocol) -> None:
    server.script(Reply(200, proto.ok("Paris is the capital [1].")))
    fn = proto.make(server.url, FAST)
    out = fn("Where?", system="Be brief.", temperature=0.2, max_tokens=40)
    assert out.text == "Paris is the capital [1]."
    assert (out.prompt_tokens, out.completion_tokens) == (11, 7)
    assert out.latency_ms > 0
    assert [s.path for s in server.seen] == [proto.path]


@pytest.mark.parametrize("proto", PROTOCOLS, ids=IDS)
def test_provider_answer_with_half_an_emoji_returns_valid_unicode(
    server: ScriptedServer, proto: Protocol
) -> None:
    # The body escapes a lone high surrogate ("\\ud83c"): json.loads keeps it, and the text could not
    # be encoded as UTF-8 (the API's answer to it was a 500). A whole pair stays the emoji.
    server.script(Reply(200, proto.ok("Paris \ud83c is the capital \U0001f389 [1].")))
    out = proto.make(server.url, FAST)("Where?")
    assert out.text == "Paris \ufffd is the capital \U0001f389 [1]."
    out.text.encode("utf-8")


def test_gemini_request_carries_key_system_and_json_mime(server: ScriptedServer) -> None:
    server.script(Reply(200, PROTOCOLS[0].ok("{}")))
    PROTOCOLS[0].make(server.url, FAST)("q", system="sys", max_tokens=9, temperature=0.3, json_mode=True)
    seen = server.seen[0]
    assert seen.headers["x-goog-api-key"] == "g-key"
    assert seen.body["systemInstruction"] == {"parts": [{"text": "sys"}]}
    assert seen.body["contents"][0]["parts"][0]["text"] == "q"
    assert seen.body["generationConfig"] == {
        "temperature": 0.3,
        "maxOutputTokens": 9,
        "responseMimeType": "application/json",
    }


def test_anthropic_json_mode_prefills_brace_and_restores_it(server: ScriptedServer) -> None:
    server.script(Reply(200, PROTOCOLS[1].ok('"supported": true}')))
    out = PROTOCOLS[1].make(server.url, FAST)("q", system="sys", json_mode=True)
    assert out.text == '{"supported": true}'
    seen = server.seen[0]
    assert seen.headers["x-api-key"] == "a-key"
    assert seen.headers["anthropic-version"] == "2023-06-01"
    assert seen.body["system"] == "sys"
    assert seen.body["messages"][-1] == {"role": "assistant", "content": "{"}


def test_openai_compatible_sends_bearer_only_with_key_and_maps_json_mode(server: ScriptedServer) -> None:
    server.script(Reply(200, PROTOCOLS[2].ok("{}")))
    openai_compatible_complete_fn(base_url=server.url + "/v1", model="m", policy=FAST)("q", json_mode=True)
    openai_compatible_complete_fn(base_url=server.url + "/v1", model="m", api_key="sk-1", policy=FAST)("q")
    first, second = server.seen
    assert "authorization" not in first.headers
    assert first.body["response_format"] == {"type": "json_object"}
    assert first.body["messages"] == [{"role": "user", "content": "q"}]
    assert second.headers["authorization"] == "Bearer sk-1"
    assert "response_format" not in second.body


def test_openai_compatible_reads_base_url_and_model_from_env(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("OPENAI_MODEL", "qwen-local")
    server.script(Reply(200, PROTOCOLS[2].ok("hi")))
    fn = complete_fn_for("openai")
    assert fn("q").text == "hi"
    assert server.seen[0].body["model"] == "qwen-local"


@pytest.mark.parametrize("proto", PROTOCOLS, ids=IDS)
def test_provider_429_then_success_waits_retry_after(server: ScriptedServer, proto: Protocol) -> None:
    server.script(
        Reply(429, {"error": "slow down"}, headers={"retry-after": "0.3"}), Reply(200, proto.ok("ok"))
    )
    fn = proto.make(server.url, FAST)
    t0 = time.perf_counter()
    assert fn("q").text == "ok"
    assert time.perf_counter() - t0 >= 0.3  # Retry-After honoured, not the 10 ms backoff
    assert len(server.seen) == 2


@pytest.mark.parametrize("proto", PROTOCOLS, ids=IDS)
def test_provider_429_every_time_raises_rate_limit_after_retries(
    server: ScriptedServer, proto: Protocol
) -> None:
    server.script(Reply(429, {"error": {"message": "quota exceeded"}}))
    with pytest.raises(LLMRateLimitError, match=r"429.*3 attempt"):
        proto.make(server.url, FAST)("q")
    assert len(server.seen) == 3  # 1 + max_retries


def test_retry_after_longer_than_allowed_gives_up_at_once(server: ScriptedServer) -> None:
    server.script(Reply(429, {"error": "later"}, headers={"retry-after": "3600"}))
    t0 = time.perf_counter()
    with pytest.raises(LLMRateLimitError):
        PROTOCOLS[2].make(server.url, FAST)("q")
    assert time.perf_counter() - t0 < 30.0  # not the hour asked for
    assert len(server.seen) == 1


@pytest.mark.parametrize("proto", PROTOCOLS, ids=IDS)
def test_provider_500_is_retried_then_succeeds(server: ScriptedServer, proto: Protocol) -> None:
    server.script(Reply(500, "internal"), Reply(503, "busy"), Reply(200, proto.ok("fine")))
    assert proto.make(server.url, FAST)("q").text == "fine"
    assert len(server.seen) == 3


# (case, the server's reply every time, the error raised, its message, attempts made or None: not checked)
ERROR_REPLIES = [
    (
        "500 every time: retried, then a response error",
        Reply(500, "boom"),
        LLMResponseError,
        "HTTP 500: boom",
        3,
    ),
    ("400: not retried", Reply(400, {"error": "bad max_tokens"}), LLMResponseError, "HTTP 400", 1),
    (
        "401: a refused key is a config error",
        Reply(401, {"error": "invalid x-api-key"}),
        LLMConfigError,
        "key was refused",
        None,
    ),
]


@pytest.mark.parametrize(
    ("case", "reply", "error", "match", "attempts"), ERROR_REPLIES, ids=[e[0] for e in ERROR_REPLIES]
)
@pytest.mark.parametrize("proto", PROTOCOLS, ids=IDS)
def test_provider_error_status_raises_its_error(
    server: ScriptedServer,
    proto: Protocol,
    case: str,
    reply: Reply,
    error: type[Exception],
    match: str,
    attempts: int | None,
) -> None:
    server.script(reply)
    with pytest.raises(error, match=match):
        proto.make(server.url, FAST)("q")
    if attempts is not None:
        assert len(server.seen) == attempts


@pytest.mark.parametrize("proto", PROTOCOLS, ids=IDS)
def test_provider_slow_server_times_out_after_retries(server: ScriptedServer, proto: Protocol) -> None:
    # Bounds far from each other, so a busy machine cannot cross them: two attempts of 0.3 s,
    # not the server's 20 s.
    server.script(Reply(200, proto.ok("late"), delay_s=20.0))
    policy = RetryPolicy(timeout_s=0.3, max_retries=1, backoff_base_s=0.01)
    t0 = time.perf_counter()
    with pytest.raises(LLMTimeoutError, match=r"within 0.3s.*2 attempt"):
        proto.make(server.url, policy)("q")
    assert time.perf_counter() - t0 < 10.0


def test_trickling_server_is_cut_off_at_the_deadline(server: ScriptedServer) -> None:
    # Each byte arrives well inside the read timeout, the whole body never does: no hang.
    server.script(Reply(200, PROTOCOLS[2].ok("x" * 200), trickle_s=0.1))  # the body takes ~25 s
    policy = RetryPolicy(timeout_s=0.4, max_retries=0)
    t0 = time.perf_counter()
    with pytest.raises(LLMTimeoutError):
        PROTOCOLS[2].make(server.url, policy)("q")
    assert time.perf_counter() - t0 < 10.0


@pytest.mark.parametrize("proto", PROTOCOLS, ids=IDS)
@pytest.mark.parametrize(
    "body", ["<html>gateway</html>", {"unexpected": True}, [1, 2]], ids=["html", "shape", "list"]
)
def test_provider_malformed_body_raises_response_error(
    server: ScriptedServer, proto: Protocol, body: Any
) -> None:
    server.script(Reply(200, body if not isinstance(body, list) else json.dumps(body)))
    with pytest.raises(LLMResponseError):
        proto.make(server.url, FAST)("q")
    assert len(server.seen) == 1


def test_unreachable_server_raises_after_retries() -> None:
    fn = openai_compatible_complete_fn(base_url="http://127.0.0.1:9/v1", model="m", policy=FAST)
    with pytest.raises((LLMResponseError, LLMTimeoutError), match="attempt"):
        fn("q")


@pytest.mark.parametrize(
    ("provider", "env_var"),
    [("gemini", "GEMINI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY")],
)
def test_missing_key_names_the_env_var(provider: str, env_var: str) -> None:
    with pytest.raises(LLMConfigError, match=env_var):
        complete_fn_for(provider)


def test_openai_compatible_without_model_names_openai_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    with pytest.raises(LLMConfigError, match="OPENAI_MODEL"):
        complete_fn_for("openai")


def test_unknown_provider_lists_the_known_ones() -> None:
    from verityrag.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="anthropic"):
        complete_fn_for("cohere")


@pytest.mark.parametrize("proto", PROTOCOLS, ids=IDS)
def test_provider_async_variant_retries_429_then_answers(server: ScriptedServer, proto: Protocol) -> None:
    server.script(
        Reply(429, {"error": "slow"}, headers={"retry-after": "0.1"}), Reply(200, proto.ok("async ok"))
    )
    out = asyncio.run(proto.make(server.url, FAST).acomplete("q", system="s"))
    assert out.text == "async ok"
    assert out.completion_tokens == 7
    assert len(server.seen) == 2


def test_provider_async_variant_times_out_and_raises_typed_errors(server: ScriptedServer) -> None:
    server.script(Reply(200, PROTOCOLS[2].ok("late"), delay_s=1.0))
    fn = PROTOCOLS[2].make(server.url, RetryPolicy(timeout_s=0.2, max_retries=0))
    with pytest.raises(LLMTimeoutError):
        asyncio.run(fn.acomplete("q"))
    server.script(Reply(500, "boom"))
    with pytest.raises(LLMResponseError, match="HTTP 500"):
        asyncio.run(PROTOCOLS[2].make(server.url, FAST).acomplete("q"))


# ------------------------------------------------- request accounting, deadline, truncation


@pytest.mark.parametrize("proto", PROTOCOLS, ids=IDS)
def test_provider_calls_counts_every_request_sent_retries_included(
    server: ScriptedServer, proto: Protocol
) -> None:
    server.script(Reply(503, "busy"), Reply(200, proto.ok("fine")))
    fn = proto.make(server.url, FAST)
    assert fn.calls == 0
    assert fn("q").text == "fine"
    assert fn.calls == len(server.seen) == 2
    server.seen.clear()
    server.script(Reply(429, {"error": "quota"}))
    with pytest.raises(LLMRateLimitError):
        fn("q")
    assert fn.calls == 2 + len(server.seen) == 5


def test_provider_calls_counts_async_requests_too(server: ScriptedServer) -> None:
    server.script(Reply(500, "boom"), Reply(200, PROTOCOLS[2].ok("async ok")))
    fn = PROTOCOLS[2].make(server.url, FAST)
    assert asyncio.run(fn.acomplete("q")).text == "async ok"
    assert fn.calls == len(server.seen) == 2


@pytest.mark.parametrize("proto", PROTOCOLS, ids=IDS)
def test_server_stalling_mid_body_is_cut_off_at_the_attempt_deadline(
    server: ScriptedServer, proto: Protocol
) -> None:
    # Headers late but in time, part of the body, then silence: each read is within the
    # read timeout's reach, the attempt's deadline (5 s) is what must end it.
    server.script(Reply(200, proto.ok("x" * 100), delay_s=4.0, stall_after=20, stall_s=30.0))
    fn = proto.make(server.url, RetryPolicy(timeout_s=5.0, max_retries=0))
    t0 = time.perf_counter()
    with pytest.raises(LLMTimeoutError, match=r"within 5s"):
        fn("q")
    assert time.perf_counter() - t0 < 7.5  # not 4 s + a whole read timeout (9 s)


@pytest.mark.parametrize("path", ["sync", "async"])
def test_server_sending_its_headers_slowly_is_cut_off_at_the_attempt_deadline(
    server: ScriptedServer, path: str
) -> None:
    # The status line in two pieces, then a header line every 0.6 s: no read waits near the
    # read timeout (1.5 s), the head takes ~9 s. The deadline covers the head, not just the body.
    server.script(Reply(200, PROTOCOLS[2].ok("late"), head_trickle_s=0.6))
    fn = PROTOCOLS[2].make(server.url, RetryPolicy(timeout_s=1.5, max_retries=0))
    t0 = time.perf_counter()
    with pytest.raises(LLMTimeoutError, match=r"within 1.5s"):
        fn("q") if path == "sync" else asyncio.run(fn.acomplete("q"))
    assert time.perf_counter() - t0 < 6.0


def test_slow_head_within_the_deadline_is_read(server: ScriptedServer) -> None:
    server.script(Reply(200, PROTOCOLS[2].ok("in time"), head_trickle_s=0.01))
    assert PROTOCOLS[2].make(server.url, RetryPolicy(timeout_s=2.0, max_retries=0))("q").text == "in time"


def test_sync_calls_from_many_threads_and_inside_an_event_loop(server: ScriptedServer) -> None:
    # The sync path runs on the provider's own event loop thread: callers on any thread, and
    # sync code inside a running loop, share it.
    server.script(Reply(200, PROTOCOLS[2].ok("ok")))
    fn = PROTOCOLS[2].make(server.url, FAST)
    with ThreadPoolExecutor(8) as pool:
        assert [f.result().text for f in [pool.submit(fn, "q") for _ in range(16)]] == ["ok"] * 16

    async def sync_call_in_a_loop() -> str:
        return fn("q").text

    assert asyncio.run(sync_call_in_a_loop()) == "ok"
    assert fn.calls == len(server.seen) == 17


def test_providers_share_one_loop_thread_and_close_drops_the_pool(server: ScriptedServer) -> None:
    # A loop thread per instance was one more thread left running by every provider never closed.
    server.script(Reply(200, PROTOCOLS[2].ok("ok")))
    PROTOCOLS[2].make(server.url, FAST).close()  # never called: nothing to close
    fns = [PROTOCOLS[2].make(server.url, FAST) for _ in range(5)]
    assert [fn("q").text for fn in fns] == ["ok"] * 5
    assert len([t for t in threading.enumerate() if t.name == "verityrag-llm"]) == 1
    assert all(fn._client is not None for fn in fns)
    fns[0].close()
    assert fns[0]._client is None
    assert fns[1]._client is not None  # another instance's pool is its own
    assert fns[0]("q").text == "ok"  # a later call opens a new pool
    for fn in fns:
        fn.close()
        fn.close()  # twice is fine


def test_stalled_attempt_is_retried_on_a_fresh_connection(server: ScriptedServer) -> None:
    ok = PROTOCOLS[2].ok("second try")
    server.script(Reply(200, ok, stall_after=10, stall_s=20.0), Reply(200, ok))
    fn = PROTOCOLS[2].make(server.url, RetryPolicy(timeout_s=0.5, max_retries=1, backoff_base_s=0.01))
    t0 = time.perf_counter()
    assert fn("q").text == "second try"
    assert time.perf_counter() - t0 < 10.0  # not after the first attempt's 20 s stall
    assert fn.calls == len(server.seen) == 2


def test_connection_is_reused_after_an_answer_that_beat_the_deadline(server: ScriptedServer) -> None:
    # The watchdog of a finished attempt must never touch the (pooled) connection later.
    server.script(Reply(200, PROTOCOLS[2].ok("one")))
    fn = PROTOCOLS[2].make(server.url, RetryPolicy(timeout_s=0.3, max_retries=0))
    assert fn("q").text == "one"
    time.sleep(0.5)
    assert fn("q").text == "one"
    assert fn.calls == 2


TRUNCATED = [
    (
        "gemini",
        {
            "candidates": [
                {"content": {"parts": [{"text": "Paris is the cap"}]}, "finishReason": "MAX_TOKENS"}
            ],
            "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 40},
        },
        "finishReason MAX_TOKENS",
    ),
    (
        "gemini",
        {"candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS"}]},
        "finishReason MAX_TOKENS",
    ),
    (
        "anthropic",
        {"content": [{"type": "text", "text": "Paris is the cap"}], "stop_reason": "max_tokens"},
        "stop_reason max_tokens",
    ),
    (
        "openai",
        {"choices": [{"message": {"content": "Paris is the cap"}, "finish_reason": "length"}]},
        "finish_reason length",
    ),
]


@pytest.mark.parametrize(
    ("name", "body", "reason"), TRUNCATED, ids=["gemini", "gemini-no-text", "anthropic", "openai"]
)
def test_answer_cut_off_at_max_tokens_raises_naming_the_limit(
    server: ScriptedServer, name: str, body: dict[str, Any], reason: str
) -> None:
    proto = next(p for p in PROTOCOLS if p.name == name)
    server.script(Reply(200, body))
    fn = proto.make(server.url, FAST)
    with pytest.raises(LLMResponseError, match=rf"cut off at the token limit \({reason}, max_tokens=40\)"):
        fn("q", max_tokens=40)
    assert len(server.seen) == 1  # not retried: the same request is cut off again
    with pytest.raises(LLMResponseError, match="max_tokens=40"):
        asyncio.run(fn.acomplete("q", max_tokens=40))


STOPPED_EARLY = [
    (
        "anthropic",
        {"content": [{"type": "text", "text": "Paris is the cap"}], "stop_reason": "refusal"},
        "stop_reason refusal",
    ),
    (
        "openai",
        {"choices": [{"message": {"content": "Paris is the"}, "finish_reason": "content_filter"}]},
        "finish_reason content_filter",
    ),
    (
        "gemini",
        {"candidates": [{"content": {"parts": [{"text": "Paris is"}]}, "finishReason": "SAFETY"}]},
        "finishReason SAFETY",
    ),
    (
        "gemini",
        {"candidates": [{"content": {"parts": [{"text": "Paris is"}]}, "finishReason": "RECITATION"}]},
        "finishReason RECITATION",
    ),
    ("gemini", {"candidates": [{"finishReason": "PROHIBITED_CONTENT"}]}, "finishReason PROHIBITED_CONTENT"),
]


@pytest.mark.parametrize(
    ("name", "body", "reason"),
    STOPPED_EARLY,
    ids=[
        "anthropic-refusal",
        "openai-content-filter",
        "gemini-safety",
        "gemini-recitation",
        "gemini-no-text",
    ],
)
def test_answer_stopped_by_a_provider_filter_raises_naming_the_reason(
    server: ScriptedServer, name: str, body: dict[str, Any], reason: str
) -> None:
    proto = next(p for p in PROTOCOLS if p.name == name)
    server.script(Reply(200, body))
    fn = proto.make(server.url, FAST)
    with pytest.raises(LLMResponseError, match=rf"stopped the answer before its end \({reason}: "):
        fn("q")
    assert len(server.seen) == 1  # not retried
    with pytest.raises(LLMResponseError, match=reason):
        asyncio.run(fn.acomplete("q"))


def test_anthropic_context_window_exceeded_says_shorten_the_prompt(server: ScriptedServer) -> None:
    body = {
        "content": [{"type": "text", "text": "Paris is the cap"}],
        "stop_reason": "model_context_window_exceeded",
    }
    server.script(Reply(200, body))
    fn = PROTOCOLS[1].make(server.url, FAST)
    with pytest.raises(LLMResponseError) as caught:
        fn("q", max_tokens=40)
    message = str(caught.value)
    assert "context window (stop_reason model_context_window_exceeded)" in message
    assert "shorten the prompt" in message
    assert "; raise max_tokens" not in message  # the token limit was not what cut it
    assert "Paris is the cap" in message
    assert len(server.seen) == 1  # not retried: the same prompt fills the window again


def test_anthropic_json_mode_cut_off_is_an_error_not_broken_json(server: ScriptedServer) -> None:
    server.script(
        Reply(200, {"content": [{"type": "text", "text": '"a": 1, "b": "lo'}], "stop_reason": "max_tokens"})
    )
    with pytest.raises(LLMResponseError, match="cut off"):
        PROTOCOLS[1].make(server.url, FAST)("q", json_mode=True)


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("gemini", {"candidates": [{"content": {"parts": [{"text": "done"}]}, "finishReason": "STOP"}]}),
        ("gemini", {"candidates": [{"content": {"parts": [{"text": "done"}]}}]}),
        (
            "gemini",
            {
                "candidates": [
                    {"content": {"parts": [{"text": "done"}]}, "finishReason": "FINISH_REASON_UNSPECIFIED"}
                ]
            },
        ),
        ("anthropic", {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}),
        ("anthropic", {"content": [{"type": "text", "text": "done"}], "stop_reason": "stop_sequence"}),
        ("openai", {"choices": [{"message": {"content": "done"}, "finish_reason": "stop"}]}),
        # local servers name their stops freely; only length and content_filter mean a cut
        ("openai", {"choices": [{"message": {"content": "done"}, "finish_reason": "eos_token"}]}),
        ("openai", {"choices": [{"message": {"content": "done"}, "finish_reason": None}]}),
    ],
    ids=[
        "gemini-stop",
        "gemini-no-reason",
        "gemini-unspecified",
        "anthropic-end-turn",
        "anthropic-stop-sequence",
        "openai-stop",
        "openai-nonstandard-stop",
        "openai-no-reason",
    ],
)
def test_answer_that_ended_normally_is_returned(
    server: ScriptedServer, name: str, body: dict[str, Any]
) -> None:
    proto = next(p for p in PROTOCOLS if p.name == name)
    server.script(Reply(200, body))
    assert proto.make(server.url, FAST)("q", max_tokens=40).text == "done"
