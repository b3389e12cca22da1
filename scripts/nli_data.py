"""The NLI verifier's pairs: ``python -m verityrag.train nli-data`` (verityrag/train/nli_data.py)."""

from verityrag.train.nli_data import main

if __name__ == "__main__":
    raise SystemExit(main())
