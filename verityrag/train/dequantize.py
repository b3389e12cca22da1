"""Recipe: an exported int8 reader back to torch weights, to train it further
(``python -m verityrag.train dequantize --out FOLDER``).

A reader ships as dynamic-int8 ONNX only (``verityrag/resources/reader``); the torch weights it
was exported from live in the training run's work folder, which a new machine does not have.
Every weight is in the ONNX file, quantised: the embeddings per tensor (uint8), each dense
layer's matrix per output column (int8), the biases and layer norms as they were (fp32). This
reads them back, ``(q - zero_point) * scale``, into the base model's architecture and writes an
exported-reader folder (``torch/`` and ``tokenizer.json``) that ``python -m verityrag.train
reader --base-model FOLDER`` continues from. A dense layer's name is found from the graph: the
bias added to its product names it.

The weights carry the quantisation's rounding (the served model's own), so the torch model's
logits are close to, not equal to, the fp32 original's: the largest start-logit gap to the int8
ONNX on a probe is recorded in the folder's ``dequantized.json``.
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from verityrag.models.folder import ONNX_INT8_FILE, SHIPPED_READER_DIR, TOKENIZER_FILE, TORCH_DIR
from verityrag.train._common import recipe_parser
from verityrag.train.cross_encoder import minilm_path

#: The prefix the reader's export gives every parameter (``ReaderLogits.qa``).
_PREFIX = "qa."


def _initializers(model: Any) -> dict[str, np.ndarray]:
    from onnx import numpy_helper

    return {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}


def _dense_names(model: Any, weights: dict[str, np.ndarray]) -> dict[str, str]:
    """Quantised matrix name -> the parameter it was (``...dense.weight``), by the bias its
    product is added to, following the product through the nodes in between."""
    consumers: dict[str, list[Any]] = defaultdict(list)
    for node in model.graph.node:
        for name in node.input:
            consumers[name].append(node)
    names: dict[str, str] = {}
    for node in model.graph.node:
        if node.op_type != "MatMulInteger" or not node.input[1].endswith("_quantized"):
            continue
        frontier, seen, bias = list(node.output), set(), None
        while frontier and bias is None:
            tensor = frontier.pop(0)
            for nxt in consumers.get(tensor, []):
                if id(nxt) in seen:
                    continue
                seen.add(id(nxt))
                if nxt.op_type == "Add":
                    bias = next((i for i in nxt.input if i.endswith(".bias") and i in weights), None)
                    if bias is not None:
                        break
                frontier.extend(nxt.output)
        if bias is None:
            raise ValueError(f"no bias found after the product of {node.input[1]}")
        names[node.input[1]] = bias[: -len(".bias")] + ".weight"
    return names


def dequantized_state(onnx_file: Path) -> dict[str, np.ndarray]:
    """The parameters of the int8 reader ``onnx_file`` as fp32 arrays, by their torch names
    (without the export's ``qa.`` prefix), matrices in torch's (out, in) layout."""
    import onnx

    model = onnx.load(str(onnx_file))
    weights = _initializers(model)
    dense = _dense_names(model, weights)
    state: dict[str, np.ndarray] = {}
    for name, value in weights.items():
        if name.endswith("_quantized"):
            stem = name[: -len("_quantized")]
            scale = weights[stem + "_scale"].astype(np.float32)
            zero = weights[stem + "_zero_point"].astype(np.float32)
            real = (value.astype(np.float32) - zero) * scale  # per column: (in, out) * (out,)
            target = dense.get(name, stem)
            if name in dense:
                real = real.T  # ONNX multiplies by W^T as stored: torch keeps (out, in)
            state[target] = np.ascontiguousarray(real)
        elif not name.endswith(("_scale", "_zero_point")) and value.dtype == np.float32:
            state[name] = value
    return {k[len(_PREFIX) :] if k.startswith(_PREFIX) else k: v for k, v in state.items()}


def write_folder(source: Path, out: Path, base: Path) -> dict[str, Any]:
    """``out``: an exported-reader folder with the dequantised weights of ``source``'s int8 reader
    in ``base``'s architecture; the probe's largest start-logit gap to the int8 model."""
    import onnxruntime
    import torch
    from transformers import AutoModelForQuestionAnswering

    state = dequantized_state(source / ONNX_INT8_FILE)
    model = AutoModelForQuestionAnswering.from_pretrained(str(base), num_labels=2)
    own = model.state_dict()
    missing = [k for k in own if k not in state and not k.endswith("position_ids")]
    if missing:
        raise ValueError(f"the ONNX file lacks {len(missing)} parameters, e.g. {missing[:3]}")
    loaded = {k: torch.from_numpy(np.array(state[k])).reshape(own[k].shape) for k in own if k in state}
    model.load_state_dict(loaded, strict=False)
    shutil.rmtree(out, ignore_errors=True)
    (out / TORCH_DIR).mkdir(parents=True)
    model.save_pretrained(str(out / TORCH_DIR))
    shutil.copy(source / TOKENIZER_FILE, out / TOKENIZER_FILE)
    # The probe: a window of token ids through both.
    ids = np.array(
        [[101, 2040, 2328, 1996, 2958, 1029, 102, 1996, 2214, 2958, 2001, 2328, 2011, 1996, 7815, 102]]
    )
    types = np.array([[0] * 7 + [1] * 9])
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": types}
    session = onnxruntime.InferenceSession(str(source / ONNX_INT8_FILE), providers=["CPUExecutionProvider"])
    served = session.run(["start_logits"], feeds)[0]
    with torch.inference_mode():
        mine = model(**{k: torch.from_numpy(v) for k, v in feeds.items()}).start_logits.numpy()
    report = {
        "source": str(source),
        "base": str(base),
        "max_abs_start_logit_gap_to_int8": float(np.abs(mine - served).max()),
    }
    (out / "dequantized.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def main(argv: list[str] | None = None) -> int:
    p = recipe_parser("dequantize", __doc__)
    p.add_argument(
        "--source",
        type=Path,
        default=SHIPPED_READER_DIR,
        help="an exported reader folder (default: the shipped one)",
    )
    p.add_argument("--out", type=Path, required=True, help="the folder to write (replaced)")
    args = p.parse_args(argv)
    report = write_folder(args.source, args.out, minilm_path())
    print(json.dumps(report, indent=2))
    return 0
