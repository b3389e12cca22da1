"""Made-up ``QueryResult``s that reach every field of the reply: an answer and a refusal."""

from __future__ import annotations

import numpy as np

from verityrag.types import (
    AbstainReason,
    Chunk,
    Citation,
    CitedSentence,
    ClaimSupport,
    GroundingReport,
    Hit,
    QueryResult,
    ShortAnswer,
    TraceStep,
)

TEXT = "The Kellmark lighthouse stands on the pier. It was designed by Ilse Varga in 1911."
CHUNK = Chunk("notes/kellmark#0", "notes/kellmark", "Kellmark lighthouse", TEXT, 0, 0, len(TEXT))
CITATION = Citation(
    "notes/kellmark#0", "notes/kellmark", "Kellmark lighthouse", 44, 82, "notes.txt", 1764659640.123
)
# Trace details as the agent records them: numpy scalars, a non-finite score, nested lists, an enum.
TRACE = (
    TraceStep(
        "attempt_0",
        0.8125,
        {"strategy": "original", "probability": np.float32(0.75), "top_chunks": ["notes/kellmark#0"]},
    ),
    TraceStep(
        "grounding", 0.125, {"score": 0.91, "threshold": 0.5, "margin": float("inf"), "n": np.int64(2)}
    ),
    TraceStep("answer", 0.0625, {"probability": 0.93, "reason": AbstainReason.READER, "pair": (1, None)}),
)

ANSWER = QueryResult(
    question="Who designed the Kellmark lighthouse — and when?",
    answer="It was designed by Ilse Varga in 1911.",
    abstained=False,
    abstain_reason=None,
    grounding=GroundingReport(
        0.91, (ClaimSupport("It was designed by Ilse Varga in 1911.", 0.91, {"nli": 0.9, "sentence": 0.0}),)
    ),
    confidence=0.93,
    sentences=(CitedSentence("It was designed by Ilse Varga in 1911.", (CITATION,)),),
    evidence=(Hit(CHUNK, 0.7, bm25_score=3.2),),
    trace=TRACE,
    unsupported_claims=("A claim no passage supports.",),
    short_answer=ShortAnswer("Ilse Varga", "notes/kellmark#0", 63, 73, 0.96),
)

REFUSAL = QueryResult(
    question="What colour is the Kellmark lighthouse?",
    answer=None,
    abstained=True,
    abstain_reason=AbstainReason.SUFFICIENCY,
    grounding=GroundingReport(0.0),
    confidence=0.25,
    evidence=(Hit(CHUNK, 0.4),),
    trace=(TraceStep("abstain", 0.5, {"reason": "sufficiency", "probability": 0.01}),),
    explanation="the documents found do not cover the question well enough to answer it",
)
