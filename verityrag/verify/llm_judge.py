"""The LLM-prompt verifier: a few-shot fact-check prompt, a JSON verdict, and a failure policy.

The judge asks any :class:`~verityrag.llm.CompleteFn` (temperature 0,
``json_mode=True``) whether a statement is supported by the context, clamped to
``context_budget_chars`` (default 4,000). The answer must be one JSON object::

    {"verdict": "SUPPORTED" | "NOT_SUPPORTED" | "NEEDS_CLARIFICATION",
     "is_grounded": true | false, "reasoning": "...", "confidence_score": 0-100}

Parsing is strict about the schema and lenient about types and wrapping: ``"85"``,
``"85%"``, ``85.0`` and ``0.85`` are 85 (a non-integer in (0, 1) is a fraction, unless
it carries a ``%``); ``"true"``, ``"yes"``, ``1`` are true; the verdict is case- and
separator-insensitive (``"not supported"``) and punctuation or whitespace around it is
ignored (``"Supported."``); another word is not guessed at (``"unsupported"``, ``"mostly
supported"`` are malformed); the object may sit in a ```json fence or
among prose (the first object with the verdict keys is taken). Anything else is a
malformed verdict.

A malformed verdict, a timeout or a transport error never escapes :meth:`verify`:

- ``fail_closed`` (default): the sentence is unsupported, ``error`` is set and
  ``reason="verifier_error"``; the agent maps that to ``AbstainReason.VERIFIER_ERROR``.
- ``fail_open``: the sentence passes with ``error`` set (score 0.5, no annotation: there
  is no verdict to report).

The policy is about *errors* only. A verdict that parsed decides ``supported`` the same
way under both policies: a NOT_SUPPORTED or NEEDS_CLARIFICATION verdict (or an ungrounded
one) is unsupported, so the strictness level drops it into ``unsupported_claims`` or
refuses the answer, and keeps it (listed) only at ``loose``. Under ``fail_open`` every
verdict also carries ``details["annotation"]`` (:func:`annotate_answer` on ``""``):
``" [Confidence: N%]"`` and, when the verdict is ungrounded or under 50,
``" [Warning: Low confidence. Groundedness: <bool>]"``; the answer strategies
(:mod:`verityrag.generation.verified`) append it to each sentence they keep, in the
answer text and the trace.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from verityrag.errors import InvalidInputError, MalformedVerdictError
from verityrag.llm import CompleteFn
from verityrag.verify.protocols import VerificationResult, check_verify_arguments

__all__ = [
    "FAILURE_POLICIES",
    "VERDICTS",
    "FailurePolicy",
    "JudgeVerdict",
    "LLMJudgeVerifier",
    "MalformedVerdictError",
    "annotate_answer",
    "build_prompt",
    "clamp_context",
    "parse_verdict",
]

logger = logging.getLogger(__name__)

VerdictName = Literal["SUPPORTED", "NOT_SUPPORTED", "NEEDS_CLARIFICATION"]
VERDICTS: tuple[str, ...] = get_args(VerdictName)
FailurePolicy = Literal["fail_closed", "fail_open"]
FAILURE_POLICIES: tuple[str, ...] = get_args(FailurePolicy)
LOW_CONFIDENCE = 50
STAGE = "llm_judge"

SYSTEM_PROMPT = (
    "You are a meticulous fact-checker. You judge whether a STATEMENT is supported by the CONTEXT "
    "alone, ignoring anything you know from elsewhere. Reply with one JSON object and nothing else."
)

FEW_SHOT = """Examples:

CONTEXT: James Watt improved the steam engine in 1769 by adding a separate condenser.
STATEMENT: Watt added a separate condenser to the steam engine.
{"verdict": "SUPPORTED", "is_grounded": true, "reasoning": "The context states Watt added a separate condenser.", "confidence_score": 95}

CONTEXT: James Watt improved the steam engine in 1769 by adding a separate condenser.
STATEMENT: Watt improved the steam engine in 1781.
{"verdict": "NOT_SUPPORTED", "is_grounded": false, "reasoning": "The context gives 1769, not 1781.", "confidence_score": 90}

