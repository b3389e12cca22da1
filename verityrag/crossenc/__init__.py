"""Cross-encoders trained here: one trainer, one ONNX export, one scorer for all of them.

Used by the learned checks (:mod:`verityrag.checks`) and the extractive reader. Heavy libraries (torch,
transformers, onnxruntime) are imported on first use, never at import time. The package's names
are what serving needs; the trainer (``crossenc.trainer``) and the export (``crossenc.export``)
are imported from their modules by the recipes, so a check that loads a model loads no
training code.
"""

from verityrag.crossenc.encoding import EncodedWindow, PairEncoder, load_tokenizer
from verityrag.crossenc.evidence import trim_evidence
from verityrag.crossenc.model_folder import ModelFilesMissingError, ModelMetadata, require_files
from verityrag.crossenc.scorer import OnnxCrossEncoder

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
