"""The answerability gate (and its span model): ``python -m verityrag.train answerability`` (verityrag/train/answerability.py)."""

from verityrag.train.answerability import main

if __name__ == "__main__":
    raise SystemExit(main())