CONTEXT: The company moved its headquarters in spring.
STATEMENT: The company moved its headquarters to Berlin.
{"verdict": "NEEDS_CLARIFICATION", "is_grounded": false, "reasoning": "The context does not say where the headquarters moved.", "confidence_score": 70}
"""

PROMPT_TEMPLATE = """{few_shot}
Now judge this one. Answer with a JSON object with exactly these keys:
"verdict" (one of SUPPORTED, NOT_SUPPORTED, NEEDS_CLARIFICATION), "is_grounded" (true or false),
"reasoning" (one sentence), "confidence_score" (an integer from 0 to 100).

CONTEXT: {context}
STATEMENT: {statement}
"""


@dataclass(frozen=True, slots=True)
class JudgeVerdict:
    """A parsed verdict. ``supported`` needs the SUPPORTED verdict *and* ``is_grounded``."""

    verdict: VerdictName
    is_grounded: bool
    reasoning: str
    confidence_score: int

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise InvalidInputError("verdict", f"{self.verdict!r} is not one of {', '.join(VERDICTS)}")
        if not 0 <= self.confidence_score <= 100:
            raise InvalidInputError("confidence_score", f"must be within 0..100, got {self.confidence_score}")

    @property
    def supported(self) -> bool:
        return self.verdict == "SUPPORTED" and self.is_grounded

    @property
    def support_probability(self) -> float:
        """The judge's confidence mapped onto P(supported): c for a supported verdict, else 1 - c."""
        c = self.confidence_score / 100
        return c if self.supported else 1.0 - c


# ------------------------------------------------------------------ parsing

_FENCE_RE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S | re.I)
_NUMBER_TEXT_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_TRUE = {"true", "yes", "1", "y"}
_FALSE = {"false", "no", "0", "n"}
_KEYS = ("verdict", "is_grounded", "reasoning", "confidence_score")
# Models dress a verdict word up ("Supported.", "NOT_SUPPORTED!", "`SUPPORTED`"): what is
# around the word is dropped, what is between words is a separator.
_VERDICT_EDGE_RE = re.compile(r"^[\W_]+|[\W_]+$")
_VERDICT_SEPARATOR_RE = re.compile(r"[\s\-_]+")


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise MalformedVerdictError(f"is_grounded must be a boolean, got {value!r}")


def _as_confidence(value: Any) -> int:
    """0-100. A non-integer strictly between 0 and 1 is a fraction (0.92 -> 92), unless
    written with a ``%`` (``"0.5%"`` is half a percent); 1 and 1.0 stay 1%."""
    number: float
    percent = False
    if isinstance(value, bool):
        raise MalformedVerdictError(f"confidence_score must be a number 0-100, got {value!r}")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip()
        percent = text.endswith("%")
        text = text.rstrip("%").strip()
        if not _NUMBER_TEXT_RE.fullmatch(text):
            raise MalformedVerdictError(f"confidence_score must be a number 0-100, got {value!r}")
        number = float(text)
    else:
        raise MalformedVerdictError(f"confidence_score must be a number 0-100, got {value!r}")
    if not math.isfinite(number) or not 0 <= number <= 100:
        raise MalformedVerdictError(f"confidence_score must be within 0-100, got {value!r}")
    if not percent and 0 < number < 1:
        number *= 100
    return round(number)


def _as_verdict(value: Any) -> VerdictName:
    """One of VERDICTS, ignoring case, the separators between words and any punctuation or
    whitespace around them (``"Supported."``, ``"**NOT-supported**"``); other words are not
    guessed at (``"unsupported"``, ``"mostly supported"`` are malformed)."""
    if isinstance(value, str):
        name = _VERDICT_SEPARATOR_RE.sub("_", _VERDICT_EDGE_RE.sub("", value).upper())
        for verdict in VERDICTS:
            if name == verdict:
                return verdict  # type: ignore[return-value]
    raise MalformedVerdictError(f"verdict must be one of {', '.join(VERDICTS)}, got {value!r}")


