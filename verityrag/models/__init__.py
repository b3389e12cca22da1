"""The transformer models trained here, served: pair encoding, the cross-encoder scorer, the span
reader, model folders and where they live.

Used by the learned checks (:mod:`verityrag.checks`) and the extractive reader. Heavy libraries
(transformers' tokenizers, onnxruntime) are imported on first use, never at import time. No
training code: the trainers and the ONNX export are in :mod:`verityrag.train`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verityrag._lazy import lazy_exports

if TYPE_CHECKING:
    from verityrag.models.encoding import EncodedWindow as EncodedWindow
    from verityrag.models.encoding import PairEncoder as PairEncoder
    from verityrag.models.encoding import load_tokenizer as load_tokenizer
    from verityrag.models.evidence import trim_evidence as trim_evidence
    from verityrag.models.folder import ModelFilesMissingError as ModelFilesMissingError
    from verityrag.models.folder import ModelMetadata as ModelMetadata
    from verityrag.models.folder import require_files as require_files
    from verityrag.models.scorer import OnnxCrossEncoder as OnnxCrossEncoder
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "verityrag.models.encoding": (
                "EncodedWindow",
                "PairEncoder",
                "load_tokenizer",
            ),
            "verityrag.models.evidence": ("trim_evidence",),
            "verityrag.models.folder": (
                "ModelFilesMissingError",
                "ModelMetadata",
                "require_files",
            ),
            "verityrag.models.scorer": ("OnnxCrossEncoder",),
        },
    )

__all__ = [
    "EncodedWindow",
    "ModelFilesMissingError",
    "ModelMetadata",
    "OnnxCrossEncoder",
    "PairEncoder",
    "load_tokenizer",
    "require_files",
    "trim_evidence",
]
