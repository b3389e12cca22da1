"""Int8 ONNX rebuilt from fp32: ``python -m verityrag.train requantize`` (verityrag/train/requantize.py)."""

from verityrag.train.requantize import main

if __name__ == "__main__":
    raise SystemExit(main())
