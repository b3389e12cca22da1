"""The hashing embedder's feature loop compiled with numba: the same vectors, bit for bit.

:class:`~verityrag.embed.hashing.HashingEmbedder` in Python builds each text's features as
strings (each term, each pair of neighbouring terms joined by a space), counts them, takes each
one's CRC-32 and adds its signed weight to a cell: at a bulk ingest that is half of preparing a
chunk. Here the terms of a batch are numbered once in Python (a dict lookup each, in C), and a
compiled loop counts each text's unigrams (by number) and bigrams (by pair of numbers: a term has
no space, so two bigrams are the same string exactly when their pairs are the same), takes a
bigram's CRC-32 by running the CRC of its first term and a space on over the second term's
bytes, and adds the weights in the Python path's order (unigrams, then bigrams, each in order of
first sight) in float32: the same additions, so the same bits. The Python path stays the
reference (differential tests) and serves n-grams past two and machines without numba.
"""

from __future__ import annotations

import math
import zlib
from collections import defaultdict
from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np
import numpy.typing as npt

try:
    from verityrag.embed._jit import compiled
except ImportError:  # pragma: no cover - numba is in requirements.txt; the Python path serves
    AVAILABLE = False
else:
    AVAILABLE = True


def _crc_table() -> npt.NDArray[np.uint32]:
    """The byte table of the CRC-32 that zlib computes (reflected polynomial 0xEDB88320)."""
    table = np.empty(256, dtype=np.uint32)
    for byte in range(256):
        c = byte
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        table[byte] = c
    return table


_CRC_TABLE = _crc_table()


def _crc_continued(crc: int, data: Any, start: int, end: int, table: Any) -> int:
    """``zlib.crc32(data[start:end], crc)``: the CRC of what ``crc`` was of, then these bytes."""
    c = np.uint32(crc) ^ np.uint32(0xFFFFFFFF)
    for i in range(start, end):
        c = table[(c ^ np.uint32(data[i])) & np.uint32(0xFF)] ^ (c >> np.uint32(8))
    return int(c ^ np.uint32(0xFFFFFFFF))


def _add(out: Any, row: int, h: int, dim: int, weight: float) -> None:
    """One feature's signed weight into its cell, as the Python path does (float64 weight,
    signed by the hash's next bit, rounded to float32, added in float32)."""
    value = np.float32(weight) if (h // dim) & 1 else np.float32(-weight)
    out[row, h % dim] += value


def _kernel(
    term_ids: Any,
    text_starts: Any,
    term_crc: Any,
    space_crc: Any,
    term_bytes: Any,
    byte_starts: Any,
    weights: Any,
    unigrams: bool,
    bigrams: bool,
    dim: int,
    out: Any,
    table: Any,
) -> None:
    n_vocab = len(term_crc)
    seen_in = np.full(n_vocab, -1, dtype=np.int64)  # the text a term was last counted for
    position = np.zeros(n_vocab, dtype=np.int64)  # and its place in that text's unigrams
    for row in range(len(text_starts) - 1):
        lo, hi = text_starts[row], text_starts[row + 1]
        m = hi - lo
        if unigrams:
            ids = np.empty(m, dtype=np.int64)
            counts = np.zeros(m, dtype=np.int64)
            n = 0
            for i in range(lo, hi):
                t = term_ids[i]
                if seen_in[t] != row:
                    seen_in[t] = row
                    position[t] = n
                    ids[n] = t
                    n += 1
                counts[position[t]] += 1
            for j in range(n):
                _add(out, row, term_crc[ids[j]], dim, weights[counts[j]])
        if bigrams and m >= 2:
            size = 4
            while size < 2 * m:
                size *= 2
            keys = np.full(size, -1, dtype=np.int64)
            slot_of = np.empty(size, dtype=np.int64)
            firsts = np.empty(m, dtype=np.int64)
            seconds = np.empty(m, dtype=np.int64)
            counts = np.zeros(m, dtype=np.int64)
            n = 0
            for i in range(lo, hi - 1):
                a, b = term_ids[i], term_ids[i + 1]
                key = a * n_vocab + b
                s = (key * 0x9E3779B1) & (size - 1)
                while keys[s] != -1 and keys[s] != key:
                    s = (s + 1) & (size - 1)
                if keys[s] == -1:
                    keys[s] = key
                    slot_of[s] = n
                    firsts[n], seconds[n] = a, b
                    n += 1
                counts[slot_of[s]] += 1
            for j in range(n):
                b = seconds[j]
                h = _crc_continued(
                    space_crc[firsts[j]], term_bytes, byte_starts[b], byte_starts[b + 1], table
                )
                _add(out, row, h, dim, weights[counts[j]])


if AVAILABLE:
    _crc_continued = compiled(_crc_continued)
    _add = compiled(_add)
    _kernel = compiled(_kernel)


def hashed_counts(
    term_lists: Sequence[Sequence[str]], dim: int, ngram_range: tuple[int, int], term_crc32: Any
) -> npt.NDArray[np.float32]:
    """Each text's summed signed weights (one row per text, not yet normalised), from its
    analyzed terms; ``term_crc32`` is the embedder's (cached) CRC-32 of a string."""
    lo, hi = ngram_range
    if hi > 2:
        raise ValueError("the compiled features go up to bigrams")
    lengths = np.fromiter(map(len, term_lists), dtype=np.int64, count=len(term_lists))
    text_starts = np.zeros(len(term_lists) + 1, dtype=np.int64)
    np.cumsum(lengths, out=text_starts[1:])
    vocab: defaultdict[str, int] = defaultdict()
    vocab.default_factory = vocab.__len__  # first sight of a term gives it the next number
    term_ids = np.fromiter(
        map(vocab.__getitem__, chain.from_iterable(term_lists)), dtype=np.int64, count=int(text_starts[-1])
    )
    terms = list(vocab)
    encoded = [term.encode("utf-8") for term in terms]
    term_crc = np.fromiter(map(term_crc32, terms), dtype=np.int64, count=len(terms))
    space_crc = np.fromiter(
        (zlib.crc32(b" ", int(c)) for c in term_crc.tolist()), dtype=np.int64, count=len(terms)
    )
    byte_starts = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(terms)), out=byte_starts[1:])
    term_bytes = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    # 1 + ln tf by math.log, as the Python path weighs (a feature occurs at most once per term)
    most = int(lengths.max()) if len(lengths) else 0
    weights = np.array([0.0] + [1.0 + math.log(tf) for tf in range(1, most + 1)], dtype=np.float64)
    out = np.zeros((len(term_lists), dim), dtype=np.float32)
    _kernel(
        term_ids,
        text_starts,
        term_crc,
        space_crc,
        term_bytes,
        byte_starts,
        weights,
        lo == 1,
        hi == 2,
        dim,
        out,
        _CRC_TABLE,
    )
    return out
