"""Extractive readers by name: the one shipped with VerityRAG, a reader folder, or a Hugging Face model.

:func:`open_reader` takes what a user would pass:

- ``""`` or ``"bundled"``: the reader trained here, shipped in ``verityrag/resources/reader``
  (int8 ONNX, served by :class:`~verityrag.models.span_reader.SpanReader`);
- a folder with a ``metadata.json``: a reader exported by ``python -m verityrag.train reader``;
- any other folder or name: a Hugging Face extractive-QA model (``*ForQuestionAnswering`` with a
  fast tokenizer, e.g. ``deepset/minilm-uncased-squad2``), loaded with transformers and run
  with torch by :class:`HFSpanReader`. A hub name needs the network the first time (then the
  hub cache); offline, a local folder of such a model works the same way.

Every reader offers ``read_batch`` (best spans and the no-answer score), ``count_tokens`` and
``warm_up``; models load on first use.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from verityrag.errors import ModelLoadError
from verityrag.models.folder import METADATA_FILE, SHIPPED_READER_DIR
from verityrag.models.load_once import LoadsOnce
from verityrag.models.span_reader import TOP_K, ReaderResult, SpanReader, best_spans, ranked_result

#: The reader trained here and shipped with the package.
BUNDLED_READER = SHIPPED_READER_DIR
BUILD_READER = "make train-reader"


def open_reader(spec: str | Path | None = None, threads: int = 2) -> SpanReader | HFSpanReader:
    """The reader ``spec`` names (see the module docstring); nothing is loaded yet."""
    if spec is None or str(spec) in ("", "bundled"):
        return SpanReader(
            BUNDLED_READER, what="the shipped extractive reader", build_command=BUILD_READER, threads=threads
        )
    path = Path(spec).expanduser()
    if (path / METADATA_FILE).is_file():
        return SpanReader(
            path, what=f"the extractive reader in {path}", build_command=BUILD_READER, threads=threads
        )
    return HFSpanReader(str(spec), threads=threads)


class HFSpanReader(LoadsOnce):
    """A Hugging Face ``*ForQuestionAnswering`` model as a reader (torch). Constructor stores parameters only."""

    def __init__(self, name_or_path: str, max_length: int = 384, stride: int = 128, threads: int = 2) -> None:
        self.name_or_path = name_or_path
        self.max_length = max_length
        self.stride = stride
        self.threads = threads
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None

    def _is_loaded(self) -> bool:
        return self._model is not None

    def _load(self) -> None:
        """Load the tokenizer and the model; a failure names the model and why."""
        try:
            import torch
            from transformers import AutoModelForQuestionAnswering, AutoTokenizer

            torch.set_num_threads(self.threads)
            tokenizer = AutoTokenizer.from_pretrained(self.name_or_path, use_fast=True)
            model = AutoModelForQuestionAnswering.from_pretrained(self.name_or_path)
        except (OSError, ValueError, ImportError) as exc:
            raise ModelLoadError(
                f"the extractive reader {self.name_or_path!r}",
                [(self.name_or_path, f"{type(exc).__name__}: {exc}".splitlines()[0])],
            ) from exc
        if not getattr(tokenizer, "is_fast", False):
            raise ModelLoadError(
                f"the extractive reader {self.name_or_path!r}",
                [
                    (
                        self.name_or_path,
                        "needs a fast tokenizer (tokenizer.json) for character offsets",
                    )
                ],
            )
        self._tokenizer = tokenizer
        self._model = model.eval()

    def count_tokens(self, text: str) -> int:
        self.warm_up()
        return len(self._tokenizer(text, add_special_tokens=False)["input_ids"])

    def read_batch(self, pairs: Sequence[tuple[str, str]], k: int = TOP_K) -> list[ReaderResult]:
        """Best spans and the no-answer score per pair, windowed over long evidence as SpanReader does."""
        import torch

        self.warm_up()
        out: list[ReaderResult] = []
        for question, evidence in pairs:
            if not evidence.strip():
                out.append(ReaderResult([], math.inf))
                continue
            enc = self._tokenizer(
                question,
                evidence,
                truncation="only_second",
                max_length=self.max_length,
                stride=self.stride,
                return_overflowing_tokens=True,
                return_offsets_mapping=True,
                padding=True,
                return_tensors="pt",
            )
            inputs = {
                k_: v for k_, v in enc.items() if k_ in ("input_ids", "attention_mask", "token_type_ids")
            }
            with torch.inference_mode():
                logits = self._model(**inputs)
            starts = logits.start_logits.float().numpy()
            ends = logits.end_logits.float().numpy()
            found: dict[tuple[int, int], float] = {}
            null = math.inf
            for row in range(starts.shape[0]):
                ids = enc.sequence_ids(row)
                context = [i for i, s in enumerate(ids) if s == 1]
                if not context:
                    continue
                null = min(null, float(starts[row][0] + ends[row][0]))
                offsets = enc["offset_mapping"][row].tolist()
                for i, j, score in best_spans(starts[row], ends[row], context[0], context[-1], k):
                    key = (int(offsets[i][0]), int(offsets[j][1]))
                    found[key] = max(score, found.get(key, -np.inf))
            out.append(ranked_result(evidence, found, null, k))
        return out
