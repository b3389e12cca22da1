"""The learned sentence selector: ``python -m verityrag.train selector`` (verityrag/train/selector.py)."""

from verityrag.train.selector import main

if __name__ == "__main__":
    raise SystemExit(main())
