"""Recipe: re-export a trained cross-encoder folder's torch weights to ONNX fp32 + int8.

The guard, NLI and answerability recipes already export; this rebuilds the ONNX files from
``<folder>/torch`` (after an onnxruntime upgrade, say) without retraining.

    python -m verityrag.train export-onnx                          # guard_work/guard
    python -m verityrag.train export-onnx guard_work/answerability
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from verityrag.models.folder import TORCH_DIR
from verityrag.train._common import ROOT, command, recipe_parser
from verityrag.train.exporter import export_onnx


def main(argv: Sequence[str] | None = None) -> int:
    p = recipe_parser("export-onnx", __doc__)
    p.add_argument("folder", type=Path, nargs="?", default=ROOT / "guard_work" / "guard")
    args = p.parse_args(argv)
    torch_dir = args.folder / TORCH_DIR
    if not (torch_dir / "config.json").is_file():
        print(f"error: {torch_dir} has no weights; train first (make models-guard)", file=sys.stderr)
        return 2
    from transformers import AutoConfig, AutoModelForSequenceClassification

    # The folder's own family (an MPNet gate loaded as BERT got freshly initialised weights).
    architectures = AutoConfig.from_pretrained(str(torch_dir)).architectures or []
    if not any(a.endswith("ForSequenceClassification") for a in architectures):
        print(
            f"error: {torch_dir} holds {', '.join(architectures) or 'no named architecture'}, not a one-logit "
            f"classifier (a span model is exported by {command('answerability')} --span, the reader by "
            f"{command('reader-check')})",
            file=sys.stderr,
        )
        return 2
    model = AutoModelForSequenceClassification.from_pretrained(str(torch_dir))
    fp32, int8 = export_onnx(model, args.folder)
    for f in (fp32, int8):
        if f is not None:
            print(f"{f}: {f.stat().st_size / 1e6:.1f} MB")
    return 0
