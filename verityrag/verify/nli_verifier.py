"""NLI verification with any Hugging Face sequence-classification model (a cross-encoder).

``HFSequenceClassificationScorer`` implements :class:`~verityrag.verify.protocols.NLIScorer`
for a hub name or a local folder; ``NLIVerifier`` turns any scorer into a
:class:`~verityrag.verify.protocols.Verifier`; ``CrossEncoderNLIVerifier`` is the two
together, configured by ``VERIFIER_MODEL``.

- The "supported" class is read from ``config.id2label``: a label named entailment /
  entailed / entails / consistent / supported / supports / support / 1; failing that, the
  last class of a binary head whose labels name nothing (``LABEL_0/LABEL_1``: class 1).
  A one-logit head is read through a sigmoid. Any other head (also a binary one with
  other names, e.g. ``REFUTES/NOT ENOUGH INFO``) raises
  :class:`~verityrag.errors.ModelLoadError` naming its labels.
- Evidence longer than the model's window is scored in windows of whole sentences
  (overlapping by ``window_overlap_sentences``); a pair scores the max over its windows.
  A sentence longer than a window is cut between words into pieces that fit.
- A hypothesis too long to leave a useful window of evidence is split into its sentences
  (a sentence still too long, into pieces cut between words); each part is scored as
  above and the least supported part decides (min): every part must be supported.
- An answer scores the minimum over its sentences: it is as supported as its weakest one.
- A NaN score counts as 0 in :class:`NLIVerifier`. One scorer can serve many threads.
- Nothing downloads when ``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` is set (or
  ``local_files_only=True``): a hub name that is not cached fails with every attempt listed.
- Models with custom code load only with ``VERIFIER_TRUST_REMOTE_CODE=1``.
"""

from __future__ import annotations

import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from verityrag.errors import InvalidInputError, ModelLoadError
from verityrag.models.load_once import LoadsOnce
from verityrag.text.sentences import sentence_spans, split_sentences
from verityrag.verify.protocols import NLIScorer, VerificationResult, check_verify_arguments

__all__ = [
    "SUPPORT_LABEL_NAMES",
    "CrossEncoderNLIVerifier",
    "HFSequenceClassificationScorer",
    "NLIVerifier",
    "supported_class",
]

logger = logging.getLogger(__name__)

MODEL_ENV = "VERIFIER_MODEL"
TRUST_ENV = "VERIFIER_TRUST_REMOTE_CODE"
_OFFLINE_ENVS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
SUPPORT_LABEL_NAMES = frozenset(
    {"entailment", "entailed", "entails", "consistent", "supported", "supports", "support", "1"}
)
# Labels that name no class (the HF defaults): a binary head of these is read as class 1.
_GENERIC_LABEL_RE = re.compile(r"label_\d+|\d+")
# Room kept for special tokens around a pair ([CLS] x [SEP] y [SEP]) and a margin.
_SPECIAL_TOKENS = 4
# Fewest evidence tokens a window should show next to the hypothesis (as the cross-encoders' 32).
_MIN_PREMISE_TOKENS = 32
_WORD_RE = re.compile(r"\S+")


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def trust_remote_code(explicit: bool | None) -> bool:
    """Whether a model's own code may run: ``explicit`` when given, else ``$VERIFIER_TRUST_REMOTE_CODE``."""
    return _truthy(os.environ.get(TRUST_ENV)) if explicit is None else explicit


def window_size(limits: Sequence[object], default: int) -> int:
    """The smallest of the plausible ``limits`` (ints in 1..99,999: a setting, the tokenizer's
    and the config's), or ``default`` when none is."""
    found = [v for v in limits if isinstance(v, int) and 0 < v < 100_000]
    return min(found) if found else default


