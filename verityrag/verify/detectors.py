"""Adapters for the hallucination detectors users bring, by Hugging Face name or local folder.

Three kinds of model, each an :class:`~verityrag.verify.protocols.NLIScorer` (``score_pairs`` ->
P(supported) per (evidence, answer) pair), so :class:`~verityrag.verify.nli_verifier.NLIVerifier`,
the ensembles and the verifier stack take them like any other scorer:

- :class:`TokenHallucinationDetector` (LettuceDetect style, e.g.
  ``KRLabsOrg/lettucedect-base-modernbert-en-v1``): a token classifier over (prompt holding the
  evidence, answer) whose class 1 marks an answer token as unsupported. :meth:`~TokenHallucinationDetector.detect`
  returns the unsupported spans (character offsets into the answer); the pair's score is
  ``1 - max`` over the answer's tokens of P(unsupported).
- :class:`RemoteCodePairScorer` (HHEM style, e.g. ``vectara/hallucination_evaluation_model``): a
  sequence-pair model that ships its own code and its own ``predict(pairs)``; it loads only with
  ``VERIFIER_TRUST_REMOTE_CODE=1`` (or ``trust_remote_code=True``).
- :class:`Seq2SeqSupportScorer` (MiniCheck style, e.g. ``lytang/MiniCheck-Flan-T5-Large``): an
  encoder-decoder reading ``premise: ... hypothesis: ...``; the score is the probability of the
  label token ``"1"`` against ``"0"`` as the first decoded token.

Evidence longer than a model's window is scored in windows of whole sentences (one sentence of
overlap); a pair scores the max over its windows (for the token detector: each answer token
takes its lowest P(unsupported) over the windows, as a token is supported when any window
supports it). Loading follows :class:`~verityrag.verify.nli_verifier.HFSequenceClassificationScorer`:
lazy (first use or ``warm_up()``), a local folder first, then the hub (cache only when
``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` is set), every failed attempt listed in the
:class:`~verityrag.errors.ModelLoadError`.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verityrag.errors import InvalidInputError, ModelLoadError
from verityrag.models.load_once import LoadsOnce
from verityrag.text.sentences import split_sentences
from verityrag.verify.nli_verifier import (
    TRUST_ENV,
    load_hf_model,
    pack_windows,
    trust_remote_code,
    window_size,
)

__all__ = [
    "HallucinatedSpan",
    "RemoteCodePairScorer",
    "Seq2SeqSupportScorer",
    "SpanDetection",
    "TokenHallucinationDetector",
    "merge_spans",
    "sentence_windows",
]

logger = logging.getLogger(__name__)

_QA_PROMPT = (
    "Briefly answer the following question:\n{question}\n"
    "Bear in mind that your response should be strictly based on the following {n} passages:\n"
    "{passages}\n"
    "In case the passages do not contain the necessary information to answer the question, "
    'please reply with: "Unable to answer based on given passages."\noutput:\n'
)
_SUMMARY_PROMPT = "Summarize the following text:\n{passages}\noutput:\n"
_WORD_RE = re.compile(r"\S+")


def sentence_windows(
    text: str, budget: int, lengths: Callable[[list[str]], list[int]], overlap: int = 1
) -> list[str]:
    """``text`` in windows of whole sentences of at most ``budget`` units (``lengths`` counts a
    list of texts: words, tokens), ``overlap`` sentences shared by neighbours; a sentence over the
    budget is cut between words into pieces that fit. One window when the whole text fits."""
    if lengths([text])[0] <= budget:
        return [text]
    pieces: list[str] = []
    for sentence in split_sentences(text) or [text]:
        if lengths([sentence])[0] <= budget:
            pieces.append(sentence)
            continue
        words = _WORD_RE.findall(sentence)
        current: list[str] = []
        for word, n in zip(words, lengths(words), strict=True):
            if current and lengths([" ".join([*current, word])])[0] > budget:
                pieces.append(" ".join(current))
                current = []
            current.append(word)
            if n > budget:  # one word over the budget alone: it stands alone
                pieces.append(" ".join(current))
                current = []
        if current:
            pieces.append(" ".join(current))
    return pack_windows(pieces, lengths(pieces), budget, overlap)


def _word_counts(texts: list[str]) -> list[int]:
    return [len(t.split()) for t in texts]


class _HFDetector(LoadsOnce):
    """What the adapters share: where the model is, how it loads, one lock."""

    what = "the detector model"

    def __init__(
        self,
        model: str | Path,
        *,
        batch_size: int = 8,
        device: str = "cpu",
        local_files_only: bool | None = None,
        trust_remote_code: bool | None = None,
    ) -> None:
        if batch_size < 1:
            raise InvalidInputError("batch_size", f"must be >= 1, got {batch_size!r}")
        if not str(model).strip():
            raise InvalidInputError("model", "name a Hugging Face model or a local folder")
        self.model = str(model)
        self.batch_size = batch_size
        self.device = device
        self.local_files_only = local_files_only
        self.trust_remote_code = trust_remote_code
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r})"

    def _trusted(self) -> bool:
        return trust_remote_code(self.trust_remote_code)

    def _is_loaded(self) -> bool:
        return self._model is not None

    def _load(self) -> None:
        trust = self._trusted()

        def build(transformers: Any, config: Any, where: str, local_only: bool) -> tuple[Any, ...]:
            return tuple(self._build(transformers, config, where, local_only, trust))

        where, config, (tokenizer, model) = load_hf_model(
            f"{self.what} {self.model!r}",
            self.model,
            local_files_only=self.local_files_only,
            trust=trust,
            device=self.device,
            build=build,
        )
        self._configure(config, tokenizer, model)
        self._tokenizer = tokenizer
        self._model = model  # published last: warm_up() reads it without the lock
        logger.info("%s loaded from %s", self.what, where)

    def _build(self, transformers: Any, config: Any, where: str, local_only: bool, trust: bool) -> Any:
        raise NotImplementedError

    def _configure(self, config: Any, tokenizer: Any, model: Any) -> None:
        """Read what scoring needs from the loaded parts (window size, label tokens)."""


# ---------------------------------------------------------------- token classification


@dataclass(frozen=True, slots=True)
class HallucinatedSpan:
    """A run of answer tokens the detector marks unsupported: ``answer[start:end]``."""

    start: int
    end: int
    text: str
    confidence: float  # the highest P(unsupported) among its tokens


@dataclass(frozen=True, slots=True)
class SpanDetection:
    """A detector's reading of one answer: its unsupported spans and its support score."""

    spans: tuple[HallucinatedSpan, ...]
    score: float  # 1 - the highest P(unsupported) of any answer token (1.0: nothing flagged)
    token_probabilities: tuple[tuple[int, int, float], ...]  # (start, end, P(unsupported)) per token


