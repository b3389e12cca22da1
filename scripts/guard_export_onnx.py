"""ONNX files rebuilt from torch weights: ``python -m verityrag.train export-onnx`` (verityrag/train/export_onnx.py)."""

from verityrag.train.export_onnx import main

if __name__ == "__main__":
    raise SystemExit(main())
