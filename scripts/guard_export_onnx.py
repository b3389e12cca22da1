"""Re-export a trained cross-encoder folder's torch weights to ONNX fp32 + int8.

guard_train.py and answer_train.py already export; this rebuilds the ONNX files from
``<folder>/torch`` (after an onnxruntime upgrade, say) without retraining.

    python scripts/guard_export_onnx.py                          # guard_work/guard
    python scripts/guard_export_onnx.py guard_work/answerability
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verityrag.crossenc import export_onnx  # noqa: E402
from verityrag.crossenc.model_folder import TORCH_DIR  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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
            "classifier (a span model is exported by answer_train.py --span, the reader by scripts/reader_build.py)",
            file=sys.stderr,
        )
        return 2
    model = AutoModelForSequenceClassification.from_pretrained(str(torch_dir))
    fp32, int8 = export_onnx(model, args.folder)
    for f in (fp32, int8):
        if f is not None:
            print(f"{f}: {f.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
