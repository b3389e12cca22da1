"""The all-mpnet-base-v2 base model: ``python -m verityrag.train mpnet-base`` (verityrag/train/mpnet.py)."""

from verityrag.train.mpnet import main

if __name__ == "__main__":
    raise SystemExit(main())
