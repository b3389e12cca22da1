"""``python -m verityrag``: the app on the bundled corpus, as a query session in the terminal.

(``make run`` starts the API and the Streamlit app instead: ``python -m verityrag.serve``.)

Loads data/built/corpus.jsonl (built by ``make data``) and calibrates on the calibration questions. Questions given as
arguments are answered, then it exits. Otherwise questions piped in are answered one per line;
in a terminal it answers a few sample questions (including ones it must refuse), then reads
questions until EOF, an empty line or ``:quit``; a line starting with ``:`` is a command
(``:help`` lists them), never a question. With nothing piped in, it answers the samples.
A question the pipeline refuses as input (empty, too long) is reported and the session goes on;
the exit status is 2 when any was.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from verityrag.errors import InvalidInputError, VerityRAGError
from verityrag.eval.dataset import DEFAULT_DATA_DIR
from verityrag.pipeline import IN_MEMORY, VerityRAGPipeline
from verityrag.serve.bundled import bundled_pipeline
from verityrag.types import QueryResult

SAMPLES = (
    "What network broadcast Super Bowl 50 in the United States?",
    "What is the largest bone in the human body?",
    "Who did Tesla work for in New York in 1884?",
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


QUIT_COMMANDS = frozenset({":quit", ":q", ":exit"})
HELP = """Type a question and press Enter: the answer comes with the sentence it is quoted from, or a refusal
with its reason. Commands:
  :help     this list
  :stats    how many documents and chunks are indexed
  :quit     end the session (also :q, :exit, an empty line, Ctrl-D or Ctrl-C)"""


def command(pipeline: VerityRAGPipeline, line: str) -> bool:
    """Run the session command ``line`` (it starts with ``:``); False when it ends the session."""
    name = line.split()[0].lower()
    if name in QUIT_COMMANDS:
        return False
    if name in {":help", ":h", ":?"}:
        print(HELP)
    elif name == ":stats":
        stats = pipeline.stats()
        print(f"  {stats['documents']} documents, {stats['chunks']} chunks")
    else:
        print(f"  unknown command {name}: :help lists the commands (a question does not start with ':')")
    return True


def ask(pipeline: VerityRAGPipeline, question: str) -> bool:
    """Print the answer or abstention; a question refused as input is reported, not raised."""
    try:
        print(show(pipeline.query(question)))
    except InvalidInputError as exc:
        print(f"  error: {exc}")
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verityrag", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA_DIR,
        help="the bundled corpus: corpus.jsonl and questions/ (default: data/built, built by `make data`)",
    )
    parser.add_argument("--store", type=Path, default=None, help="persist the index in this folder")
    parser.add_argument("question", nargs="*", help="ask these questions and exit")
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    try:
        pipeline = bundled_pipeline(args.data_dir, store_dir=args.store or IN_MEMORY)
    except VerityRAGError as exc:  # a missing corpus, a bad store or setting: say which, no traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stats = pipeline.stats()
    print(
        f"VerityRAG ready: {stats['documents']} documents, {stats['chunks']} chunks ({time.perf_counter() - t0:.1f} s)"
    )

    interactive = not args.question and sys.stdin.isatty()
    if args.question:
        questions = args.question
    elif interactive:
        questions = list(SAMPLES)
    else:
        questions = [line.strip() for line in sys.stdin if line.strip()] or list(SAMPLES)
    ok = True
    for q in questions:
        if q.startswith(":"):  # piped or given, a command is still not a question
            if not command(pipeline, q):
                return 0 if ok else 2
            continue
        print(f"\nQ: {q}")
        ok = ask(pipeline, q) and ok
    if not interactive:
        return 0 if ok else 2
    print("\nAsk a question (:help for the commands; an empty line or :quit stops).")
    while True:
        try:
            q = input("\nQ: ").strip()
        except (EOFError, KeyboardInterrupt):  # Ctrl-D or Ctrl-C ends the session, no traceback
            print()
            break
        if not q:
            break
        if q.startswith(":"):
            if not command(pipeline, q):
                break
            continue
        ok = ask(pipeline, q) and ok
    return 0 if ok else 2


if __name__ == "__main__":
    raise SystemExit(main())
