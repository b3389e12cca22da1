"""The span model's HaluEval pairs: ``python -m verityrag.train reader-check-data`` (verityrag/train/reader_check_data.py)."""

from verityrag.train.reader_check_data import main

if __name__ == "__main__":
    raise SystemExit(main())
