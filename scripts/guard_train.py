"""Verity-Guard: ``python -m verityrag.train guard`` (verityrag/train/guard.py)."""

from verityrag.train.guard import main

if __name__ == "__main__":
    raise SystemExit(main())
