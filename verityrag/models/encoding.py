"""Pair encoding shared by training and serving: one function builds every model input.

A BERT pair is ``[CLS] first [SEP] second [SEP]``; a RoBERTa-style pair (MPNet, whose
tokenizer has ``<s>`` / ``</s>``) is ``<s> first </s></s> second </s>``. Either way the
token types say which segment a token is in (0 first, 1 second): BERT reads them, and the
extractive-QA code finds the evidence by them; models without token types are not given
them (:func:`model_inputs`). Training and the ONNX scorer both build inputs here, so the
model is served exactly what it was trained on.

Inputs longer than the model window are never cut silently: the *long side* (the
evidence) is split into overlapping windows, each window is scored with the whole
short side, and the scores are aggregated by the caller (max for support and
answerability: one window that supports is enough). A short side that alone does
not fit is an error, because no window of it can be judged on its own.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from verityrag.errors import InvalidInputError

if TYPE_CHECKING:
    import tokenizers

LongSide = Literal["first", "second"]
LONG_SIDES: tuple[LongSide, ...] = ("first", "second")

# Fewest tokens of the long side per window; below this a window says too little to score.
MIN_WINDOW_TOKENS = 32


@dataclass(frozen=True, slots=True)
class EncodedWindow:
    """One model input: token ids, token types, and which pair it came from."""

    pair_index: int
    input_ids: list[int]
    token_type_ids: list[int]


def load_tokenizer(path: Path) -> tokenizers.Tokenizer:
    """A ``tokenizers`` tokenizer with its own truncation and padding turned off (we window)."""
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(str(path))
    tok.no_truncation()
    tok.no_padding()
    return tok


#: Padding token by the pair's opening token (BERT's [CLS], RoBERTa-style <s>).
PAD_TOKENS = {"[CLS]": "[PAD]", "<s>": "<pad>"}


def pair_tokens(tokenizer: tokenizers.Tokenizer) -> tuple[int, list[int], int, int]:
    """Ids of a pair's special tokens (opening, between the segments, closing, padding), read off
    the tokenizer's own pair template: MPNet's vocabulary also holds [CLS] and [SEP], as plain
    tokens, so looking tokens up by name cannot tell the families apart."""
    enc = tokenizer.encode("a", "b", add_special_tokens=True)
    seq, ids = enc.sequence_ids, enc.ids
    first = [i for i, s in enumerate(seq) if s == 0]
    second = [i for i, s in enumerate(seq) if s == 1]
    opening, between, closing = ids[: first[0]], ids[first[-1] + 1 : second[0]], ids[second[-1] + 1 :]
    pad = PAD_TOKENS.get(tokenizer.id_to_token(opening[0]) or "") if len(opening) == 1 else None
    pad_id = tokenizer.token_to_id(pad) if pad else None
    if len(closing) != 1 or not between or pad_id is None:
        raise InvalidInputError(
            "tokenizer",
            "its pair template is not [CLS] a [SEP] b [SEP] or <s> a </s></s> b </s> "
            f"(got {enc.tokens}); a BERT or RoBERTa-style tokenizer is expected",
        )
    return opening[0], between, closing[0], pad_id


def model_inputs(
    model: object, input_ids: object, attention_mask: object, token_type_ids: object
) -> dict[str, object]:
    """Keyword inputs for a model: the segment ids only where it takes token types.

    BERT has two token types; MPNet's forward takes none and RoBERTa has one, so they are not
    given the segment ids the encoder builds. This project's own wrappers (the span model)
    take them and pass them on by the same rule.
    """
    inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
    model = getattr(model, "_orig_mod", model)  # torch.compile's wrapper: its forward takes *args
    takes = "token_type_ids" in inspect.signature(model.forward).parameters  # type: ignore[attr-defined]
    config = getattr(model, "config", None)
    if takes and (config is None or getattr(config, "type_vocab_size", 0) > 1):
        inputs["token_type_ids"] = token_type_ids
    return inputs


class PairEncoder:
    """Builds windowed pair inputs (BERT or RoBERTa-style) of at most ``max_length`` tokens."""

    def __init__(
        self,
        tokenizer: tokenizers.Tokenizer,
        max_length: int = 256,
        long_side: LongSide = "second",
        stride: int = 64,
    ) -> None:
        if long_side not in LONG_SIDES:
            raise InvalidInputError("long_side", f"must be one of {LONG_SIDES}, got {long_side!r}")
        if max_length < MIN_WINDOW_TOKENS + 8:
            raise InvalidInputError("max_length", f"must be >= {MIN_WINDOW_TOKENS + 8}, got {max_length}")
        if stride < 0:
            raise InvalidInputError("stride", f"must be >= 0, got {stride}")
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.long_side = long_side
        self.stride = stride
        self.open_id, self.between_ids, self.close_id, self.pad_id = pair_tokens(tokenizer)
        # Special tokens per window: 3 for BERT, 4 for RoBERTa-style pairs.
        self.n_special = 2 + len(self.between_ids)

    def _ids(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def short_side_budget(self) -> int:
        """Most tokens the short side may have and still leave a useful window of the long side."""
        return self.max_length - self.n_special - MIN_WINDOW_TOKENS

    def short_side_lengths(self, pairs: Sequence[tuple[str, str]]) -> list[int]:
        return [len(ids) for ids in self._ids([p[1] if self.long_side == "first" else p[0] for p in pairs])]

    def window_budget(self, short_tokens: int, field: str) -> int:
        """Tokens a window leaves for the long side next to ``short_tokens``; raises when too few."""
        budget = self.max_length - self.n_special - short_tokens
        if budget < MIN_WINDOW_TOKENS:
            side = "second" if self.long_side == "first" else "first"
            raise InvalidInputError(
                field,
                f"the {side} text is {short_tokens} tokens; with max_length={self.max_length} it leaves "
                f"{budget} tokens for the other text (need >= {MIN_WINDOW_TOKENS}); split it into sentences",
            )
        return budget

    def second_offset(self, first_tokens: int) -> int:
        """Position of the second segment's first token after a first segment of ``first_tokens``."""
        return 1 + first_tokens + len(self.between_ids)

    def window(self, pair_index: int, short: list[int], piece: list[int]) -> EncodedWindow:
        """``[CLS] first [SEP] second [SEP]`` (or ``<s> first </s></s> second </s>``) from the
        short side and a piece of the long side; types 0 up to the segments' separator, then 1."""
        first, second = (piece, short) if self.long_side == "first" else (short, piece)
        ids = [self.open_id, *first, *self.between_ids, *second, self.close_id]
        n_first = self.second_offset(len(first))
        types = [0] * n_first + [1] * (len(ids) - n_first)
        return EncodedWindow(pair_index, ids, types)

    def windows(self, pairs: Sequence[tuple[str, str]], skip_too_long: bool = False) -> list[EncodedWindow]:
        """Every window of every pair, in pair order (``pair_index`` says which pair).

        A pair whose short side leaves no room for a window raises, or with ``skip_too_long``
        (training data) gets no window at all.
        """
        firsts = self._ids([p[0] for p in pairs])
        seconds = self._ids([p[1] for p in pairs])
        out: list[EncodedWindow] = []
        for i, (a, b) in enumerate(zip(firsts, seconds, strict=True)):
            short, long = (b, a) if self.long_side == "first" else (a, b)
            if skip_too_long and len(short) > self.short_side_budget():
                continue
            budget = self.window_budget(len(short), f"pairs[{i}]")
            out += [self.window(i, short, piece) for piece in _spans(long, budget, self.stride)]
        return out


