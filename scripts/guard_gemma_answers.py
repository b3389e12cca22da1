"""Gemma-3-270m's labelled answers: ``python -m verityrag.train gemma-answers`` (verityrag/train/gemma_answers.py)."""

from verityrag.train.gemma_answers import main

if __name__ == "__main__":
    raise SystemExit(main())
