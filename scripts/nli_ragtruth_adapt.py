"""The RAGTruth-adapted NLI model: ``python -m verityrag.train nli-ragtruth`` (verityrag/train/nli_ragtruth.py)."""

from verityrag.train.nli_ragtruth import main

if __name__ == "__main__":
    raise SystemExit(main())