def load_hf_model(
    what: str,
    source: str,
    *,
    local_files_only: bool | None,
    trust: bool,
    device: str,
    build: Callable[[Any, Any, str, bool], tuple[Any, ...]],
) -> tuple[str, Any, tuple[Any, ...]]:
    """A model from ``source``: a local folder, else a hub name (from the cache alone when
    ``local_files_only``, or when that is None and ``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``
    is set). ``build(transformers, config, where, local_only)`` loads the parts (the model last)
    once the config is read; a model with custom code is refused unless ``trust``. Returns where
    it loaded from, the config and the parts, the model in eval mode on ``device``; raises
    :class:`ModelLoadError` for ``what`` listing every failed attempt."""
    try:
        import transformers
    except ImportError as exc:
        raise ModelLoadError(
            what, [("import transformers", f"{exc}. Install it with: pip install transformers")]
        ) from exc
    offline = (
        any(_truthy(os.environ.get(name)) for name in _OFFLINE_ENVS)
        if local_files_only is None
        else local_files_only
    )
    attempts: list[tuple[str, str]] = []
    folder = Path(source).expanduser()
    if folder.is_dir():
        candidates = [(f"local folder {folder}", str(folder), True)]
    else:
        attempts.append((f"local folder {folder}", "no such folder"))
        mode = "hub cache only (offline)" if offline else "hub (download allowed)"
        candidates = [(f"hub name {source!r}, {mode}", source, offline)]
    for label, where, local_only in candidates:
        try:
            config = transformers.AutoConfig.from_pretrained(
                where, local_files_only=local_only, trust_remote_code=trust
            )
            if getattr(config, "auto_map", None) and not trust:
                raise PermissionError(
                    f"the model ships custom code (auto_map {sorted(config.auto_map)}); "
                    f"set {TRUST_ENV}=1 to allow running it"
                )
            parts = build(transformers, config, where, local_only)
        except Exception as exc:  # every failure is reported with what was tried
            reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            if "trust_remote_code" in str(exc) and not trust:
                reason += f" (set {TRUST_ENV}=1 to allow custom code)"
            attempts.append((label, reason))
            continue
        try:
            parts[-1].eval()
            parts[-1].to(device)
        except Exception as exc:  # "cuda" on a CPU-only torch raised a bare AssertionError
            first = str(exc).splitlines()[0] if str(exc) else ""
            attempts.append((f"device {device!r}", f"{type(exc).__name__}: {first}; pass a device torch has"))
            break
        return where, config, parts
    raise ModelLoadError(what, attempts)


def pack_windows(pieces: Sequence[str], sizes: Sequence[int], budget: int, overlap: int) -> list[str]:
    """``pieces`` (whole sentences, or parts of one) joined into windows of at most ``budget``
    (``sizes`` counts each piece; a piece over the budget stands alone), ``overlap`` pieces
    shared by neighbouring windows."""
    windows: list[str] = []
    start = 0
    while start < len(pieces):
        end, used = start, 0
        while end < len(pieces) and (end == start or used + sizes[end] <= budget):
            used += sizes[end]
            end += 1
        windows.append(" ".join(pieces[start:end]))
        if end >= len(pieces):
            break
        start = max(start + 1, end - overlap)
    return windows


def supported_class(id2label: Mapping[int, str] | Mapping[str, str], num_labels: int) -> int | None:
    """Index of the class meaning "the premise supports the hypothesis".

    ``None`` means a one-logit head (read through a sigmoid). Raises ``ValueError`` when no
    label names such a class, unless the head is binary with the generic labels
    ``LABEL_0``/``LABEL_1`` (then class 1).
    """
    if num_labels == 1:
        return None
    labels = {int(k): str(v) for k, v in id2label.items()}
    for index in sorted(labels):
        if labels[index].strip().lower() in SUPPORT_LABEL_NAMES:
            return index
    names = [labels.get(i, f"?{i}") for i in range(num_labels)]
    if num_labels == 2 and all(_GENERIC_LABEL_RE.fullmatch(n.strip().lower()) for n in names):
        return 1  # the last class of a binary head with unnamed classes (LABEL_0 / LABEL_1)
    # Named classes, none of them "supported" (e.g. REFUTES / NOT ENOUGH INFO): guessing
    # class 1 could silently invert every score, so the head is refused.
    raise ValueError(
        f"cannot tell which of the {num_labels} classes {names} means 'supported': "
        f"expected one named {sorted(SUPPORT_LABEL_NAMES)} or a binary head labelled LABEL_0/LABEL_1"
    )


