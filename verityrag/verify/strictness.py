"""Strictness levels: one table of thresholds, and what each level does with unsupported sentences.

| level    | grounding threshold | drops unsupported sentences | min faithfulness of what remains |
| -------- | ------------------- | --------------------------- | -------------------------------- |
| loose    | 0.30                | no (verification informational) | -                            |
| balanced | 0.50                | yes                         | 0.50                             |
| strict   | 0.70                | yes                         | 0.80                             |
| paranoid | 0.85                | yes                         | 1.00 (any unsupported sentence refuses) |

``grounding threshold`` is the minimum :class:`~verityrag.verify.grounding.GroundingChecker`
score the agent accepts. ``faithfulness`` is the supported share of the answer's
characters: dropping an unsupported sentence leaves a shorter answer, and the level
refuses when too little of the original answer survived. ``lenient``, the earlier name
of ``loose``, is still accepted by ``Settings`` and :func:`strictness_policy`; the API takes
only the four levels. docs/verification.md holds the same table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from verityrag.config import STRICTNESS_ALIASES, STRICTNESS_LEVELS, Strictness
from verityrag.errors import InvalidInputError
from verityrag.verify.protocols import VerificationResult

__all__ = [
    "STRICTNESS_ALIASES",
    "STRICTNESS_LEVELS",
    "STRICTNESS_TABLE",
    "StrictnessOutcome",
    "StrictnessPolicy",
    "apply_strictness",
    "strictness_policy",
]

# The levels are defined once, in verityrag.config (Settings validates against them): one name
# each, Strictness and STRICTNESS_LEVELS.


@dataclass(frozen=True, slots=True)
class StrictnessPolicy:
    level: Strictness
    grounding_threshold: float
    drops_unsupported: bool
    min_faithfulness: float
    # Added to the reader's answer threshold (on the answer logit: best span minus no answer),
    # so a stricter level wants a surer reader before it answers.
    reader_margin: float = 0.0


STRICTNESS_TABLE: dict[Strictness, StrictnessPolicy] = {
    "loose": StrictnessPolicy("loose", 0.30, False, 0.0, reader_margin=-1.5),
    "balanced": StrictnessPolicy("balanced", 0.50, True, 0.50, reader_margin=0.0),
    "strict": StrictnessPolicy("strict", 0.70, True, 0.80, reader_margin=1.5),
    "paranoid": StrictnessPolicy("paranoid", 0.85, True, 1.00, reader_margin=3.0),
}


def strictness_policy(level: str) -> StrictnessPolicy:
    """The row of :data:`STRICTNESS_TABLE` for ``level`` (or an alias such as ``lenient``)."""
    name = STRICTNESS_ALIASES.get(level, level)
    if name not in STRICTNESS_TABLE:
        allowed = ", ".join([*STRICTNESS_LEVELS, *STRICTNESS_ALIASES])
        raise InvalidInputError("strictness", f"{level!r} is not one of {allowed}")
    return STRICTNESS_TABLE[name]


@dataclass(frozen=True, slots=True)
class StrictnessOutcome:
    """What a level made of verified sentences. ``refusal`` is ``None`` when the answer stands."""

    level: Strictness
    kept: tuple[str, ...]
    unsupported_claims: tuple[str, ...]
    faithfulness: float
    refusal: str | None  # "verifier_error" | "unfaithful" | "nothing_supported"
    errors: tuple[str, ...] = ()

    @property
    def refused(self) -> bool:
        return self.refusal is not None

    @property
    def answer(self) -> str:
        return " ".join(self.kept)


def apply_strictness(results: Sequence[VerificationResult], level: str) -> StrictnessOutcome:
    """Apply ``level`` to the verifier's ``results`` (one per answer sentence, in order).

    A fail-closed verifier error refuses at every level but ``loose`` (reason
    ``verifier_error``); the agent maps that to ``AbstainReason.VERIFIER_ERROR``.
    """
    policy = strictness_policy(level)
    total = sum(len(r.sentence) for r in results)
    supported = [r for r in results if r.supported]
    unsupported = tuple(r.sentence for r in results if not r.supported)
    errors = tuple(r.error for r in results if r.error and not r.supported)
    faithfulness = sum(len(r.sentence) for r in supported) / total if total else 0.0
    if not policy.drops_unsupported:
        kept = tuple(r.sentence for r in results)
        return StrictnessOutcome(
            policy.level, kept, unsupported, faithfulness, None if kept else "nothing_supported", errors
        )
    kept = tuple(r.sentence for r in supported)
    refusal: str | None = None
    if errors:
        refusal = "verifier_error"
    elif not kept:
        refusal = "nothing_supported"
    elif faithfulness < policy.min_faithfulness:
        refusal = "unfaithful"
    return StrictnessOutcome(policy.level, kept, unsupported, faithfulness, refusal, errors)
