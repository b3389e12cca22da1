"""ONNX export of a trained cross-encoder, then dynamic int8 quantisation.

``torch.onnx.export(..., dynamo=False, opset_version=17)`` with dynamic batch and
sequence axes (the dynamo exporter and ``optimum`` do not work with this stack, see
../shared/MODELS.md), then ``onnxruntime.quantization.quantize_dynamic`` with int8
weights: ~91 MB -> ~23 MB for MiniLM-L6.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from verityrag.crossenc.model_folder import ONNX_FP32_FILE, ONNX_INT8_FILE

if TYPE_CHECKING:
    import torch

OPSET = 17


def export_onnx(model: torch.nn.Module, folder: Path, quantize: bool = True) -> tuple[Path, Path | None]:
    """Write ``model.onnx`` (fp32) and, with ``quantize``, ``model.int8.onnx`` into ``folder``."""
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    fp32 = folder / ONNX_FP32_FILE
    model.eval()
    dummy = torch.ones((2, 16), dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    dynamic = {n: {0: "batch", 1: "sequence"} for n in names} | {"logits": {0: "batch"}}
    with torch.inference_mode():
        torch.onnx.export(
            model,
            (dummy, dummy, torch.zeros_like(dummy)),
            str(fp32),
            input_names=names,
            output_names=["logits"],
            dynamic_axes=dynamic,
            opset_version=OPSET,
            dynamo=False,
        )
    if not quantize:
        return fp32, None
    return fp32, quantize_int8(fp32, folder / ONNX_INT8_FILE)


def quantize_int8(fp32: Path, out: Path) -> Path:
    """Dynamic int8 quantisation of the weights (activations stay float, scaled per batch)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8)
    return out
