"""The verifier stack: cheapest checks first, each later stage sees only the survivors.

    deterministic (numbers, dates, names of the sentence found in the evidence; ~0.1 ms)
        -> NLI (a cross-encoder or ensemble; ~10-30 ms per sentence on CPU)
        -> LLM judge (a network call; only for what the NLI stage passed)

A sentence rejected by a stage keeps that stage's result; a survivor gets the last
stage's result. Every result's ``details["stack"]`` holds the per-stage counts and
timings of the whole call (the trace), and ``details["stages"]`` the stages it went through.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from verityrag.errors import InvalidInputError
from verityrag.types import GroundingReport
from verityrag.verify.grounding import GroundingChecker
from verityrag.verify.grounding_verifier import check_sentences
from verityrag.verify.protocols import VerificationResult, Verifier, check_verify_arguments

__all__ = ["DeterministicVerifier", "StageStats", "VerifierStack"]


class DeterministicVerifier:
    """Every number, date and name of a sentence must occur in the evidence.

    Reuses :class:`GroundingChecker`'s atoms (numbers compared canonically: ``1,000`` =
    ``1000``, ``.5`` = ``0.5``, signs kept; a month next to a day or year, ISO dates read
    as written ones) and name matching (capitalised words of any script, as a phrase, else
    the share of their words). A
    sentence passes when its weakest claim has ``numbers == 1`` and ``entities >=
    min_entity_share``. Word overlap is *not* judged here: that is the NLI stage's job.
    """

    stage = "deterministic"

    def __init__(self, checker: GroundingChecker | None = None, min_entity_share: float = 1.0) -> None:
        if not 0.0 <= min_entity_share <= 1.0:
            raise InvalidInputError("min_entity_share", f"must be within [0, 1], got {min_entity_share!r}")
        self.checker = checker or GroundingChecker()
        self.min_entity_share = min_entity_share

    def verify(self, sentences: Sequence[str], documents: Sequence[str]) -> list[VerificationResult]:
        return check_sentences(
            self.checker, sentences, documents, self.stage, self._result, prefix="ev", skip_blank=True
        )

    def _result(self, sentence: str, report: GroundingReport) -> VerificationResult:
        numbers = min((c.details.get("numbers", 1.0) for c in report.claims), default=1.0)
        entities = min((c.details.get("entities", 1.0) for c in report.claims), default=1.0)
        passed = numbers >= 1.0 and entities >= self.min_entity_share
        missing = [name for name, v in (("numbers/dates", numbers), ("names", entities)) if v < 1.0]
        return VerificationResult(
            sentence,
            min(numbers, entities),
            passed,
            self.stage,
            reason="all numbers, dates and names found"
            if not missing
            else f"missing {' and '.join(missing)}",
            details={"numbers": numbers, "entities": entities},
        )


@dataclass(frozen=True, slots=True)
class StageStats:
    """One stage of one stack call: how many sentences went in, passed, were rejected, and its time."""

    stage: str
    checked: int
    passed: int
    rejected: int
    ms: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "checked": self.checked,
            "passed": self.passed,
            "rejected": self.rejected,
            "ms": round(self.ms, 3),
        }


class VerifierStack:
    """Runs ``stages`` in order (give them cheapest first); a rejected sentence stops there.

    ``VerifierStack.default(nli=..., judge=...)`` builds deterministic -> NLI -> judge,
    skipping the stages that are ``None``.
    """

    def __init__(self, stages: Sequence[Verifier]) -> None:
        if not stages:
            raise InvalidInputError("stages", "the stack needs at least one verifier")
        self.stages = list(stages)

    @classmethod
    def default(
        cls, nli: Verifier | None = None, judge: Verifier | None = None, deterministic: bool = True
    ) -> VerifierStack:
        stages: list[Verifier] = [DeterministicVerifier()] if deterministic else []
        stages += [v for v in (nli, judge) if v is not None]
        return cls(stages)

    def __repr__(self) -> str:
        return f"VerifierStack({self.stages!r})"

    def run(
        self, sentences: Sequence[str], documents: Sequence[str]
    ) -> tuple[list[VerificationResult], list[StageStats]]:
        """Final results per sentence, and the stats of every stage that ran."""
        check_verify_arguments(sentences, documents)
        final: list[VerificationResult | None] = [None] * len(sentences)
        path: list[list[str]] = [[] for _ in sentences]
        alive = list(range(len(sentences)))
        stats: list[StageStats] = []
        for verifier in self.stages:
            if not alive:
                break
            name = str(getattr(verifier, "stage", type(verifier).__name__))
            t0 = time.perf_counter()
            results = verifier.verify([sentences[i] for i in alive], documents)
            ms = (time.perf_counter() - t0) * 1000
            if len(results) != len(alive):
                raise ValueError(f"{verifier!r} returned {len(results)} results for {len(alive)} sentences")
            survivors = []
            for i, result in zip(alive, results, strict=True):
                final[i] = result
                path[i].append(name)
                if result.supported:
                    survivors.append(i)
            stats.append(StageStats(name, len(alive), len(survivors), len(alive) - len(survivors), ms))
            alive = survivors
        trace = [s.as_dict() for s in stats]
        out = []
        for i, maybe in enumerate(final):
            assert maybe is not None
            result = maybe
            out.append(
                VerificationResult(
                    result.sentence,
                    result.score,
                    result.supported,
                    result.stage,
                    result.reason,
                    result.error,
                    {**result.details, "stages": path[i], "stack": trace},
                )
            )
        return out, stats

    def verify(self, sentences: Sequence[str], documents: Sequence[str]) -> list[VerificationResult]:
        return self.run(sentences, documents)[0]