def merge_spans(
    answer: str, tokens: Sequence[tuple[int, int, float]], threshold: float = 0.5
) -> list[HallucinatedSpan]:
    """Runs of consecutive tokens with P(unsupported) >= ``threshold`` as character spans of
    ``answer`` (the text between two flagged tokens of a run is inside the span)."""
    spans: list[HallucinatedSpan] = []
    run: list[tuple[int, int, float]] = []
    for token in [*tokens, (0, 0, -1.0)]:  # a sentinel closes the last run
        if token[2] >= threshold and token[1] > token[0]:
            run.append(token)
            continue
        if run:
            start, end = run[0][0], run[-1][1]
            spans.append(HallucinatedSpan(start, end, answer[start:end], max(p for _, _, p in run)))
            run = []
    return spans


class TokenHallucinationDetector(_HFDetector):
    """A token-classification hallucination detector (LettuceDetect style) as an NLIScorer.

    The model reads ``(prompt, answer)``: the prompt holds the evidence as numbered passages
    (LettuceDetect's QA prompt when a question is given, its summary prompt otherwise), and
    each answer token gets P(unsupported) (class 1; ``unsupported_label`` to change it).
    ``threshold`` is the token probability at which a token joins an unsupported span.
    """

    what = "the token-classification detector"

    def __init__(
        self,
        model: str | Path,
        *,
        threshold: float = 0.5,
        max_length: int | None = None,
        unsupported_label: int = 1,
        **options: Any,
    ) -> None:
        super().__init__(model, **options)
        if not 0.0 <= threshold <= 1.0:
            raise InvalidInputError("threshold", f"must be within [0, 1], got {threshold!r}")
        if max_length is not None and max_length < 16:
            raise InvalidInputError("max_length", f"must be >= 16, got {max_length!r}")
        self.threshold = threshold
        self.max_length = max_length
        self.unsupported_label = unsupported_label
        self.max_length_ = 0

    def _build(self, transformers: Any, config: Any, where: str, local_only: bool, trust: bool) -> Any:
        tokenizer = transformers.AutoTokenizer.from_pretrained(where, local_files_only=local_only)
        model = transformers.AutoModelForTokenClassification.from_pretrained(
            where, local_files_only=local_only, trust_remote_code=trust
        )
        if int(model.config.num_labels) <= self.unsupported_label:
            raise ValueError(
                f"a head of {model.config.num_labels} labels has no class {self.unsupported_label}"
            )
        return tokenizer, model

    def _configure(self, config: Any, tokenizer: Any, model: Any) -> None:
        self.max_length_ = window_size(
            (self.max_length, tokenizer.model_max_length, getattr(config, "max_position_embeddings", None)),
            512,
        )

    @staticmethod
    def prompt(passages: Sequence[str], question: str | None = None) -> str:
        joined = "\n".join(f"passage {i}: {p}" for i, p in enumerate(passages, start=1))
        if question:
            return _QA_PROMPT.format(question=question, n=len(passages), passages=joined)
        return _SUMMARY_PROMPT.format(passages=joined)

    def _count(self, texts: list[str]) -> list[int]:
        return [len(ids) for ids in self._tokenizer(texts, add_special_tokens=False)["input_ids"]]

    def _token_probabilities(self, prompts: Sequence[str], answer: str) -> list[tuple[int, int, float]]:
        """(start, end, P(unsupported)) per answer token, the minimum over the prompts."""
        import torch

        best: list[tuple[int, int, float]] | None = None
        for b in range(0, len(prompts), self.batch_size):
            batch = list(prompts[b : b + self.batch_size])
            enc = self._tokenizer(
                batch,
                [answer] * len(batch),
                truncation="only_first",
                max_length=self.max_length_,
                padding=True,
                return_offsets_mapping=True,
                return_tensors="pt",
            )
            offsets = enc.pop("offset_mapping")
            with self._lock, torch.inference_mode():
                inputs = {
                    k: v.to(self.device)
                    for k, v in enc.items()
                    if k != "token_type_ids" or self._uses_types()
                }
                probs = torch.softmax(self._model(**inputs).logits.float(), dim=-1)[
                    ..., self.unsupported_label
                ]
            for row in range(len(batch)):
                ids = enc.sequence_ids(row)
                tokens = [
                    (int(offsets[row, t, 0]), int(offsets[row, t, 1]), float(probs[row, t]))
                    for t, side in enumerate(ids)
                    if side == 1
                ]
                best = (
                    tokens
                    if best is None
                    else [(s, e, min(p, q)) for (s, e, p), (_, _, q) in zip(best, tokens, strict=True)]
                )
        return best or []

    def _uses_types(self) -> bool:
        return "token_type_ids" in getattr(self._tokenizer, "model_input_names", [])

    def detect(
        self, evidence: str | Sequence[str], answer: str, question: str | None = None
    ) -> SpanDetection:
        """The unsupported spans of ``answer`` against ``evidence`` (one text or a list of passages)."""
        if not isinstance(answer, str) or not answer.strip():
            raise InvalidInputError("answer", "must be a non-empty string")
        passages = [evidence] if isinstance(evidence, str) else list(evidence)
        self.warm_up()
        room = self.max_length_ - self._count([answer])[0] - 4
        prompt = self.prompt(passages, question)
        overhead = self._count([self.prompt([""] * len(passages), question)])[0]
        if self._count([prompt])[0] <= room or room <= overhead + 8:
            prompts = [prompt]  # fits (or nothing would fit: the tokenizer truncates the prompt side)
        else:  # one window of the joined evidence per prompt
            windows = sentence_windows("\n".join(passages), room - overhead, self._count)
            prompts = [self.prompt([w], question) for w in windows]
        tokens = self._token_probabilities(prompts, answer)
        top = max((p for _, _, p in tokens), default=0.0)
        score = 0.0 if math.isnan(top) else 1.0 - top
        return SpanDetection(tuple(merge_spans(answer, tokens, self.threshold)), score, tuple(tokens))

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """P(supported) per (evidence, answer): 1 - the answer's highest token P(unsupported)."""
        return [self.detect(premise, hypothesis).score for premise, hypothesis in pairs]


