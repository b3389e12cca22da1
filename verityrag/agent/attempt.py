"""``Attempt``: one retrieval of the agent's loop, with what the gate and the reader made of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from verityrag.agent.sufficiency import GATE_FEATURES, READER_FEATURES
from verityrag.generation.reading import Reading
from verityrag.generation.sentence_selector import ScoredSentence
from verityrag.types import Hit


@dataclass
class Attempt:
    query: str
    strategy: str
    hits: list[Hit]
    sentences: list[ScoredSentence]
    probability: float
    features: list[float]
    timings_ms: dict[str, float] = field(default_factory=dict)
    reading: Reading | None = None  # what the extractive reader found (None: no reader)
    # Every hit the retrieval ranked (``hits`` is their top): where a source that disagrees is
    # looked for when others crowd it out of the top (an attacker's keyword-stuffed copies).
    candidates: list[Hit] = field(default_factory=list)

    def trace_details(self) -> dict[str, Any]:
        names = GATE_FEATURES + (READER_FEATURES if len(self.features) > len(GATE_FEATURES) else ())
        details = {
            "query": self.query,
            "strategy": self.strategy,
            # Exact, not rounded: the gate's calibrated probabilities come in steps and often sit
            # exactly on the threshold (37/45 = 0.8222...); a rounded one reads as under it.
            "probability": self.probability,
            "top_chunks": [h.chunk_id for h in self.hits[:3]],
            "features": dict(zip(names, (round(f, 4) for f in self.features), strict=True)),
            "timings_ms": {k: round(v, 3) for k, v in self.timings_ms.items()},
        }
        if self.reading is not None:
            details["reader"] = self.reading.trace_details()
        return details
