"""The LLM-prompt verifier against a real local server speaking OpenAI-compatible chat completions."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from llm.llm_http_server import Reply, ScriptedServer

from verityrag.errors import InvalidInputError
from verityrag.llm import HTTPCompleteFn, RetryPolicy, openai_compatible_complete_fn
from verityrag.llm.completion import Completion
from verityrag.verify.llm_judge import (
    JudgeVerdict,
    LLMJudgeVerifier,
    MalformedVerdictError,
    annotate_answer,
    build_prompt,
    clamp_context,
    parse_verdict,
)

EVIDENCE = ["James Watt improved the steam engine in 1769 by adding a separate condenser."]


def verdict_json(verdict: str = "SUPPORTED", grounded: Any = True, confidence: Any = 92) -> str:
    return json.dumps(
        {
            "verdict": verdict,
            "is_grounded": grounded,
            "reasoning": "Stated in the context.",
            "confidence_score": confidence,
        }
    )


# ------------------------------------------------------------------ a real local server


def _reply(kind: str, value: Any) -> Reply:
    """One queued reply as the server sends it: a chat completion, an error status, or a late verdict."""
    if kind == "status":
        return Reply(status=value, body={"error": {"message": "boom"}})
    content, delay = (verdict_json(), value) if kind == "sleep" else (value, 0.0)
    return Reply(
        body={
            "model": "judge-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        },
        delay_s=delay,
    )


class FakeOpenAI:
    """An OpenAI-compatible chat endpoint (tests/llm's ScriptedServer) answering the queued
    ``replies``: ("content", text) | ("status", code) | ("sleep", seconds); then a SUPPORTED verdict."""

    def __init__(self, scripted: ScriptedServer) -> None:
        self._scripted = scripted
        self.url = f"{scripted.url}/v1"
        self.replies = []

    @property
    def replies(self) -> list[tuple[str, Any]]:
        return self._replies

    @replies.setter
    def replies(self, queued: list[tuple[str, Any]]) -> None:
        self._replies = list(queued)
        self._scripted.script(
            *(_reply(kind, value) for kind, value in queued), _reply("content", verdict_json())
        )

    @property
    def requests(self) -> list[dict[str, Any]]:
        return [seen.body for seen in self._scripted.seen]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with ScriptedServer() as scripted:
        yield FakeOpenAI(scripted)


def openai_complete_fn(base_url: str, timeout: float = 5.0) -> HTTPCompleteFn:
    """The project's OpenAI-compatible provider, without retries so failures surface at once."""
    return openai_compatible_complete_fn(
        base_url=base_url,
        model="judge-model",
        api_key="k",
        policy=RetryPolicy(timeout_s=timeout, max_retries=0),
    )


# ------------------------------------------------------------------ over HTTP


@pytest.mark.integration
def test_good_verdict_over_http_is_supported_and_request_is_deterministic_json(server: FakeOpenAI) -> None:
    server.replies = [("content", verdict_json("SUPPORTED", True, 92))]
    judge = LLMJudgeVerifier(openai_complete_fn(server.url))
    [result] = judge.verify(["Watt added a separate condenser."], EVIDENCE)
    assert result.supported
    assert result.error is None
    assert result.stage == "llm_judge"
    assert result.score == pytest.approx(0.92)
    assert result.details["verdict"] == "SUPPORTED"
    sent = server.requests[0]
    assert sent["temperature"] == 0.0
    assert sent["response_format"] == {"type": "json_object"}
    assert "STATEMENT: Watt added a separate condenser." in sent["messages"][1]["content"]
    assert EVIDENCE[0] in sent["messages"][1]["content"]


@pytest.mark.integration
def test_not_supported_verdict_over_http_refuses(server: FakeOpenAI) -> None:
    server.replies = [("content", "```json\n" + verdict_json("not supported", "false", "80") + "\n```")]
    [result] = LLMJudgeVerifier(openai_complete_fn(server.url)).verify(["Watt did it in 1781."], EVIDENCE)
    assert not result.supported
    assert result.error is None
    assert result.score == pytest.approx(0.2)


@pytest.mark.integration
@pytest.mark.parametrize(
    "reply",
    [("content", "Sure! The statement is supported."), ("content", '{"verdict": "MAYBE"}'), ("status", 500)],
    ids=["not-json", "bad-schema", "http-500"],
)
def test_failures_fail_closed_by_default(server: FakeOpenAI, reply: tuple[str, Any]) -> None:
    server.replies = [reply]
    [result] = LLMJudgeVerifier(openai_complete_fn(server.url)).verify(["Watt added a condenser."], EVIDENCE)
    assert result.supported is False
    assert result.reason == "verifier_error"
    assert result.error
    assert ("500" in result.error) == (reply[0] == "status")


@pytest.mark.integration
def test_timeout_fails_closed_and_fast(server: FakeOpenAI) -> None:
    # Fast is proven without a stopwatch: the late reply is a SUPPORTED verdict, and so is any
    # reply after it, so an unsupported result with a timeout error means the judge neither
    # waited for it nor retried (a bound on the call's duration only added a way to fail when busy).
    server.replies = [("sleep", 3.0)]
    judge = LLMJudgeVerifier(openai_complete_fn(server.url, timeout=0.3))
    [result] = judge.verify(["Watt added a condenser."], EVIDENCE)
    assert not result.supported
    assert result.error is not None
    assert "LLMTimeoutError" in result.error


@pytest.mark.integration
def test_fail_open_passes_errors_and_annotates_verdicts(server: FakeOpenAI) -> None:
    server.replies = [("status", 500), ("content", verdict_json("NOT_SUPPORTED", False, 40))]
    judge = LLMJudgeVerifier(openai_complete_fn(server.url), failure_policy="fail_open")
    failed, judged = judge.verify(["First.", "Second."], EVIDENCE)
    assert failed.supported
    assert failed.error
    assert failed.reason.startswith("fail_open")
    # Fail-open is about errors: a clear NOT_SUPPORTED verdict stays unsupported (so the
    # strictness level drops or refuses it), and carries the annotation for the answer.
    assert not judged.supported
    assert judged.error is None
    assert judged.details["annotation"] == " [Confidence: 40%] [Warning: Low confidence. Groundedness: false]"


@pytest.mark.integration
def test_averify_matches_verify(server: FakeOpenAI) -> None:
    judge = LLMJudgeVerifier(openai_complete_fn(server.url))
    results = asyncio.run(judge.averify(["One.", "Two."], EVIDENCE))
    assert [r.supported for r in results] == [True, True]


# ------------------------------------------------------------------ parsing and prompt (pure)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (verdict_json("SUPPORTED", True, 85), ("SUPPORTED", True, 85)),
        (verdict_json("supported", "true", "85"), ("SUPPORTED", True, 85)),
        (verdict_json("Not-Supported", "no", "85%"), ("NOT_SUPPORTED", False, 85)),
        (verdict_json("NEEDS CLARIFICATION", 0, 70.4), ("NEEDS_CLARIFICATION", False, 70)),
        ("```json\n" + verdict_json() + "\n```", ("SUPPORTED", True, 92)),
    ],
)
def test_parse_verdict_coerces_types(text: str, expected: tuple[str, bool, int]) -> None:
    v = parse_verdict(text)
    assert (v.verdict, v.is_grounded, v.confidence_score) == expected