# ---------------------------------------------------------------- sequence pairs with their own code


class RemoteCodePairScorer(_HFDetector):
    """A sequence-pair model that ships its own code and ``predict(pairs)`` (HHEM style).

    ``vectara/hallucination_evaluation_model``'s ``predict([(premise, hypothesis), ...])`` returns
    P(consistent) per pair; this adapter windows long evidence (``max_premise_words`` words of
    whole sentences) and keeps the best window. The code runs only when trusted:
    ``VERIFIER_TRUST_REMOTE_CODE=1`` or ``trust_remote_code=True``.
    """

    what = "the custom-code pair model"

    def __init__(self, model: str | Path, *, max_premise_words: int = 350, **options: Any) -> None:
        super().__init__(model, **options)
        if max_premise_words < 8:
            raise InvalidInputError("max_premise_words", f"must be >= 8, got {max_premise_words!r}")
        self.max_premise_words = max_premise_words

    def _load(self) -> None:
        if not self._trusted():
            raise ModelLoadError(
                f"{self.what} {self.model!r}",
                [
                    (
                        "trust_remote_code",
                        f"this kind of model runs its own code: set {TRUST_ENV}=1 to allow it",
                    )
                ],
            )
        super()._load()

    def _build(self, transformers: Any, config: Any, where: str, local_only: bool, trust: bool) -> Any:
        model = transformers.AutoModelForSequenceClassification.from_pretrained(
            where, local_files_only=local_only, trust_remote_code=trust
        )
        if not callable(getattr(model, "predict", None)):
            raise TypeError(
                f"{type(model).__name__} has no predict(pairs) method: a plain classifier "
                "belongs in HFSequenceClassificationScorer"
            )
        return None, model

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """P(supported) per pair: the best window of the premise, by the model's own ``predict``."""
        if not pairs:
            return []
        self.warm_up()
        rows: list[tuple[str, str]] = []
        owner: list[int] = []
        for i, (premise, hypothesis) in enumerate(pairs):
            for window in sentence_windows(premise, self.max_premise_words, _word_counts):
                rows.append((window, hypothesis))
                owner.append(i)
        scores = [0.0] * len(pairs)
        import torch

        for b in range(0, len(rows), self.batch_size):
            with self._lock, torch.inference_mode():
                predicted = self._model.predict(rows[b : b + self.batch_size])
            values = [float(v) for v in (predicted.tolist() if hasattr(predicted, "tolist") else predicted)]
            for i, value in zip(owner[b : b + self.batch_size], values, strict=True):
                if not math.isnan(value):
                    scores[i] = max(scores[i], value)
        return scores


