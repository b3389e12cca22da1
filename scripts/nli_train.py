"""The NLI verifier model: ``python -m verityrag.train nli`` (verityrag/train/nli.py)."""

from verityrag.train.nli import main

if __name__ == "__main__":
    raise SystemExit(main())