class HFSequenceClassificationScorer(LoadsOnce):
    """P(supported) of (premise, hypothesis) pairs from a HF sequence-classification model.

    ``model`` is a hub name or a local folder (default: ``$VERIFIER_MODEL``). The
    constructor only stores parameters; the model loads on first use or ``warm_up()``.
    """

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        max_length: int | None = None,
        batch_size: int = 16,
        window_overlap_sentences: int = 1,
        local_files_only: bool | None = None,
        trust_remote_code: bool | None = None,
        device: str = "cpu",
    ) -> None:
        if batch_size < 1:
            raise InvalidInputError("batch_size", f"must be >= 1, got {batch_size!r}")
        if window_overlap_sentences < 0:
            raise InvalidInputError(
                "window_overlap_sentences", f"must be >= 0, got {window_overlap_sentences!r}"
            )
        if max_length is not None and max_length < 8:
            raise InvalidInputError("max_length", f"must be >= 8, got {max_length!r}")
        self.model = str(model) if model is not None else None
        self.max_length = max_length
        self.batch_size = batch_size
        self.window_overlap_sentences = window_overlap_sentences
        self.local_files_only = local_files_only
        self.trust_remote_code = trust_remote_code
        self.device = device
        self._lock = threading.Lock()
        # A fast tokenizer keeps its truncation / padding settings on one shared object that
        # every call with other settings rewrites: threads scoring at once got each other's
        # settings ("Unable to create tensor ..."). Every tokenizer call holds this lock.
        self._tokenizer_lock = threading.Lock()
        self._tokenizer: Any = None
        self._model: Any = None
        self.support_index_: int | None = None
        self.max_length_: int = 0
        self.model_version: str = ""

    def __repr__(self) -> str:
        return f"HFSequenceClassificationScorer(model={self.model or os.environ.get(MODEL_ENV)!r})"

    # ------------------------------------------------------------------ loading

    def _source(self) -> str:
        source = self.model or os.environ.get(MODEL_ENV, "").strip()
        if not source:
            raise ModelLoadError(
                "the NLI verifier model",
                [("model argument / $" + MODEL_ENV, "neither is set: name a HF model or a local folder")],
            )
        return source

    def _is_loaded(self) -> bool:
        return self._model is not None

    def _load(self) -> None:
        source = self._source()
        trust = trust_remote_code(self.trust_remote_code)

        def build(transformers: Any, config: Any, where: str, local_only: bool) -> tuple[Any, ...]:
            support = supported_class(config.id2label, int(config.num_labels))
            tokenizer = transformers.AutoTokenizer.from_pretrained(
                where, local_files_only=local_only, trust_remote_code=trust
            )
            model = transformers.AutoModelForSequenceClassification.from_pretrained(
                where, local_files_only=local_only, trust_remote_code=trust
            )
            return support, tokenizer, model

        where, config, (support, tokenizer, model) = load_hf_model(
            f"the NLI verifier model {source!r}",
            source,
            local_files_only=self.local_files_only,
            trust=trust,
            device=self.device,
            build=build,
        )
        self.max_length_ = window_size(
            (
                self.max_length,
                getattr(tokenizer, "model_max_length", None),
                getattr(config, "max_position_embeddings", None),
            ),
            512,
        )
        self.model_version = f"{where}@{getattr(config, '_commit_hash', None) or 'local'}"
        # ``_model`` is published last: warm_up() reads it without the lock, so another
        # thread that sees it set must also see the window size (0 before: windows of 8
        # tokens and a tokenizer call with max_length=0).
        self._tokenizer, self.support_index_ = tokenizer, support
        self._model = model
        logger.info(
            "NLI verifier loaded %s (supported class %s, window %d tokens)",
            where,
            support,
            self.max_length_,
        )

    # ------------------------------------------------------------------ scoring

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """P(premise supports hypothesis) per pair: max over the premise's windows, min over
        the parts of a hypothesis too long for one window."""
        if not pairs:
            return []
        self.warm_up()
        rows: list[tuple[str, str]] = []
        owner: list[tuple[int, int]] = []  # (pair, part of its hypothesis) of each row
        parts_of: list[int] = []
        for i, (premise, hypothesis) in enumerate(pairs):
            parts = self._hypothesis_parts(hypothesis)
            parts_of.append(len(parts))
            for j, part in enumerate(parts):
                for window in self._windows(premise, part):
                    rows.append((window, part))
                    owner.append((i, j))
        probs = self._predict(rows)
        best = [[0.0] * n for n in parts_of]
        for (i, j), p in zip(owner, probs, strict=True):
            best[i][j] = max(best[i][j], p)  # a NaN never replaces: that window supports nothing
        return [min(part_scores) for part_scores in best]

    def _token_count(self, text: str) -> int:
        return len(self._encode(text, add_special_tokens=False)["input_ids"])

    def _encode(self, *args: Any, **kwargs: Any) -> Any:
        """The tokenizer's call, one thread at a time (see ``_tokenizer_lock``)."""
        with self._tokenizer_lock:
            return self._tokenizer(*args, **kwargs)

    def _hypothesis_parts(self, hypothesis: str) -> list[str]:
        """``hypothesis`` in parts that each leave a window of evidence: itself when it fits,
        else its sentences, a sentence still too long cut between words. Nothing is dropped
        (the tokenizer cannot truncate the evidence enough for an over-long hypothesis)."""
        limit = max(1, self.max_length_ - _SPECIAL_TOKENS - min(_MIN_PREMISE_TOKENS, self.max_length_ // 4))
        if self._token_count(hypothesis) <= limit:
            return [hypothesis]
        parts: list[str] = []
        for sentence in split_sentences(hypothesis) or [hypothesis]:
            fits = self._token_count(sentence) <= limit
            parts += [sentence] if fits else self._pieces(sentence, limit)
        return parts

    def _pieces(self, text: str, budget: int) -> list[str]:
        """``text`` cut between words into pieces of about ``budget`` tokens at most (each
        word counted alone); a word over the budget by itself is cut between characters."""
        words = _WORD_RE.findall(text)
        if not words:
            return [text]
        counts = [len(ids) for ids in self._encode(words, add_special_tokens=False)["input_ids"]]
        pieces: list[str] = []
        current: list[str] = []
        used = 0
        for word, n in zip(words, counts, strict=True):
            if current and used + n > budget:
                pieces.append(" ".join(current))
                current, used = [], 0
            if n > budget:
                step = max(1, len(word) * budget // n)
                pieces += [word[k : k + step] for k in range(0, len(word), step)]
                continue
            current.append(word)
            used += n
        if current:
            pieces.append(" ".join(current))
        return pieces

    def _windows(self, premise: str, hypothesis: str) -> list[str]:
        """Whole-sentence windows of ``premise`` that fit the model next to ``hypothesis`` (a
        sentence longer than a window is cut into pieces between words)."""
        budget = max(8, self.max_length_ - self._token_count(hypothesis) - _SPECIAL_TOKENS)
        if self._token_count(premise) <= budget:
            return [premise]
        sentences: list[str] = []
        lengths: list[int] = []
        whole = split_sentences(premise)
        counts = [len(ids) for ids in self._encode(whole, add_special_tokens=False)["input_ids"]]
        for sentence, n in zip(whole, counts, strict=True):
            if n <= budget:
                sentences.append(sentence)
                lengths.append(n)
                continue
            # A sentence longer than a window (a list or table without end punctuation):
            # truncating it would hide its tail from the model, so it is cut into pieces.
            for piece in self._pieces(sentence, budget):
                sentences.append(piece)
                lengths.append(self._token_count(piece))
        return pack_windows(sentences, lengths, budget, self.window_overlap_sentences)

    def _predict(self, rows: Sequence[tuple[str, str]]) -> list[float]:
        import torch

        out: list[float] = []
        with torch.inference_mode():
            for b in range(0, len(rows), self.batch_size):
                batch = rows[b : b + self.batch_size]
                enc = self._encode(
                    [p for p, _ in batch],
                    [h for _, h in batch],
                    truncation="only_first",
                    max_length=self.max_length_,
                    padding=True,
                    return_tensors="pt",
                ).to(self.device)
                logits = self._model(**enc).logits.float()
                if self.support_index_ is None:
                    probs = torch.sigmoid(logits[:, 0])
                else:
                    probs = torch.softmax(logits, dim=-1)[:, self.support_index_]
                out.extend(float(p) for p in probs.cpu())
        return out


def _nan_as_unsupported(score: float) -> float:
    """A NaN score (a broken model output) as 0: ``min([0.9, nan])`` is 0.9, so a NaN would
    otherwise pass or fail by its position, and a NaN ``score`` is not valid JSON in a response."""
    return 0.0 if math.isnan(score) else float(score)


class NLIVerifier:
    """A :class:`Verifier` from any :class:`NLIScorer`: each sentence against all the documents.

    A sentence is supported when its score is at least ``threshold``. ``score`` /
    ``threshold`` also make it an ``AnswerGuard`` for ``AgentController(answer_guard=...)``:
    the answer's score is the minimum over its sentences.
    """

    stage = "nli"

    def __init__(self, scorer: NLIScorer, threshold: float = 0.5) -> None:
        if not 0.0 <= threshold <= 1.0 or math.isnan(threshold):
            raise InvalidInputError("threshold", f"must be within [0, 1], got {threshold!r}")
        self.scorer = scorer
        self.threshold = threshold

    def __repr__(self) -> str:
        return f"{type(self).__name__}(scorer={self.scorer!r}, threshold={self.threshold})"

    def verify(self, sentences: Sequence[str], documents: Sequence[str]) -> list[VerificationResult]:
        check_verify_arguments(sentences, documents)
        if not sentences:
            return []
        evidence = "\n\n".join(d for d in documents if d.strip())
        if not evidence:
            return [
                VerificationResult(s, 0.0, False, self.stage, reason="no evidence to check against")
                for s in sentences
            ]
        t0 = time.perf_counter()
        raw, extra = self._scores([(evidence, s) for s in sentences])
        scores = [_nan_as_unsupported(v) for v in raw]
        per_ms = (time.perf_counter() - t0) * 1000 / len(sentences)
        return [
            VerificationResult(
                sentence,
                float(score),
                score >= self.threshold,
                self.stage,
                reason=f"{self.stage} score {score:.3f} {'>=' if score >= self.threshold else '<'} {self.threshold}",
                details={"threshold": self.threshold, "ms": round(per_ms, 3), **more},
            )
            for sentence, score, more in zip(sentences, scores, extra, strict=True)
        ]

    def _scores(self, pairs: Sequence[tuple[str, str]]) -> tuple[list[float], list[dict[str, Any]]]:
        """Scores of ``pairs`` and per-pair trace details (subclasses add their figures)."""
        return list(self.scorer.score_pairs(pairs)), [{} for _ in pairs]

    def score(self, evidence: str, answer: str) -> float:
        """The answer's support: minimum over its sentences (0.0 for an empty answer)."""
        sentences = [answer[s:e] for s, e in sentence_spans(answer)]
        if not sentences:
            return 0.0
        return min(
            _nan_as_unsupported(v) for v in self.scorer.score_pairs([(evidence, s) for s in sentences])
        )


class CrossEncoderNLIVerifier(NLIVerifier):
    """``NLIVerifier`` over an :class:`HFSequenceClassificationScorer` (``$VERIFIER_MODEL`` by default)."""

    def __init__(
        self, model: str | Path | None = None, threshold: float = 0.5, **scorer_options: Any
    ) -> None:
        super().__init__(HFSequenceClassificationScorer(model, **scorer_options), threshold)

    def warm_up(self) -> None:
        scorer = self.scorer
        assert isinstance(scorer, HFSequenceClassificationScorer)
        scorer.warm_up()