# ---------------------------------------------------------------- seq2seq support checkers


class Seq2SeqSupportScorer(_HFDetector):
    """An encoder-decoder support checker (MiniCheck style): P(first decoded token is ``"1"``).

    The input is ``premise: <evidence window> hypothesis: <claim>`` (``template``); the score is
    the softmax over the logits of the two label tokens (the first token of ``"0"`` and of
    ``"1"``, as MiniCheck reads them) at the first decoding step, the best over windows of
    ``max_premise_words`` words.
    """

    what = "the seq2seq support checker"

    def __init__(
        self,
        model: str | Path,
        *,
        max_premise_words: int = 400,
        template: str = "premise: {premise} hypothesis: {hypothesis}",
        max_length: int | None = None,
        **options: Any,
    ) -> None:
        super().__init__(model, **options)
        if max_premise_words < 8:
            raise InvalidInputError("max_premise_words", f"must be >= 8, got {max_premise_words!r}")
        if "{premise}" not in template or "{hypothesis}" not in template:
            raise InvalidInputError("template", "must hold {premise} and {hypothesis}")
        self.max_premise_words = max_premise_words
        self.template = template
        self.max_length = max_length
        self.label_ids_: tuple[int, int] = (0, 0)
        self.max_length_ = 0

    def _build(self, transformers: Any, config: Any, where: str, local_only: bool, trust: bool) -> Any:
        tokenizer = transformers.AutoTokenizer.from_pretrained(where, local_files_only=local_only)
        model = transformers.AutoModelForSeq2SeqLM.from_pretrained(
            where, local_files_only=local_only, trust_remote_code=trust
        )
        return tokenizer, model

    def _configure(self, config: Any, tokenizer: Any, model: Any) -> None:
        ids = [tokenizer(label, add_special_tokens=False)["input_ids"] for label in ("0", "1")]
        if not all(ids) or ids[0][0] == ids[1][0]:
            raise ModelLoadError(
                f"{self.what} {self.model!r}", [("label tokens", f"'0' and '1' do not encode apart: {ids}")]
            )
        self.label_ids_ = (int(ids[0][0]), int(ids[1][0]))
        self.max_length_ = window_size((self.max_length, tokenizer.model_max_length), 2048)

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """P(supported) per pair: the best window's probability of the label ``"1"``."""
        import torch

        if not pairs:
            return []
        self.warm_up()
        texts: list[str] = []
        owner: list[int] = []
        for i, (premise, hypothesis) in enumerate(pairs):
            for window in sentence_windows(premise, self.max_premise_words, _word_counts):
                texts.append(self.template.format(premise=window, hypothesis=hypothesis))
                owner.append(i)
        start = self._model.config.decoder_start_token_id
        start = self._model.config.pad_token_id if start is None else start
        scores = [0.0] * len(pairs)
        for b in range(0, len(texts), self.batch_size):
            batch = texts[b : b + self.batch_size]
            enc = self._tokenizer(
                batch, truncation=True, max_length=self.max_length_, padding=True, return_tensors="pt"
            ).to(self.device)
            decoder = torch.full((len(batch), 1), int(start), dtype=torch.long, device=self.device)
            with self._lock, torch.inference_mode():
                logits = self._model(**enc, decoder_input_ids=decoder).logits[:, 0, :].float()
            probs = torch.softmax(logits[:, list(self.label_ids_)], dim=-1)[:, 1]
            for i, p in zip(owner[b : b + len(batch)], probs.cpu().tolist(), strict=True):
                if not math.isnan(p):
                    scores[i] = max(scores[i], float(p))
        return scores
