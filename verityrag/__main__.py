"""``python -m verityrag`` (``make ask``): questions in the terminal, to the running API or the bundled corpus.

When the API that ``make run`` starts answers (``--api-url``, default http://127.0.0.1:8000),
the questions go to it: its index, with every document added in the app or through the API.
Otherwise (or with ``--local``) it says so and builds an index of its own in memory: it loads
data/built/corpus.jsonl (built by ``make data``) and calibrates on the calibration questions. Questions given as
arguments are answered, then it exits. Otherwise questions piped in are answered one per line;
in a terminal it answers a few sample questions (including ones it must refuse), then reads
questions until EOF, an empty line or ``:quit``; a line starting with ``:`` is a command
(``:help`` lists them), never a question. With nothing piped in, it answers the samples.
A question the pipeline refuses as input (empty, too long) is reported and the session goes on;
the exit status is 2 when any was.
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import time
from pathlib import Path

from verityrag.config import Settings
from verityrag.errors import InvalidInputError, VerityRAGError
from verityrag.index.collections import DEMO_COLLECTION, only_demo
from verityrag.pipeline import IN_MEMORY
from verityrag.serve.api_client import API_KEY_ENV, running_api
from verityrag.serve.bundled import bundled_pipeline
from verityrag.serve.bundled_corpus import DEFAULT_DATA_DIR
from verityrag.types import QueryResult
from verityrag.ui.answer_source import ApiBackend, Backend, LocalBackend

#: Where ``make run`` serves the API unless told otherwise.
DEFAULT_API_URL = "http://127.0.0.1:8000"

SAMPLES = (
    "What network broadcast Super Bowl 50 in the United States?",
    "What is the largest bone in the human body?",
    "Who did Tesla work for in New York in 1884?",
)


def show(result: QueryResult) -> str:
    ms = result.latency_ms
    if result.abstained:
        reason = result.abstain_reason.value if result.abstain_reason else "?"
        why = f"\n  why: {result.explanation}" if result.explanation else ""
        return (
            f"  ABSTAIN ({reason}): {result.headline}; confidence {result.confidence:.2f}; {ms:.1f} ms{why}"
        )
    cites = ", ".join(dict.fromkeys(f"{c.title} [{c.chunk_id}]" for c in result.citations))
    # The short answer first (a yes/no question's "Yes" is in no quoted sentence), then the quote.
    short = f"{result.short_answer.text}: " if result.short_answer is not None else ""
    return (
        f"  ANSWER: {short}{result.answer}\n  {result.headline}; grounding "
        f"{result.grounding.overall_score:.2f}; cites {cites}; {ms:.1f} ms"
    )


QUIT_COMMANDS = frozenset({":quit", ":q", ":exit"})
#: Words that end an interactive session typed without the colon (no one asks the documents "quit").
QUIT_WORDS = frozenset({"quit", "exit"})
HELP = """Type a question and press Enter: the answer comes with the sentence it is quoted from, or a refusal
with its reason. Commands:
  :help     this list
  :stats    how many documents and chunks are indexed
  :quit     end the session (also quit, exit, :q, :exit, an empty line, Ctrl-D or Ctrl-C)"""


def command(pipeline: Backend, line: str) -> bool:
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


def demo_in_scope(pipeline: Backend) -> bool:
    """Whether questions ask the bundled demo articles: the index holds no documents of the
    user's own (then the sample questions are about what is there)."""
    try:
        return only_demo(pipeline.collections())
    except VerityRAGError:  # an API from before collections
        return True


def ask(pipeline: Backend, question: str) -> bool:
    """Print the answer or abstention; a question refused as input is reported, not raised."""
    settings = pipeline.settings
    try:
        print(show(pipeline.query(question, settings.top_k, settings.strictness)))
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
    parser.add_argument(
        "--store", type=Path, default=None, help="with an index of its own: persist it in this folder"
    )
    parser.add_argument(
        "--api-url",
        default=None,
        help=f"ask the API here (default: {DEFAULT_API_URL} when it answers, else an index of its own)",
    )
    parser.add_argument("--local", action="store_true", help="never ask an API: an index of its own")
    parser.add_argument("question", nargs="*", help="ask these questions and exit")
    args = parser.parse_args(argv)
    if args.local and args.api_url:
        parser.error("--local and --api-url: give one of them")

    t0 = time.perf_counter()
    api_url = None if args.local else running_api(args.api_url or DEFAULT_API_URL)
    if args.api_url and api_url is None:
        print(f"error: no VerityRAG API answers at {args.api_url} (is `make run` running?)", file=sys.stderr)
        return 2
    try:
        if api_url is not None:
            pipeline: Backend = ApiBackend(
                api_url, os.environ.get(API_KEY_ENV) or None, settings=Settings.from_env()
            )
            where = f"the API at {api_url} (the index make run serves)"
        else:
            local = bundled_pipeline(
                args.data_dir,
                store_dir=args.store or IN_MEMORY,
                collection=DEMO_COLLECTION,
                settings=Settings.from_env(),
            )
            atexit.register(local.close)  # a clean stop writes the index image beside the store
            pipeline = LocalBackend(local)
            where = (
                "an index of its own (the bundled corpus, "
                + (f"kept in {args.store}" if args.store else "in memory")
                + "; documents added in the app are not in it: start `make run` first to ask those)"
            )
        stats = pipeline.stats()
    except VerityRAGError as exc:  # a missing corpus, a bad store or setting: say which, no traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(
        f"VerityRAG ready: {stats['documents']} documents, {stats['chunks']} chunks "
        f"({time.perf_counter() - t0:.1f} s); asking {where}"
    )

    interactive = not args.question and sys.stdin.isatty()
    # The sample questions are about the bundled articles: asked only when those are what is asked.
    samples = list(SAMPLES) if demo_in_scope(pipeline) else []
    if args.question:
        questions = args.question
    elif interactive:
        questions = samples
    else:
        questions = [line.strip() for line in sys.stdin if line.strip()] or samples
    ok = True
    for q in questions:
        if q.lower() in QUIT_WORDS:  # piped or given, "quit" ends the session as at the prompt
            return 0 if ok else 2
        if q.startswith(":"):  # piped or given, a command is still not a question
            if not command(pipeline, q):
                return 0 if ok else 2
            continue
        print(f"\nQ: {q}")
        ok = ask(pipeline, q) and ok
    if not interactive:
        return 0 if ok else 2
    print("\nAsk a question (:help for the commands; an empty line, quit or Ctrl-D stops).")
    while True:
        try:
            q = input("\nQ: ").strip()
        except (EOFError, KeyboardInterrupt):  # Ctrl-D or Ctrl-C ends the session, no traceback
            print()
            break
        if not q or q.lower() in QUIT_WORDS:
            break
        if q.startswith(":"):
            if not command(pipeline, q):
                break
            continue
        ok = ask(pipeline, q) and ok
    return 0 if ok else 2


if __name__ == "__main__":
    raise SystemExit(main())