def _find_json(text: str) -> Any:
    """The JSON value ``text`` holds: the whole (fence stripped) when it parses, else the first
    ``{...}`` object in it with every verdict key (prose before or after it, a fence after
    prose), else the first object that decodes at all (reported as missing keys)."""
    body = text.strip()
    fenced = _FENCE_RE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        first_error = exc
    decoder = json.JSONDecoder()
    fallback: Mapping[str, Any] | None = None
    start = text.find("{")
    while start != -1:
        try:
            data, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(data, Mapping):
            if all(k in data for k in _KEYS):
                return data
            fallback = fallback if fallback is not None else data
        start = text.find("{", start + 1)
    if fallback is not None:
        return fallback
    raise MalformedVerdictError(
        f"not JSON ({first_error.msg} at char {first_error.pos}): {text[:120]!r}"
    ) from None


def parse_verdict(text: str) -> JudgeVerdict:
    """The verdict in ``text`` (a JSON object, bare, in a ```json fence or among prose);
    raises MalformedVerdictError."""
    data = _find_json(text)
    if not isinstance(data, Mapping):
        raise MalformedVerdictError(f"expected a JSON object, got {type(data).__name__}")
    missing = [k for k in _KEYS if k not in data]
    if missing:
        raise MalformedVerdictError(f"missing key(s) {missing}; got {sorted(data)}")
    reasoning = data["reasoning"]
    if not isinstance(reasoning, str):
        raise MalformedVerdictError(f"reasoning must be a string, got {type(reasoning).__name__}")
    return JudgeVerdict(
        verdict=_as_verdict(data["verdict"]),
        is_grounded=_as_bool(data["is_grounded"]),
        reasoning=reasoning.strip(),
        confidence_score=_as_confidence(data["confidence_score"]),
    )


# ------------------------------------------------------------------ prompt


_SEPARATOR = "\n\n"
_CUT_MARK = " …"
_MIN_PART = 8 + len(_CUT_MARK)  # the least a document shows: a word or so, and the mark
_LAST_SPACE_RE = re.compile(r"\s(?=\S*$)")


