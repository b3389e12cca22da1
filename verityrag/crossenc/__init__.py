"""Cross-encoders trained here: one trainer, one ONNX export, one scorer for all of them.

Used by the learned checks (:mod:`verityrag.checks`) and the extractive reader. Heavy libraries (torch,
transformers, onnxruntime) are imported on first use, never at import time.
"""

from verityrag.crossenc.encoding import EncodedWindow, PairEncoder, load_tokenizer
from verityrag.crossenc.evidence import trim_evidence
from verityrag.crossenc.export import export_onnx, quantize_int8
from verityrag.crossenc.model_folder import ModelFilesMissingError, ModelMetadata, require_files
from verityrag.crossenc.scorer import OnnxCrossEncoder
from verityrag.crossenc.trainer import CrossEncoderTrainer, minilm_path

__all__ = [
    "CrossEncoderTrainer",
    "EncodedWindow",
    "ModelFilesMissingError",
    "ModelMetadata",
    "OnnxCrossEncoder",
    "PairEncoder",
    "export_onnx",
    "load_tokenizer",
    "minilm_path",
    "quantize_int8",
    "require_files",
    "trim_evidence",
]
