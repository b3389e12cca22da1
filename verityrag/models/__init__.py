"""The transformer models trained here, served: pair encoding, the cross-encoder scorer, the span
reader, model folders and where they live.

Used by the learned checks (:mod:`verityrag.checks`) and the extractive reader. Heavy libraries
(transformers' tokenizers, onnxruntime) are imported on first use, never at import time. No
training code: the trainers and the ONNX export are in :mod:`verityrag.train`.
"""

from verityrag.models.encoding import EncodedWindow, PairEncoder, load_tokenizer
from verityrag.models.evidence import trim_evidence
from verityrag.models.folder import ModelFilesMissingError, ModelMetadata, require_files
from verityrag.models.scorer import OnnxCrossEncoder

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
