"""``SpanReader``: an extractive reader served with onnxruntime. Where in the evidence is the answer?

The extractive-QA answerability model (:mod:`verityrag.train.span_answerability`, a start/end head
trained here on SQuAD 2.0, then with HaluEval QA added) is exported a second way, with its per-token start and end
logits (``python -m verityrag.train reader-check``), and served by this class. :meth:`SpanReader.top_spans`
returns the best answer spans of at most ``MAX_ANSWER_TOKENS`` tokens as character spans
of the evidence, so a caller can compare them with an answer written by someone else
(:mod:`verityrag.checks.reader_check`). Evidence longer than the model window is read in
overlapping windows and the spans of all windows compete on their score.

Like :class:`~verityrag.models.scorer.OnnxCrossEncoder`, the session loads lazily, once,
thread-safely, after the folder is checked (a missing file names the command that builds it).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from verityrag.errors import InvalidInputError
from verityrag.models.encoding import EncodedWindow, PairEncoder, load_tokenizer, pad_batch, window_starts
from verityrag.models.folder import ModelMetadata, ServedFolder
from verityrag.models.scorer import open_session, session_feeds

if TYPE_CHECKING:
    import onnxruntime

logger = logging.getLogger(__name__)

#: Longest answer span scored, in tokens (SQuAD answers: 95% are under 12 words).
MAX_ANSWER_TOKENS = 30
# Loaded sessions by (ONNX file, its mtime, threads): a session is thread-safe to run.
_SHARED: dict[tuple[str, int, int], tuple[PairEncoder, onnxruntime.InferenceSession]] = {}
_SHARED_LOCK = threading.Lock()

#: Longest question read, in tokens (longer ones are cut, in training as in serving).
MAX_QUESTION_TOKENS = 64
#: Spans returned by default; their probabilities are a softmax over these.
TOP_K = 20
#: ONNX output names of a reader export.
READER_OUTPUTS = ("start_logits", "end_logits")


@dataclass(frozen=True, slots=True)
class ReaderSpan:
    """One candidate answer: ``evidence[start:end]``, its start + end logit, and its share of the top spans."""

    text: str
    start: int
    end: int
    score: float
    probability: float


def best_spans(
    start_logits: npt.NDArray[np.float32],
    end_logits: npt.NDArray[np.float32],
    first: int,
    last: int,
    k: int,
    max_answer_tokens: int = MAX_ANSWER_TOKENS,
) -> list[tuple[int, int, float]]:
    """The ``k`` best (start, end, score) token spans with ``first <= start <= end <= last``."""
    if last < first or k <= 0:
        return []
    starts = start_logits[first : last + 1].astype(np.float64)
    ends = end_logits[first : last + 1].astype(np.float64)
    n = len(starts)
    width = np.arange(n)[None, :] - np.arange(n)[:, None]  # end - start
    scores = np.where((width >= 0) & (width < max_answer_tokens), starts[:, None] + ends[None, :], -np.inf)
    flat = scores.ravel()
    k = min(k, int(np.isfinite(flat).sum()))
    top = np.argpartition(-flat, k - 1)[:k]
    top = top[np.argsort(-flat[top], kind="stable")]
    return [(first + int(i) // n, first + int(i) % n, float(flat[i])) for i in top]


@dataclass(frozen=True, slots=True)
class ReaderResult:
    """What the reader found in one evidence text.

    ``spans``: the best candidate answers, best first. ``null_score``: the start + end logit of
    ``[CLS]``, "no answer" (``inf`` when nothing was read). ``answer_logit``: the best span's score
    minus the null score, the SQuAD 2.0 decision value (> 0: the model prefers an answer);
    ``answer_probability`` is its sigmoid.
    """

    spans: list[ReaderSpan]
    null_score: float

    @property
    def best(self) -> ReaderSpan | None:
        return self.spans[0] if self.spans else None

    @property
    def answer_logit(self) -> float:
        if not self.spans or not math.isfinite(self.null_score):
            return -math.inf if not self.spans else math.inf
        return self.spans[0].score - self.null_score

    @property
    def answer_probability(self) -> float:
        x = self.answer_logit
        if math.isinf(x):
            return 1.0 if x > 0 else 0.0
        return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def ranked_result(evidence: str, found: dict[tuple[int, int], float], null: float, k: int) -> ReaderResult:
    """The ``k`` best of ``found`` (character span -> score) as a result: spans best first, each with
    its share of a softmax over them, and the no-answer score."""
    best = sorted(found.items(), key=lambda item: -item[1])[:k]
    if not best:
        return ReaderResult([], null)
    scores = np.array([score for _, score in best])
    weights = np.exp(scores - scores.max())
    weights /= weights.sum()
    spans = [
        ReaderSpan(evidence[s:e], s, e, float(score), float(w))
        for ((s, e), score), w in zip(best, weights, strict=True)
    ]
    return ReaderResult(spans, null)


class SpanReader(ServedFolder):
    """A reader folder (metadata.json, the start/end ONNX export, tokenizer.json). Constructor stores parameters only."""

    def __init__(
        self,
        folder: Path,
        what: str = "the extractive reader",
        build_command: str = "make train-reader",
        threads: int = 2,
        batch_size: int = 16,
    ) -> None:
        super().__init__(folder, what, build_command, threads, batch_size)

    def _load(self) -> None:
        """Check the files and load the tokenizer and the ONNX session. Readers of the same folder
        in one process share one session: a pipeline per test or per tenant costs no second load."""
        meta = self.metadata
        onnx = self.folder / meta.onnx_file
        key = (str(onnx.resolve()), onnx.stat().st_mtime_ns, self.threads)
        with _SHARED_LOCK:
            shared = _SHARED.get(key)
            if shared is None:
                shared = _SHARED[key] = self._open(meta)
        self._encoder, self._session = shared

    def _open(self, meta: ModelMetadata) -> tuple[PairEncoder, onnxruntime.InferenceSession]:
        tokenizer = load_tokenizer(self.folder / meta.tokenizer_files[0])
        encoder = PairEncoder(tokenizer, meta.max_length, "second", meta.stride)
        session = open_session(self.folder / meta.onnx_file, self.threads)
        outputs = [o.name for o in session.get_outputs()]
        if outputs != list(READER_OUTPUTS):
            raise InvalidInputError(
                "folder",
                f"{self.folder / meta.onnx_file} outputs {outputs}, not {list(READER_OUTPUTS)}: "
                f"not a reader export; build one with `{self.build_command}`",
            )
        return encoder, session

    def count_tokens(self, text: str) -> int:
        """How many model tokens ``text`` is (what a window budget counts)."""
        self.warm_up()
        assert self._encoder is not None
        return len(self._encoder.tokenizer.encode(text, add_special_tokens=False).ids)

    def top_spans(self, question: str, evidence: str, k: int = TOP_K) -> list[ReaderSpan]:
        """The ``k`` best answer spans in ``evidence`` for ``question``, best first; [] for empty evidence."""
        return self.read_batch([(question, evidence)], k)[0].spans

    def read(self, question: str, evidence: str, k: int = TOP_K) -> ReaderResult:
        """The best spans of ``evidence`` and its no-answer score (see :class:`ReaderResult`)."""
        return self.read_batch([(question, evidence)], k)[0]

    def read_batch(self, pairs: Sequence[tuple[str, str]], k: int = TOP_K) -> list[ReaderResult]:
        """:meth:`read` for many (question, evidence) pairs, their windows scored in shared batches.

        The question is cut to ``MAX_QUESTION_TOKENS`` tokens, as in training. Evidence longer
        than the window is read in overlapping windows: spans of every window compete on their
        score, and the no-answer score is the lowest of the windows' (the window most sure that
        it holds an answer decides, as in SQuAD 2.0 readers).
        """
        self.warm_up()
        assert self._encoder is not None
        assert self._session is not None
        encoder = self._encoder
        windows: list[tuple[int, int, int, EncodedWindow]] = []  # (pair, first token, offset, window)
        encodings = []
        for p, (question, evidence) in enumerate(pairs):
            q_ids = encoder.tokenizer.encode(question, add_special_tokens=False).ids[:MAX_QUESTION_TOKENS]
            encoded = encoder.tokenizer.encode(evidence, add_special_tokens=False)
            encodings.append(encoded)
            if not encoded.ids:
                continue
            budget = encoder.window_budget(len(q_ids), "question")
            offset = encoder.second_offset(len(q_ids))  # [CLS] question [SEP]: where the evidence starts
            for s in window_starts(len(encoded.ids), budget, encoder.stride):
                windows.append((p, s, offset, encoder.window(p, q_ids, encoded.ids[s : s + budget])))
        found: list[dict[tuple[int, int], float]] = [{} for _ in pairs]
        nulls = [math.inf for _ in pairs]
        for b in range(0, len(windows), self.batch_size):
            batch = windows[b : b + self.batch_size]
            feeds = session_feeds(self._session, *pad_batch([w for *_, w in batch], encoder.pad_id))
            start_logits, end_logits = self._session.run(list(READER_OUTPUTS), feeds)
            for row, (p, first_token, offset, window) in enumerate(batch):
                null = float(start_logits[row][0] + end_logits[row][0])
                if math.isfinite(null):
                    nulls[p] = min(nulls[p], null)
                last = len(window.input_ids) - 2  # the closing [SEP] is not evidence
                offsets = encodings[p].offsets
                for i, j, score in best_spans(start_logits[row], end_logits[row], offset, last, k):
                    key = (offsets[first_token + i - offset][0], offsets[first_token + j - offset][1])
                    found[p][key] = max(score, found[p].get(key, -np.inf))  # overlapping windows
        results = []
        for p, (_, evidence) in enumerate(pairs):
            result = ranked_result(evidence, found[p], nulls[p], k)
            if not result.spans and encodings[p].ids:  # every logit NaN (best_spans keeps finite ones)
                logger.warning("%s gave no finite span score in %s; no spans", self.what, self.folder)
            results.append(result)
        return results