@pytest.mark.unit
@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "JSON object"),
        ('{"verdict": "SUPPORTED"}', "missing key"),
        (verdict_json("PROBABLY"), "verdict must be one of"),
        (verdict_json(grounded="maybe"), "is_grounded"),
        (verdict_json(confidence=150), "0-100"),
        (verdict_json(confidence="high"), "confidence_score"),
        (verdict_json(confidence=True), "confidence_score"),
    ],
)
def test_parse_verdict_rejects_malformed(text: str, match: str) -> None:
    with pytest.raises(MalformedVerdictError, match=match):
        parse_verdict(text)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("verdict", "expected"),
    [
        ("Supported.", "SUPPORTED"),
        ("NOT_SUPPORTED!", "NOT_SUPPORTED"),
        ("supported\n", "SUPPORTED"),
        (" Needs clarification. ", "NEEDS_CLARIFICATION"),
        ('"NOT SUPPORTED"', "NOT_SUPPORTED"),
        ("**Supported**", "SUPPORTED"),
        ("`not-supported`?!", "NOT_SUPPORTED"),
    ],
)
def test_verdict_with_punctuation_or_whitespace_around_it_is_read(verdict: str, expected: str) -> None:
    assert parse_verdict(verdict_json(verdict)).verdict == expected


@pytest.mark.unit
@pytest.mark.parametrize(
    "verdict",
    [
        "unsupported",
        "unsupported?",
        "Mostly supported",
        "supported (probably)",
        "SUPPORTED. NOT_SUPPORTED",
        "...",
    ],
)
def test_verdict_that_is_another_word_stays_malformed(verdict: str) -> None:
    # Punctuation around a verdict is noise; a different word is not a verdict to guess at.
    with pytest.raises(MalformedVerdictError, match="verdict must be one of"):
        parse_verdict(verdict_json(verdict))


