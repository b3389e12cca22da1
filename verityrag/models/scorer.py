"""``OnnxCrossEncoder``: serves a trained cross-encoder folder with onnxruntime.

It implements :class:`verityrag.verify.protocols.NLIScorer`: ``score_pairs(pairs)``
returns one probability (sigmoid of the logit) per pair. Pairs longer than the model
window are scored window by window and the maximum is kept (support and
answerability need one window that supports; nothing is cut silently). When the
short side (the hypothesis or answer) is itself too long for a window, it is split
into sentences (a sentence still too long, into pieces that fit, cut where a word
starts), each is scored as above, and the least supported part decides (min): every
part must be supported. A pair with a NaN window logit scores 0: a broken output
never passes a check.

The session loads lazily (first call or :meth:`warm_up`), once, thread-safely; the
folder is checked first, and a missing file raises
:class:`~verityrag.models.folder.ModelFilesMissingError` naming it and the
command that builds it, and an export whose outputs are not one ``logits`` (a reader's
start / end logits) is a :class:`~verityrag.errors.ModelLoadError` naming the folder.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from verityrag.embed.onnx_options import cpu_session_options
from verityrag.errors import ModelLoadError
from verityrag.models.encoding import LongSide, PairEncoder, load_tokenizer, pad_batch
from verityrag.models.folder import ModelMetadata, ServedFolder, require_files
from verityrag.text.sentences import split_sentences

if TYPE_CHECKING:
    import onnxruntime

logger = logging.getLogger(__name__)

#: ONNX output of a one-logit cross-encoder export (:func:`~verityrag.train.exporter.export_onnx`).
LOGITS_OUTPUT = "logits"


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


def short_side_parts(encoder: PairEncoder, text: str) -> list[str]:
    """``text`` (a short side) in parts that each fit a window next to the long side: the
    text itself when it fits, else its sentences, a sentence still too long cut into pieces
    of at most :meth:`PairEncoder.short_side_budget` tokens. Nothing is dropped."""
    budget = encoder.short_side_budget()
    if len(encoder.tokenizer.encode(text, add_special_tokens=False).ids) <= budget:
        return [text]
    parts: list[str] = []
    for sentence in split_sentences(text) or [text]:
        parts += _fitting_pieces(encoder, sentence, budget)
    return parts


def _fitting_pieces(encoder: PairEncoder, text: str, budget: int) -> list[str]:
    """``text`` cut into pieces of at most ``budget`` tokens, each cut where a word starts (a
    word alone over the budget is cut between its tokens). A piece re-encodes to the tokens
    it was cut from, except a piece starting mid-word, which is checked and cut again."""
    enc = encoder.tokenizer.encode(text, add_special_tokens=False)
    n = len(enc.ids)
    if n <= budget:
        return [text]
    words, offsets = enc.word_ids, enc.offsets
    pieces: list[str] = []
    start = 0
    while start < n:
        end = min(start + budget, n)
        cut = end
        while end < n and cut > start and words[cut] is not None and words[cut] == words[cut - 1]:
            cut -= 1
        end = cut if cut > start else end
        piece = text[offsets[start][0] : offsets[end - 1][1]]
        # A mid-word piece may tokenise differently alone; it is shorter than ``text``, so this ends.
        pieces += _fitting_pieces(encoder, piece, budget) if len(piece) < len(text) else [piece]
        start = end
    return pieces


class OnnxCrossEncoder(ServedFolder):
    """A cross-encoder folder served by onnxruntime. Constructor stores parameters only.

    ``long_side``: the side the caller's pairs carry the evidence on; a folder whose metadata
    windows the other side (a guard folder served as the answerability gate) is refused, as
    its scores would be aggregated over the wrong text. None: whatever the folder says.
    """

    def __init__(
        self,
        folder: Path,
        what: str = "cross-encoder",
        build_command: str = "make models",
        onnx_file: str | None = None,
        batch_size: int = 32,
        threads: int = 2,
        long_side: LongSide | None = None,
    ) -> None:
        super().__init__(folder, what, build_command, threads, batch_size)
        self.onnx_file = onnx_file
        self.long_side = long_side

    def check_files(self) -> ModelMetadata:
        """Raise ModelFilesMissingError unless the folder can be served; return its metadata."""
        meta = require_files(self.folder, self.what, self.build_command, self.onnx_file)
        if self.long_side is not None and meta.long_side != self.long_side:
            raise ModelLoadError(
                self.what,
                [
                    (
                        str(self.folder),
                        f"its metadata.json reads the {meta.long_side} text of a pair as the evidence, "
                        f"this check passes it {self.long_side}: a model of another kind (guard and NLI "
                        f"models take (evidence, answer), answerability (question, evidence)); build "
                        f"this one with `{self.build_command}`",
                    )
                ],
            )
        return meta

    def _load(self) -> None:
        """Load the tokenizer and the ONNX session."""
        meta = self.metadata
        path = self.folder / (self.onnx_file or meta.onnx_file)
        self._encoder = PairEncoder(
            load_tokenizer(self.folder / meta.tokenizer_files[0]),
            max_length=meta.max_length,
            long_side=meta.long_side,
            stride=meta.stride,
        )
        session = open_session(path, self.threads)
        outputs = [o.name for o in session.get_outputs()]
        if outputs != [LOGITS_OUTPUT]:  # else onnxruntime fails on the first query, not here
            raise ModelLoadError(
                self.what,
                [
                    (
                        str(path),
                        f"its outputs are {outputs}, not [{LOGITS_OUTPUT!r}]: not a one-logit "
                        f"cross-encoder (a reader export?); build one with `{self.build_command}`",
                    )
                ],
            )
        self._session = session

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
            (logits,) = self._session.run([LOGITS_OUTPUT], feeds)
            for j, value in zip(batch, np.asarray(logits).reshape(-1).tolist(), strict=True):
                values[j] = float(value)
        grouped: list[list[float]] = [[] for _ in pairs]
        for w, value in zip(windows, values, strict=True):  # windows in text order within each pair
            grouped[w.pair_index].append(value)
        return grouped

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Probability per pair: the sigmoid of the best window's logit (min over the parts of a long short side)."""
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
                pieces = short_side_parts(encoder, pair[short_index])
                parts = [(pair[0], s) if short_index == 1 else (s, pair[1]) for s in pieces]
            expanded += parts
            owner += [i] * len(parts)
        scores: list[float] = [1.0] * len(pairs)
        for i, logits in zip(owner, self.window_logits(expanded), strict=True):
            if any(math.isnan(x) for x in logits):
                # min(1.0, nan) is 1.0: a NaN would pass as fully supported. Score it as unsupported.
                logger.warning("%s gave a NaN logit for pair %d; scoring it 0", self.what, i)
                scores[i] = 0.0
            else:
                scores[i] = min(scores[i], sigmoid(max(logits)))
        return scores
