"""``python -m verityrag``: the app on the bundled corpus, as a query session in the terminal.

(``make run`` starts the API and the Streamlit app instead: ``python -m verityrag.serve``.)

Loads data/corpus.jsonl, calibrates on the calibration questions, answers a
few sample questions (including ones it must refuse), then reads questions
from the terminal until EOF or ``:quit``. Non-interactive runs stop after the samples.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from verityrag.bundled import bundled_pipeline
from verityrag.eval.dataset import DEFAULT_DATA_DIR
from verityrag.types import QueryResult

SAMPLES = (
    "What BBC radio station will carry the game in the United Kingdom?",
    "What is the largest bone in the human body?",
    "When did Nikola Tesla die?",
)


def show(result: QueryResult) -> str:
    ms = result.latency_ms
    if result.abstained:
        reason = result.abstain_reason.value if result.abstain_reason else "?"
        return f"  ABSTAIN ({reason}); confidence {result.confidence:.2f}; {ms:.1f} ms"
    cites = ", ".join(f"{c.title} [{c.chunk_id}]" for c in result.citations)
    return (
        f"  ANSWER: {result.answer}\n  grounding {result.grounding.overall_score:.2f}, "
        f"confidence {result.confidence:.2f}; cites {cites}; {ms:.1f} ms"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verityrag", description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--store", type=Path, default=None, help="persist the index in this folder")
    parser.add_argument("question", nargs="*", help="ask these questions and exit")
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    pipeline = bundled_pipeline(args.data_dir, store_dir=args.store)
    stats = pipeline.stats()
    print(
        f"VerityRAG ready: {stats['documents']} documents, {stats['chunks']} chunks ({time.perf_counter() - t0:.1f} s)"
    )

    questions = args.question or list(SAMPLES)
    for q in questions:
        print(f"\nQ: {q}\n{show(pipeline.query(q))}")
    if args.question or not sys.stdin.isatty():
        return 0
    print("\nAsk a question (empty line or :quit to stop).")
    while True:
        try:
            q = input("\nQ: ").strip()
        except EOFError:
            break
        if not q or q == ":quit":
            break
        print(show(pipeline.query(q)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