@pytest.mark.unit
def test_supported_needs_verdict_and_groundedness() -> None:
    assert not JudgeVerdict("SUPPORTED", False, "", 90).supported
    assert JudgeVerdict("SUPPORTED", True, "", 90).support_probability == pytest.approx(0.9)


@pytest.mark.unit
def test_context_is_clamped_to_budget_for_every_document() -> None:
    docs = ["alpha " * 2000, "beta " * 2000]
    context = clamp_context(docs, 4000)
    assert len(context) <= 4000
    assert "alpha" in context
    assert "beta" in context
    assert len(build_prompt("s", docs)) < 4000 + 2500
    assert clamp_context(["short"], 4000) == "short"


@pytest.mark.unit
def test_annotation_thresholds() -> None:
    assert annotate_answer("A.", JudgeVerdict("SUPPORTED", True, "", 85)) == "A. [Confidence: 85%]"
    assert annotate_answer("A.", JudgeVerdict("SUPPORTED", True, "", 49)).endswith(
        "[Warning: Low confidence. Groundedness: true]"
    )


@pytest.mark.unit
def test_bad_settings_raise() -> None:
    with pytest.raises(InvalidInputError, match="fail_closed, fail_open"):
        LLMJudgeVerifier(lambda *a, **k: Completion(""), failure_policy="sometimes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="context_budget_chars"):
        LLMJudgeVerifier(lambda *a, **k: Completion(""), context_budget_chars=10)


# ------------------------------------------------------------------ fail-open, fractions, prose, clamp


def _replying(text: str) -> Any:
    return lambda prompt, **kwargs: Completion(text, "judge")


@pytest.mark.unit
@pytest.mark.parametrize(
    ("verdict", "grounded", "confidence", "supported", "annotation"),
    [
        ("SUPPORTED", True, 92, True, " [Confidence: 92%]"),
        ("SUPPORTED", True, 30, True, " [Confidence: 30%] [Warning: Low confidence. Groundedness: true]"),
        (
            "NOT_SUPPORTED",
            False,
            95,
            False,
            " [Confidence: 95%] [Warning: Low confidence. Groundedness: false]",
        ),
        (
            "NEEDS_CLARIFICATION",
            False,
            70,
            False,
            " [Confidence: 70%] [Warning: Low confidence. Groundedness: false]",
        ),
    ],
)
def test_fail_open_keeps_the_verdict_and_annotates_it(
    verdict: str, grounded: bool, confidence: int, supported: bool, annotation: str
) -> None:
    judge = LLMJudgeVerifier(
        _replying(verdict_json(verdict, grounded, confidence)), failure_policy="fail_open"
    )
    [result] = judge.verify(["Watt invented the telephone."], EVIDENCE)
    assert result.supported is supported
    assert result.error is None
    assert result.details["annotation"] == annotation
    closed = LLMJudgeVerifier(_replying(verdict_json(verdict, grounded, confidence)))
    [same] = closed.verify(["Watt invented the telephone."], EVIDENCE)
    assert same.supported is supported  # the policies differ on errors only
    assert "annotation" not in same.details


@pytest.mark.unit
@pytest.mark.parametrize(
    ("confidence", "expected"),
    [
        (0.92, 92),
        ("0.85", 85),
        (0.5, 50),
        (0.004, 0),
        (92, 92),
        ("85%", 85),
        ("0.5%", 0),  # a percent sign means percent, even under one
        (70.4, 70),
        (1, 1),
        (1.0, 1),
        (0, 0),
        (100, 100),
    ],
)
def test_confidence_fraction_is_read_as_a_share(confidence: Any, expected: int) -> None:
    assert parse_verdict(verdict_json(confidence=confidence)).confidence_score == expected


@pytest.mark.unit
@pytest.mark.parametrize("confidence", [150, 100.5, -0.2, "1.5e3", "nan"])
def test_confidence_out_of_range_is_malformed(confidence: Any) -> None:
    with pytest.raises(MalformedVerdictError, match="confidence_score"):
        parse_verdict(verdict_json(confidence=confidence))


@pytest.mark.unit
@pytest.mark.parametrize(
    "text",
    [
        "Here is my verdict:\n" + verdict_json(),
        verdict_json() + "\n\nThe statement matches the context.",
        "Sure.\n```json\n" + verdict_json() + "\n```",
        "Sure.\n```json\n" + verdict_json() + "\n```\nHope that helps {really}.",
        'Format: {"verdict": ...}. Scratch {"note": 1}. Answer: ' + verdict_json(),
        "```\n" + verdict_json() + "\n```",
    ],
    ids=[
        "prose-before",
        "prose-after",
        "prose-then-fence",
        "fence-then-braces",
        "decoys-first",
        "bare-fence",
    ],
)
def test_verdict_wrapped_in_prose_is_found(text: str) -> None:
    v = parse_verdict(text)
    assert (v.verdict, v.is_grounded, v.confidence_score) == ("SUPPORTED", True, 92)


@pytest.mark.unit
def test_judge_reply_with_trailing_text_is_not_a_verifier_error() -> None:
    judge = LLMJudgeVerifier(_replying(verdict_json() + "\nThe context says so."))
    [result] = judge.verify(["Watt added a condenser."], EVIDENCE)
    assert result.supported
    assert result.error is None


@pytest.mark.unit
@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("Sure: {broken", "not JSON"),
        ('I think {"verdict": "SUPPORTED"} fits.', "missing key"),
        ("No braces at all.", "not JSON"),
    ],
)
def test_prose_without_a_verdict_object_is_still_malformed(text: str, match: str) -> None:
    with pytest.raises(MalformedVerdictError, match=match):
        parse_verdict(text)


