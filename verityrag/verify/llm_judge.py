"""The LLM-prompt verifier: a few-shot fact-check prompt, a JSON verdict, and a failure policy.

The judge asks any :class:`~verityrag.generation.completion.CompleteFn` (temperature 0,
``json_mode=True``) whether a statement is supported by the context, clamped to
``context_budget_chars`` (default 4,000). The answer must be one JSON object::

    {"verdict": "SUPPORTED" | "NOT_SUPPORTED" | "NEEDS_CLARIFICATION",
     "is_grounded": true | false, "reasoning": "...", "confidence_score": 0-100}

Parsing is strict about the schema and lenient about types: ``"85"``, ``"85%"`` and
``85.0`` are 85; ``"true"``, ``"yes"``, ``1`` are true; the verdict is case- and
separator-insensitive (``"not supported"``). Anything else is a malformed verdict.

A malformed verdict, a timeout or a transport error never escapes :meth:`verify`:

- ``fail_closed`` (default): the sentence is unsupported, ``error`` is set and
  ``reason="verifier_error"``; the agent maps that to ``AbstainReason.VERIFIER_ERROR``.
- ``fail_open``: the sentence passes with ``error`` set; answers are annotated instead
  of refused (:func:`annotate_answer`): ``" [Confidence: N%]"`` and, when the verdict is
  ungrounded or under 50, ``" [Warning: Low confidence. Groundedness: <bool>]"``.
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

from verityrag.errors import InvalidInputError, LLMResponseError
from verityrag.generation.completion import CompleteFn
from verityrag.verify.protocols import VerificationResult

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


class MalformedVerdictError(LLMResponseError):
    """The model answered, but not with a verdict of the required schema."""

    def __init__(self, problem: str) -> None:
        super().__init__("llm_judge", problem)


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
_TRUE = {"true", "yes", "1", "y"}
_FALSE = {"false", "no", "0", "n"}
_KEYS = ("verdict", "is_grounded", "reasoning", "confidence_score")


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise MalformedVerdictError(f"is_grounded must be a boolean, got {value!r}")


def _as_confidence(value: Any) -> int:
    number: float
    if isinstance(value, bool):
        raise MalformedVerdictError(f"confidence_score must be a number 0-100, got {value!r}")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip().rstrip("%").strip())
        except ValueError:
            raise MalformedVerdictError(f"confidence_score must be a number 0-100, got {value!r}") from None
    else:
        raise MalformedVerdictError(f"confidence_score must be a number 0-100, got {value!r}")
    if not math.isfinite(number) or not 0 <= number <= 100:
        raise MalformedVerdictError(f"confidence_score must be within 0-100, got {value!r}")
    return round(number)


def _as_verdict(value: Any) -> VerdictName:
    if isinstance(value, str):
        name = re.sub(r"[\s\-]+", "_", value.strip().upper())
        for verdict in VERDICTS:
            if name == verdict:
                return verdict  # type: ignore[return-value]
    raise MalformedVerdictError(f"verdict must be one of {', '.join(VERDICTS)}, got {value!r}")


def parse_verdict(text: str) -> JudgeVerdict:
    """The verdict in ``text`` (a JSON object, optionally in a ```json fence); raises MalformedVerdictError."""
    body = text.strip()
    fenced = _FENCE_RE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise MalformedVerdictError(f"not JSON ({exc.msg} at char {exc.pos}): {text[:120]!r}") from None
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


def clamp_context(documents: Sequence[str], budget_chars: int) -> str:
    """The documents joined, cut to ``budget_chars``: each keeps an equal share, cut at a word."""
    docs = [d.strip() for d in documents if d.strip()]
    joined = "\n\n".join(docs)
    if len(joined) <= budget_chars:
        return joined
    share = max(1, budget_chars // len(docs) - 2)
    parts = []
    for doc in docs:
        if len(doc) > share:
            cut = doc[:share]
            space = cut.rfind(" ")
            doc = (cut[:space] if space > share // 2 else cut).rstrip() + " …"
        parts.append(doc)
    return "\n\n".join(parts)[:budget_chars]


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
        return [self._verify_one(s, documents) for s in sentences]

    async def averify(self, sentences: Sequence[str], documents: Sequence[str]) -> list[VerificationResult]:
        """``verify`` in worker threads, so an event loop serves other requests meanwhile."""
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
        supported = verdict.supported
        if self.failure_policy == "fail_open":
            details["annotation"] = annotate_answer("", verdict)
            supported = True  # fail-open annotates instead of refusing
        return VerificationResult(
            sentence,
            verdict.support_probability,
            supported,
            self.stage,
            reason=verdict.reasoning,
            details=details,
        )
