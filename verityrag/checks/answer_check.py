"""``AnswerCheck``: is the reader's short answer the answer to the question, by the sentence quoted for it?

The reader scores its best span against "no answer" over the text it read; a span that answers
a nearby question (the other clinic's price, the head vet for the practice manager, the number
of vets for the number of nurses) can score high there. This check reads what the user is shown:
the question with the short answer, against the sentence(s) quoted for it. It is a cross-encoder
trained (``python -m verityrag.train answer-check``) on positives (a question, its gold answer,
the sentence holding it) and on the negatives a reader gives:

- SQuAD 2.0's ``plausible_answers``: the span a reader would wrongly give to an unanswerable
  question, with the sentence that holds it (the negatives of NLI verifiers for QA, Chen et
  al. 2021, "Can NLI Models Verify QA Systems' Predictions?");
- another question's answer from the same paragraph (a nearby fact, often of the same kind);
- the reader's own spans for user-domain questions that must be refused, and its wrong spans
  for answerable ones.

Implements the agent's answer-check protocol: ``threshold`` and ``score(question, answer,
sentences) -> probability``.
"""

from __future__ import annotations

from verityrag.checks.learned_check import LearnedPairCheck
from verityrag.models.folder import model_folder

#: Where ``python -m verityrag.train answer-check`` writes the model it builds, and where it is served from.
ANSWER_CHECK_TRAINING_DIR = model_folder("answer_check")
BUILD_ANSWER_CHECK = "make models-answer-check"


def answer_statement(question: str, answer: str) -> str:
    """The check's first text: the question and the answer given to it, as in training."""
    return f"{' '.join(question.split())} Answer: {' '.join(answer.split())}"


class AnswerCheck(LearnedPairCheck):
    """The answer check, loaded from ``model_dir`` (``Settings.answer_check_dir``,
    ``VERITYRAG_ANSWER_CHECK_DIR``; default ``answer_check`` under the models root,
    :mod:`verityrag.models.folder`)."""

    what = "the answer check"
    folder_name = ANSWER_CHECK_TRAINING_DIR.name
    settings_field = "answer_check_dir"
    build_command = BUILD_ANSWER_CHECK
    long_side = "second"

    def score(self, question: str, answer: str, sentences: str) -> float:
        """The probability that ``answer`` answers ``question``, by ``sentences`` (the quoted ones)."""
        return self.scorer.score_pairs([(answer_statement(question, answer), sentences)])[0]