def window_starts(n: int, budget: int, stride: int) -> list[int]:
    """Where each window of ``n`` tokens starts: at most ``budget`` tokens each, ``stride`` of overlap."""
    if n <= budget:
        return [0]
    step = max(1, budget - min(stride, budget // 2))
    starts = []
    start = 0
    while True:
        starts.append(start)
        if start + budget >= n:
            return starts
        start += step


def _spans(ids: list[int], budget: int, stride: int) -> list[list[int]]:
    """Overlapping pieces of ``ids`` of at most ``budget`` tokens (``stride`` tokens of overlap)."""
    return [ids[start : start + budget] for start in window_starts(len(ids), budget, stride)]


def pad_batch(
    windows: Sequence[EncodedWindow], pad_id: int = 0
) -> tuple[list[list[int]], list[list[int]], list[list[int]]]:
    """Dynamic padding: pad to the longest window of this batch, not to ``max_length``.

    ``pad_id``: the tokenizer's padding token (``PairEncoder.pad_id``; 0 is BERT's [PAD]).
    """
    width = max(len(w.input_ids) for w in windows)
    ids = [w.input_ids + [pad_id] * (width - len(w.input_ids)) for w in windows]
    mask = [[1] * len(w.input_ids) + [0] * (width - len(w.input_ids)) for w in windows]
    types = [w.token_type_ids + [0] * (width - len(w.token_type_ids)) for w in windows]
    return ids, mask, types
