"""The answerability gate's pairs: ``python -m verityrag.train answerability-data`` (verityrag/train/answerability_data.py)."""

from verityrag.train.answerability_data import main

if __name__ == "__main__":
    raise SystemExit(main())