@pytest.mark.unit
def test_clamp_gives_a_short_document_s_unused_share_to_the_long_one() -> None:
    short = "Watt was a Scottish inventor."
    filler = " ".join(f"filler{i} word" for i in range(200))  # ~2,500 chars
    long = filler + " The separate condenser was added in 1769. " + filler
    context = clamp_context([short, long], 4000)
    assert len(context) <= 4000
    assert len(context) >= 4000 - 20  # the budget is used, not wasted
    assert context.startswith(short + "\n\n")
    assert "1769" in context
    assert context.endswith(" …")


@pytest.mark.unit
@pytest.mark.parametrize("budget", [200, 201, 257, 999, 4000])
@pytest.mark.parametrize(
    "docs",
    [
        ["x" * 150, "y" * 150],
        ["alpha " * 100] * 3,
        ["short one.", "beta gamma " * 300, "tiny", "delta " * 500],
        ["word " * 30 + "z" * 500],
        [f"doc{i} " * 40 for i in range(12)],
    ],
    ids=["unbroken", "equal", "mixed", "long-token", "many"],
)
def test_clamp_never_exceeds_the_budget_and_marks_every_cut(docs: list[str], budget: int) -> None:
    context = clamp_context(docs, budget)
    assert len(context) <= budget
    parts = context.split("\n\n")
    originals = [d.strip() for d in docs]
    assert len(parts) == len(originals)
    for part, original in zip(parts, originals, strict=True):
        if part == original:
            continue
        assert part.endswith(" …"), part[-20:]
        kept = part[: -len(" …")]
        assert original.startswith(kept)
        # cut at a word: a space follows the kept text in the original, unless no word
        # ends in the second half of the share (one overlong token is cut hard)
        follows = original[len(kept) : len(kept) + 1]
        assert follows.isspace() or " " not in kept[len(kept) // 2 :]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("sentences", "documents", "field"),
    [
        ("Watt added a condenser.", EVIDENCE, "sentences"),
        (["Watt added a condenser."], EVIDENCE[0], "documents"),
    ],
)
def test_judge_given_a_bare_string_raises_naming_the_field_before_any_call(
    sentences: Any, documents: Any, field: str
) -> None:
    # A string is a Sequence[str]: the judge made one paid call per character of the sentence.
    calls: list[str] = []

    def complete(prompt: str, **kwargs: Any) -> Completion:
        calls.append(prompt)
        return Completion(verdict_json(), "judge")

    judge = LLMJudgeVerifier(complete)
    with pytest.raises(InvalidInputError, match=field):
        judge.verify(sentences, documents)
    with pytest.raises(InvalidInputError, match=field):
        asyncio.run(judge.averify(sentences, documents))
    assert calls == []