def _shares(lengths: Sequence[int], budget: int) -> list[int]:
    """Water-filling: each document gets an equal share of ``budget``; what a shorter one
    leaves unused is shared among the longer ones."""
    shares = [0] * len(lengths)
    left, remaining = budget, len(lengths)
    for i in sorted(range(len(lengths)), key=lambda j: lengths[j]):
        shares[i] = min(lengths[i], left // remaining)
        left -= shares[i]
        remaining -= 1
    return shares


def _cut(doc: str, limit: int) -> str:
    """``doc`` in at most ``limit`` characters: whole, or cut at a word and marked " …"."""
    if len(doc) <= limit:
        return doc
    room = limit - len(_CUT_MARK)
    if room < 1:
        return _CUT_MARK.strip()[:limit]
    cut = doc[:room]
    if doc[room : room + 1].isspace():  # the cut already falls between words
        space = room
    else:
        last = _LAST_SPACE_RE.search(cut)
        space = last.start() if last else -1
    kept = (cut[:space] if space > room // 2 else cut).rstrip()
    return kept + _CUT_MARK


def clamp_context(documents: Sequence[str], budget_chars: int) -> str:
    """The documents joined by blank lines, in at most ``budget_chars`` characters.

    Each document gets an equal share, and a short document's unused share goes to the
    longer ones; a document over its share is cut at a word and marked " …". When the
    budget cannot give every document a few characters, the last documents are left out.
    """
    docs = [d.strip() for d in documents if d.strip()]
    joined = _SEPARATOR.join(docs)
    if len(joined) <= budget_chars:
        return joined
    # Keep the documents (in order) that can each show a word or so, or all of a short one.
    need, fit = 0, 0
    for doc in docs:
        need += min(len(doc), _MIN_PART) + (len(_SEPARATOR) if fit else 0)
        if need > budget_chars and fit:
            break
        fit += 1
    docs = docs[:fit]
    room = budget_chars - len(_SEPARATOR) * (len(docs) - 1)
    shares = _shares([len(d) for d in docs], room)
    return _SEPARATOR.join(_cut(doc, share) for doc, share in zip(docs, shares, strict=True))


def build_prompt(statement: str, documents: Sequence[str], budget_chars: int = 4000) -> str:
    return PROMPT_TEMPLATE.format(
        few_shot=FEW_SHOT, context=clamp_context(documents, budget_chars), statement=statement.strip()
    )


def annotate_answer(answer: str, verdict: JudgeVerdict) -> str:
    """Fail-open annotation: the judge's confidence, plus a warning when low or ungrounded."""
    note = f" [Confidence: {verdict.confidence_score}%]"
    if not verdict.is_grounded or verdict.confidence_score < LOW_CONFIDENCE:
        note += f" [Warning: Low confidence. Groundedness: {str(verdict.is_grounded).lower()}]"
    return answer + note


# ------------------------------------------------------------------ verifier


class LLMJudgeVerifier:
    """A :class:`~verityrag.verify.protocols.Verifier` that asks an LLM for a JSON verdict per sentence."""

    stage = STAGE

    def __init__(
        self,
        complete_fn: CompleteFn,
        *,
        context_budget_chars: int = 4000,
        failure_policy: FailurePolicy = "fail_closed",
        max_tokens: int = 300,
    ) -> None:
        if context_budget_chars < 200:
            raise InvalidInputError("context_budget_chars", f"must be >= 200, got {context_budget_chars!r}")
        if failure_policy not in FAILURE_POLICIES:
            raise InvalidInputError(
                "failure_policy", f"{failure_policy!r} is not one of {', '.join(FAILURE_POLICIES)}"
            )
        self.complete_fn = complete_fn
        self.context_budget_chars = context_budget_chars
        self.failure_policy: FailurePolicy = failure_policy
        self.max_tokens = max_tokens

    def judge(self, statement: str, documents: Sequence[str]) -> JudgeVerdict:
        """One verdict; raises ``LLMError`` (including :class:`MalformedVerdictError`) on failure."""
        completion = self.complete_fn(
            build_prompt(statement, documents, self.context_budget_chars),
            system=SYSTEM_PROMPT,
            temperature=0.0,
            max_tokens=self.max_tokens,
            json_mode=True,
        )
        return parse_verdict(completion.text)

    def verify(self, sentences: Sequence[str], documents: Sequence[str]) -> list[VerificationResult]:
        check_verify_arguments(sentences, documents)
        return [self._verify_one(s, documents) for s in sentences]

    async def averify(self, sentences: Sequence[str], documents: Sequence[str]) -> list[VerificationResult]:
        """``verify`` in worker threads, so an event loop serves other requests meanwhile."""
        check_verify_arguments(sentences, documents)
        return list(
            await asyncio.gather(*(asyncio.to_thread(self._verify_one, s, documents) for s in sentences))
        )

    def _verify_one(self, sentence: str, documents: Sequence[str]) -> VerificationResult:
        t0 = time.perf_counter()
        try:
            verdict = self.judge(sentence, documents)
        except Exception as exc:  # a failing judge never crashes a request: the policy decides
            ms = (time.perf_counter() - t0) * 1000
            error = f"{type(exc).__name__}: {exc}"
            open_ = self.failure_policy == "fail_open"
            logger.warning(
                "LLM judge failed (%s, %s): %s",
                self.failure_policy,
                "passing" if open_ else "refusing",
                error,
            )
            return VerificationResult(
                sentence,
                0.5 if open_ else 0.0,
                open_,
                self.stage,
                reason="fail_open: verifier error ignored" if open_ else "verifier_error",
                error=error,
                details={"policy": self.failure_policy, "ms": round(ms, 3)},
            )
        ms = (time.perf_counter() - t0) * 1000
        details: dict[str, Any] = {
            "verdict": verdict.verdict,
            "is_grounded": verdict.is_grounded,
            "confidence_score": verdict.confidence_score,
            "policy": self.failure_policy,
            "ms": round(ms, 3),
        }
        if self.failure_policy == "fail_open":
            # Fail-open passes *errors*; a verdict still decides, and is reported on the answer.
            details["annotation"] = annotate_answer("", verdict)
        return VerificationResult(
            sentence,
            verdict.support_probability,
            verdict.supported,
            self.stage,
            reason=verdict.reasoning,
            details=details,
        )
