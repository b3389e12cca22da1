"""``LearnedAnswerability``: can this question be answered from this evidence?

Implements the controller's ``AnswerabilityModel`` protocol (``threshold``,
``score(question, evidence) -> probability``). The evidence (the top retrieved
chunks) is first trimmed to the sentences most relevant to the question, as in
training (python -m verityrag.train answerability-data), then scored with windowing (max over windows).
"""

from __future__ import annotations

from verityrag.checks.learned_check import LearnedPairCheck
from verityrag.models.evidence import trim_evidence
from verityrag.models.folder import model_folder

#: The served gate: all-mpnet-base-v2 cut to 6 layers (split_b AUROC 0.745 vs MiniLM's 0.680 at
#: 67.6 MB int8 and ~12-18 ms per pair; the former diary, git show 147e66a:ROADMAP.md, sessions 10 and 15).
DEFAULT_ANSWER_DIR = model_folder("answerability_mpnet6")
BUILD_ANSWERABILITY = "make models-answerability-mpnet"
#: The MiniLM gate and the training pairs every answerability model reads (python -m verityrag.train answerability-data,
#: python -m verityrag.train answerability's defaults); the reader check's span model starts from it. Faster to
#: build (~90 min against ~4.5 h) and weaker: serve it with ``VERITYRAG_ANSWER_DIR=guard_work/answerability``
#: (``Settings.answerability_dir``).
ANSWER_TRAINING_DIR = model_folder("answerability")
#: Word budget of trimmed evidence; the same value trains the model (python -m verityrag.train answerability-data).
#: 80 words keep a gold answer for 97.3% of answerable SQuAD 2.0 questions (120: 99.8%, 64: 94.9%)
#: at ~70% of the tokens of 120.
EVIDENCE_WORDS = 80


class LearnedAnswerability(LearnedPairCheck):
    """The answerability cross-encoder, loaded from ``model_dir`` (``Settings.answerability_dir``,
    ``VERITYRAG_ANSWER_DIR``; default ``answerability_mpnet6`` under the models root,
    :mod:`verityrag.models.folder`)."""

    what = "the answerability model"
    folder_name = DEFAULT_ANSWER_DIR.name
    settings_field = "answerability_dir"
    build_command = BUILD_ANSWERABILITY
    long_side = "second"

    def score(self, question: str, evidence: str) -> float:
        return self.scorer.score_pairs([(question, trim_evidence(question, evidence, EVIDENCE_WORDS))])[0]

    def score_many(self, pairs: list[tuple[str, str]]) -> list[float]:
        return self.scorer.score_pairs([(q, trim_evidence(q, e, EVIDENCE_WORDS)) for q, e in pairs])
