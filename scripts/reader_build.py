"""The reader check's reader: ``python -m verityrag.train reader-check`` (verityrag/train/reader_check.py)."""

from verityrag.train.reader_check import main

if __name__ == "__main__":
    raise SystemExit(main())
