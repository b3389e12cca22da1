"""The default sufficiency gate: ``python -m verityrag.train gate`` (verityrag/train/gate.py)."""

from verityrag.train.gate import main

if __name__ == "__main__":
    raise SystemExit(main())
