"""``LearnedAnswerability``: can this question be answered from this evidence?

Implements the controller's ``AnswerabilityModel`` protocol (``threshold``,
``score(question, evidence) -> probability``). The evidence (the top retrieved
chunks) is first trimmed to the sentences most relevant to the question, as in
training (scripts/answer_data.py), then scored with windowing (max over windows).
"""

from __future__ import annotations

from pathlib import Path

from verityrag.crossenc.evidence import trim_evidence
from verityrag.crossenc.learned import LearnedPairCheck

ANSWER_DIR_ENV = "VERITY_ANSWER_DIR"
DEFAULT_ANSWER_DIR = Path("guard_work/answerability")
BUILD_ANSWERABILITY = "make models-answerability"
#: Word budget of trimmed evidence; the same value trains the model (scripts/answer_data.py).
#: 80 words keep a gold answer for 97.3% of answerable SQuAD 2.0 questions (120: 99.8%, 64: 94.9%)
#: at ~70% of the tokens of 120.
EVIDENCE_WORDS = 80


class LearnedAnswerability(LearnedPairCheck):
    """The answerability cross-encoder, loaded from ``VERITY_ANSWER_DIR`` (default guard_work/answerability)."""

    what = "the answerability model"
    env_var = ANSWER_DIR_ENV
    default_dir = DEFAULT_ANSWER_DIR
    build_command = BUILD_ANSWERABILITY

    def score(self, question: str, evidence: str) -> float:
        return self.scorer.score_pairs([(question, trim_evidence(question, evidence, EVIDENCE_WORDS))])[0]

    def score_many(self, pairs: list[tuple[str, str]]) -> list[float]:
        return self.scorer.score_pairs([(q, trim_evidence(q, e, EVIDENCE_WORDS)) for q, e in pairs])
