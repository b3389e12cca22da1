"""``OnnxCrossEncoder``: serves a trained cross-encoder folder with onnxruntime.

It implements :class:`verityrag.verify.protocols.NLIScorer`: ``score_pairs(pairs)``
returns one probability (sigmoid of the logit) per pair. Pairs longer than the model
window are scored window by window and the maximum is kept (support and
answerability need one window that supports; nothing is cut silently). When the
short side (the hypothesis or answer) is itself too long for a window, it is split
into sentences, each is scored as above, and the least supported sentence decides
(min): every sentence must be supported.

The session loads lazily (first call or :meth:`warm_up`), once, thread-safely; the
folder is checked first, and a missing file raises
:class:`~verityrag.crossenc.model_folder.ModelFilesMissingError` naming it and the
command that builds it.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from verityrag._onnx import cpu_session_options
from verityrag.crossenc.encoding import PairEncoder, load_tokenizer, pad_batch
from verityrag.crossenc.model_folder import ModelMetadata, require_files
from verityrag.text.sentences import split_sentences

if TYPE_CHECKING:
    import onnxruntime


def open_session(path: Path, threads: int) -> onnxruntime.InferenceSession:
    """A CPU onnxruntime session on ``threads`` intra-op threads (requests are parallel above it)."""
    import onnxruntime

    return onnxruntime.InferenceSession(
        str(path), cpu_session_options(threads, spin=False), providers=["CPUExecutionProvider"]
    )


def session_feeds(
    session: onnxruntime.InferenceSession, ids: list[list[int]], mask: list[list[int]], types: list[list[int]]
) -> dict[str, np.ndarray]:
    """The padded batch as int64 arrays, for the inputs the graph declares: a model without token
    types (MPNet) is exported without that input."""
    arrays = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    return {i.name: np.asarray(arrays[i.name], dtype=np.int64) for i in session.get_inputs()}


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


class OnnxCrossEncoder:
    """A cross-encoder folder served by onnxruntime. Constructor stores parameters only."""

    def __init__(
        self,
        folder: Path,
        what: str = "cross-encoder",
        build_command: str = "make models",
        onnx_file: str | None = None,
        batch_size: int = 32,
        threads: int = 2,
    ) -> None:
        self.folder = Path(folder)
        self.what = what
        self.build_command = build_command
        self.onnx_file = onnx_file
        self.batch_size = batch_size
        self.threads = threads
        self._lock = threading.Lock()
        self._session: onnxruntime.InferenceSession | None = None
        self._encoder: PairEncoder | None = None
        self._metadata: ModelMetadata | None = None

    def check_files(self) -> ModelMetadata:
        """Raise ModelFilesMissingError unless the folder can be served; return its metadata."""
        return require_files(self.folder, self.what, self.build_command, self.onnx_file)

    @property
    def metadata(self) -> ModelMetadata:
        if self._metadata is None:
            self._metadata = self.check_files()
        return self._metadata

    def warm_up(self) -> OnnxCrossEncoder:
        """Load the tokenizer and the ONNX session (idempotent)."""
        with self._lock:
            if self._session is not None:
                return self
            meta = self.metadata
            path = self.folder / (self.onnx_file or meta.onnx_file)
            self._encoder = PairEncoder(
                load_tokenizer(self.folder / meta.tokenizer_files[0]),
                max_length=meta.max_length,
                long_side=meta.long_side,
                stride=meta.stride,
            )
            self._session = open_session(path, self.threads)
        return self

    def window_logits(self, pairs: Sequence[tuple[str, str]]) -> list[list[float]]:
        """The logit of every window, grouped per pair."""
        self.warm_up()
        assert self._encoder is not None
        assert self._session is not None
        windows = self._encoder.windows(pairs)
        values = [0.0] * len(windows)
        order = sorted(range(len(windows)), key=lambda j: len(windows[j].input_ids))  # less padding
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            ids, mask, types = pad_batch([windows[j] for j in batch], self._encoder.pad_id)
            feeds = session_feeds(self._session, ids, mask, types)
            (logits,) = self._session.run(["logits"], feeds)
            for j, value in zip(batch, np.asarray(logits).reshape(-1).tolist(), strict=True):
                values[j] = float(value)
        grouped: list[list[float]] = [[] for _ in pairs]
        for w, value in zip(windows, values, strict=True):  # windows in text order within each pair
            grouped[w.pair_index].append(value)
        return grouped

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Probability per pair: the sigmoid of the best window's logit (min over sentences of a long short side)."""
        if not pairs:
            return []
        self.warm_up()
        assert self._encoder is not None
        encoder = self._encoder
        expanded: list[tuple[str, str]] = []
        owner: list[int] = []
        for i, (pair, n) in enumerate(zip(pairs, encoder.short_side_lengths(pairs), strict=True)):
            parts = [pair]
            if n > encoder.short_side_budget():
                short_index = 1 if encoder.long_side == "first" else 0
                sentences = split_sentences(pair[short_index]) or [pair[short_index]]
                parts = [(pair[0], s) if short_index == 1 else (s, pair[1]) for s in sentences]
            expanded += parts
            owner += [i] * len(parts)
        scores: list[float] = [1.0] * len(pairs)
        for i, logits in zip(owner, self.window_logits(expanded), strict=True):
            scores[i] = min(scores[i], sigmoid(max(logits)))
        return scores
