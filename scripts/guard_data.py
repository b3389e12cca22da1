"""Verity-Guard's pairs: ``python -m verityrag.train guard-data`` (verityrag/train/guard_data.py)."""

from verityrag.train.guard_data import main

if __name__ == "__main__":
    raise SystemExit(main())
