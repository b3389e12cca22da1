"""LLM answers with citations: the prompt numbers the evidence, every sentence cites it.

:class:`LLMGenerator` numbers the evidence chunks ``[1]..[k]`` in the prompt, asks the
model to cite the numbers after each sentence, and parses the answer back into
:class:`~verityrag.types.CitedSentence` objects: each ``[n]`` marker (``[1]``, ``[1, 3]``,
``[2-3]``, ``[1][2]``) becomes a :class:`~verityrag.types.Citation` of chunk ``n`` and
is removed from the text. A sentence that cites nothing, or only numbers outside
``1..k``, keeps an empty citation tuple: it counts as unsupported.

Two prompt styles:

- ``"instruct"`` (chat models: Gemini, Claude, anything behind an OpenAI-compatible
  server): instructions in the system prompt, evidence and question in the user turn.
- ``"base"`` (a plain language model such as the offline gemma-3-270m): one worked
  example, then the evidence and the question, and an answer opened with
  ``According to [`` so the model's first token *is* a citation number.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

from verityrag.errors import InvalidInputError
from verityrag.llm import CompleteFn, Completion, valid_unicode
from verityrag.text.sentences import split_sentences
from verityrag.types import Citation, CitedSentence, Hit

__all__ = [
    "PROMPT_STYLES",
    "REFUSAL",
    "Feedback",
    "LLMAnswer",
    "LLMGenerator",
    "PromptStyle",
    "parse_cited_sentences",
]

PromptStyle = Literal["instruct", "base"]
PROMPT_STYLES: tuple[str, ...] = get_args(PromptStyle)

# What an instruct model is told to say when the evidence does not hold the answer.
REFUSAL = "I cannot answer from the evidence."

_MARKER_RE = re.compile(r"\s*\[(\d+(?:\s*[,;\-\u2013]\s*\d+)*)\]")
_LEADING_MARKERS_RE = re.compile(r"^(?:\s*\[\d+(?:\s*[,;\-\u2013]\s*\d+)*\])+")
_ACCORDING_TO_RE = re.compile(r"^\s*According to ((?:\[[^\]]*\]\s*(?:and\s*)?)+),?\s*", re.IGNORECASE)
_SPACE_BEFORE_PUNCT_RE = re.compile(r"\s+([.,;:!?])")
_ANSWER_LABEL_RE = re.compile(r"^\s*(?:answer|a)\s*:\s*", re.IGNORECASE)
# A list marker at the start of a line: "- ", "* ", "• ", "1. ", "2) ".
_LIST_MARKER_RE = re.compile(r"^\s*(?:[-*\u2022]|\d{1,3}[.)])\s+")
# Markers glued to the sentence end ("...in 1889.[1] It is..."; closing quotes or brackets may
# come between): the splitter sees no boundary there, so they are moved before the punctuation.
_GLUED_MARKERS_RE = re.compile(r"([.!?]+[\"'\u201d\u2019)]*)((?:\[\d+(?:\s*[,;\-\u2013]\s*\d+)*\])+)")

_INSTRUCT_SYSTEM = (
    "You answer questions using only the numbered evidence passages you are given. "
    "Write one to three short sentences. End every sentence with the number of the passage "
    "it rests on in square brackets, like [2]; cite several as [1][3]. Do not use outside "
    f'knowledge. If the evidence does not contain the answer, reply exactly: "{REFUSAL}"'
)

# One worked example for the base model (a made-up topic that is not in any corpus),
# so a plain language model sees the format it is asked to continue.
_BASE_EXAMPLE = (
    "Evidence:\n"
    "[1] (Lake Varn) Lake Varn is a freshwater lake in the northern hills. Its deepest point is 84 metres.\n"
    "[2] (Orvel Bridge) The Orvel Bridge was opened in 1871. It was designed by Ada Whitcombe.\n"
    "Question: Who designed the Orvel Bridge?\n"
    "Answer: According to [2], the Orvel Bridge was designed by Ada Whitcombe.\n"
)
_BASE_ANSWER_PREFIX = "According to ["


@dataclass(frozen=True, slots=True)
class Feedback:
    """Why a previous answer was rejected: which claim, against which evidence numbers."""

    claim: str
    evidence: tuple[int, ...]
    reason: str

    def render(self) -> str:
        cited = ", ".join(f"[{n}]" for n in self.evidence) if self.evidence else "no evidence"
        return f'"{self.claim}" (cited {cited}): {self.reason}'


@dataclass(frozen=True, slots=True)
class LLMAnswer:
    """One generated answer: its cited sentences and how it was produced.

    ``evidence`` holds the chunks in prompt order (``[1]`` is ``evidence[0]``);
    ``invalid_citations`` the numbers the model cited that were not in the prompt;
    ``refused`` is true when the model said the evidence does not hold the answer.
    """

    sentences: tuple[CitedSentence, ...]
    raw_text: str
    prompt: str
    completion: Completion
    evidence: tuple[Hit, ...]
    invalid_citations: tuple[int, ...] = ()
    refused: bool = False
    latency_ms: float = 0.0
    numbers: tuple[tuple[int, ...], ...] = field(default=())  # cited numbers per sentence

    @property
    def text(self) -> str:
        return " ".join(s.text for s in self.sentences)

    @property
    def uncited(self) -> tuple[CitedSentence, ...]:
        """Sentences that cite nothing valid: unsupported by definition."""
        return tuple(s for s in self.sentences if not s.citations)


def _expand(numbers: str) -> list[int]:
    out: list[int] = []
    for part in re.split(r"\s*[,;]\s*", numbers.strip()):
        bounds = re.split(r"\s*[\-\u2013]\s*", part)
        if len(bounds) == 2 and bounds[0].isdigit() and bounds[1].isdigit():
            lo, hi = int(bounds[0]), int(bounds[1])
            if 0 < hi - lo <= 20:  # a range; anything wider is noise, keep its ends
                out.extend(range(lo, hi + 1))
                continue
        out.extend(int(b) for b in bounds if b.isdigit())
    return out


def _clean(text: str) -> str:
    text = _SPACE_BEFORE_PUNCT_RE.sub(r"\1", " ".join(text.split()))
    return text.strip()


def parse_cited_sentences(
    text: str, evidence: Sequence[Hit]
) -> tuple[list[CitedSentence], list[tuple[int, ...]], list[int]]:
    """Split ``text`` into sentences, turn their ``[n]`` markers into citations of ``evidence[n-1]``.

    Returns the sentences, the valid numbers each cites, and the invalid numbers seen.
    Every non-empty line is a sentence boundary (a list marker ``- ``, ``* ``, ``• ``,
    ``1. ``, ``2) `` at its start is dropped), and each line is split into sentences.
    Markers at the start of a sentence belong to the sentence before it (``... big. [1] It``,
    also glued to its full stop: ``... big.[1] It``), except at the start of a line; a line of
    markers alone belongs to the sentence before it. ``According to [n], X`` is read as ``X [n]``.
    """
    body = _ANSWER_LABEL_RE.sub("", text.strip())
    # (sentence, starts a line); "According to [2], the bridge..." -> "the bridge... [2]"
    # (the base prompt's form).
    parts: list[tuple[str, bool]] = []
    for line in body.splitlines():
        line = " ".join(_LIST_MARKER_RE.sub("", line).split())
        line = _GLUED_MARKERS_RE.sub(r"\2\1", line)
        for j, raw in enumerate(split_sentences(line)):
            m = _ACCORDING_TO_RE.match(raw)
            if m:
                rest = raw[m.end() :]
                rest = rest[:1].upper() + rest[1:]
                markers = "".join(re.findall(r"\[[^\]]*\]", m.group(1)))
                raw = _attach_before_final_punct(rest, markers)
            parts.append((raw, j == 0))

    numbered: list[tuple[str, list[int]]] = []
    for raw, line_start in parts:
        leading = _LEADING_MARKERS_RE.match(raw)
        if leading and not line_start and numbered:
            numbered[-1][1].extend(n for m in _MARKER_RE.findall(leading.group()) for n in _expand(m))
            raw = raw[leading.end() :]
        cited = [n for m in _MARKER_RE.findall(raw) for n in _expand(m)]
        sentence = _clean(_MARKER_RE.sub("", raw))
        if sentence and any(ch.isalnum() for ch in sentence):
            numbered.append((sentence, cited))
        elif numbered:  # a stray marker on its own: it belongs to the sentence before
            numbered[-1][1].extend(cited)

    sentences: list[CitedSentence] = []
    valid_numbers: list[tuple[int, ...]] = []
    invalid: list[int] = []
    for sentence, cited in numbered:
        valid: list[int] = []
        for n in cited:
            if 1 <= n <= len(evidence):
                if n not in valid:
                    valid.append(n)
            elif n not in invalid:
                invalid.append(n)
        citations = tuple(_citation(evidence[n - 1]) for n in valid)
        sentences.append(CitedSentence(sentence, citations))
        valid_numbers.append(tuple(valid))
    return sentences, valid_numbers, invalid


def _attach_before_final_punct(sentence: str, markers: str) -> str:
    sentence = sentence.rstrip()
    if sentence and sentence[-1] in ".!?":
        return f"{sentence[:-1]} {markers}{sentence[-1]}"
    return f"{sentence} {markers}"


def _citation(hit: Hit) -> Citation:
    # The model cites a whole chunk; the span is the chunk's text.
    chunk = hit.chunk
    return Citation(chunk.chunk_id, chunk.doc_id, chunk.title, 0, len(chunk.text))


def _is_refusal(text: str) -> bool:
    # After the "Answer:" label the parser drops too: "Answer: I cannot answer..." was parsed as
    # an uncited sentence, rejected max_attempts times, a grounding abstention, not a refusal.
    norm = " ".join(_ANSWER_LABEL_RE.sub("", text).lower().split()).strip(" \"'.")
    return norm.startswith(REFUSAL.lower().rstrip("."))


class LLMGenerator:
    """Answers from numbered evidence through ``complete_fn``; returns cited sentences.

    ``max_evidence`` chunks go into the prompt (each cut to ``max_chunk_chars``);
    ``style`` is ``"instruct"`` for chat models or ``"base"`` for a plain language model;
    ``worked_example`` shows an instruct model the base prompt's worked example (question,
    evidence, cited answer) before its own question (for small chat models).
    The generator only writes and parses answers; checking them is the verifier's job
    (:class:`~verityrag.generation.verified.RejectAndRetry`, :class:`~verityrag.generation.verified.BestOfN`).
    """

    def __init__(
        self,
        complete_fn: CompleteFn,
        *,
        style: PromptStyle = "instruct",
        max_evidence: int = 5,
        max_chunk_chars: int = 1500,
        max_tokens: int = 200,
        temperature: float = 0.0,
        max_sentences: int | None = None,
        worked_example: bool = False,
        reader_hint: bool = False,
    ) -> None:
        if style not in PROMPT_STYLES:
            raise InvalidInputError("style", f"{style!r} is not one of {list(PROMPT_STYLES)}")
        if max_evidence < 1:
            raise InvalidInputError("max_evidence", f"must be >= 1, got {max_evidence!r}")
        if max_tokens < 1:
            raise InvalidInputError("max_tokens", f"must be >= 1, got {max_tokens!r}")
        # Both silently broke every answer: 0 characters showed the model no evidence, and
        # max_sentences=0 kept no sentence (every attempt rejected), -1 dropped the last one.
        if max_chunk_chars < 1:
            raise InvalidInputError("max_chunk_chars", f"must be >= 1, got {max_chunk_chars!r}")
        if max_sentences is not None and max_sentences < 1:
            raise InvalidInputError("max_sentences", f"must be >= 1 or None, got {max_sentences!r}")
        self.complete_fn = complete_fn
        self.style: PromptStyle = style
        self.max_evidence = max_evidence
        self.max_chunk_chars = max_chunk_chars
        self.max_tokens = max_tokens
        self.temperature = temperature
        # A base model rambles past its answer; keeping the first sentence(s) is its "stop".
        self.max_sentences = max_sentences
        # A small chat model (the offline Qwen 0.5B) answered 4 of 5 questions with citation
        # markers alone ("[1]", "[1] [3]") under the bare instruct prompt; shown the worked
        # example first, 4 of 4 answers opened with a citation (docs/decisions/0050).
        self.worked_example = worked_example
        # The extractive reader's span, when the agent passes one, shown as the likely answer. Off by
        # default: it did not help Qwen2.5-Coder-0.5B-Instruct (11 vs 14 of 35 first answers right;
        # decision 0057); a larger model may use it.
        self.reader_hint = reader_hint

    def __repr__(self) -> str:
        return f"LLMGenerator(complete_fn={self.complete_fn!r}, style={self.style!r})"

    def _evidence_lines(self, hits: Sequence[Hit]) -> str:
        lines = []
        for n, hit in enumerate(hits, start=1):
            text = " ".join(hit.chunk.text.split())
            if len(text) > self.max_chunk_chars:
                text = text[: self.max_chunk_chars].rsplit(" ", 1)[0] + " ..."
            title = f"({hit.chunk.title}) " if hit.chunk.title else ""
            lines.append(f"[{n}] {title}{text}")
        return "\n".join(lines)

    def build_prompt(
        self,
        question: str,
        hits: Sequence[Hit],
        feedback: Sequence[Feedback] = (),
        reader_span: str | None = None,
    ) -> tuple[str | None, str]:
        """``(system, prompt)`` for this question over ``hits[:max_evidence]``; ``reader_span`` is
        shown as the likely answer when the generator was built with ``reader_hint``."""
        evidence = self._evidence_lines(hits[: self.max_evidence])
        question = " ".join(question.split())
        span = " ".join(reader_span.split()) if self.reader_hint and reader_span else ""
        hint = f'Likely answer, found in the evidence: "{span}"\n' if span else ""
        if self.style == "base":
            note = ""
            if feedback:
                # A base model reads this as context: the rejected wording is named so the
                # continuation is steered away from it.
                note = "".join(f"Note: a previous answer was rejected: {f.render()}\n" for f in feedback)
            prompt = f"{_BASE_EXAMPLE}\nEvidence:\n{evidence}\nQuestion: {question}\n{hint}{note}Answer: {_BASE_ANSWER_PREFIX}"
            return None, prompt
        prompt = f"Evidence:\n{evidence}\n\nQuestion: {question}\n{hint}"
        if feedback:
            prompt += (
                "\nYour previous answer was rejected by a fact checker:\n"
                + "".join(f"- {f.render()}\n" for f in feedback)
                + "Answer again. State only what the cited passages say, cite the passage after "
                f'every sentence, or reply exactly "{REFUSAL}"\n'
            )
        if self.worked_example:
            prompt = (
                f"Example:\n{_BASE_EXAMPLE}\nAnswer the next question the same way, from its own "
                f"evidence: one sentence that names its passage.\n\n{prompt}Answer: "
            )
        return _INSTRUCT_SYSTEM, prompt

    def generate(
        self,
        question: str,
        hits: Sequence[Hit],
        feedback: Sequence[Feedback] = (),
        temperature: float | None = None,
        reader_span: str | None = None,
    ) -> LLMAnswer:
        """One answer to ``question`` over ``hits`` (the first ``max_evidence`` are numbered);
        ``reader_span``: the extractive reader's answer, a hint when ``reader_hint`` is on."""
        if not isinstance(question, str) or not question.strip():
            raise InvalidInputError("question", "must be a non-empty string")
        if not hits:
            raise InvalidInputError("hits", "an LLM answer needs at least one evidence chunk")
        evidence = tuple(hits[: self.max_evidence])
        system, prompt = self.build_prompt(question, evidence, feedback, reader_span)
        started = time.perf_counter()
        completion = self.complete_fn(
            prompt,
            system=system,
            temperature=self.temperature if temperature is None else temperature,
            max_tokens=self.max_tokens,
        )
        latency_ms = (time.perf_counter() - started) * 1000
        raw = valid_unicode(completion.text)  # any complete_fn's, not only ours
        if self.style == "base":
            raw = _BASE_ANSWER_PREFIX + raw  # the prefix was part of the prompt
        if _is_refusal(raw):
            return LLMAnswer((), raw, prompt, completion, evidence, refused=True, latency_ms=latency_ms)
        sentences, numbers, invalid = parse_cited_sentences(raw, evidence)
        if self.max_sentences is not None:
            sentences, numbers = sentences[: self.max_sentences], numbers[: self.max_sentences]
        return LLMAnswer(
            tuple(sentences),
            raw,
            prompt,
            completion,
            evidence,
            invalid_citations=tuple(invalid),
            latency_ms=latency_ms,
            numbers=tuple(numbers),
        )
