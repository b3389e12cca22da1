"""A narrated real-time + abstention demo in the terminal (in-process, no network).

The story: a pipeline over the bundled corpus *without* the Nikola Tesla documents
refuses a Tesla question (reason and confidence printed); the held-back documents
then stream in through ``LiveDocumentStream``, each searchable on arrival; the same
question is now answered with a citation; an out-of-domain question is still refused.

Exits 0 when the story holds, 1 when any step breaks it.

    python scripts/demo_streaming.py [--delay 0.02]
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

from verityrag import VerityRAGPipeline
from verityrag.ingest.stream import LiveDocumentStream
from verityrag.types import Document, QueryResult

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "data" / "corpus.jsonl"
HELD_BACK = "squad-nikola-tesla"
QUESTION = "Which company did Tesla work for in 1881?"
EXPECTED = "Budapest"
OUT_OF_DOMAIN = "What is the largest bone in the human body?"


def _say(text: str = "") -> None:
    print(text, flush=True)


def _show(result: QueryResult) -> None:
    if result.abstained:
        reason = result.abstain_reason.value if result.abstain_reason is not None else "?"
        _say(f"   -> ABSTAINED  reason={reason}  confidence={result.confidence:.2f}")
        return
    _say(f"   -> ANSWERED   confidence={result.confidence:.2f}")
    _say(f"      answer: {result.answer}")
    for cit in result.citations:
        _say(f"      cited:  {cit.doc_id} ({cit.title}) chars {cit.start}-{cit.end}")


def _load() -> tuple[list[Document], list[Document]]:
    with CORPUS.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    docs = [Document(r["doc_id"], r.get("title", ""), r["text"], r.get("metadata") or {}) for r in rows]
    base = [d for d in docs if not d.doc_id.startswith(HELD_BACK)]
    held = [d for d in docs if d.doc_id.startswith(HELD_BACK)]
    return base, held


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--delay", type=float, default=0.02, help="seconds between arriving documents")
    args = parser.parse_args(argv)
    failures: list[str] = []

    base, held = _load()
    _say("== VerityRAG real-time + abstention demo ==")
    _say(
        f"1. Building a pipeline over {len(base)} documents; the {len(held)} Nikola Tesla documents are held back."
    )
    pipeline = VerityRAGPipeline(data_dir=None)
    pipeline.ingest_documents(base, progress=False)

    _say(f"\n2. Asking before Tesla is known: {QUESTION!r}")
    before = pipeline.query(QUESTION)
    _show(before)
    if not before.abstained:
        failures.append("the Tesla question was answered before the Tesla documents arrived")
    else:
        _say("   The system has no evidence for this, so it refuses instead of guessing.")

    _say(f"\n3. Streaming the {len(held)} held-back documents in, one by one (each searchable on arrival):")
    lock = threading.Lock()
    count = [0]

    def on_ingested(doc: Document) -> None:
        with lock:
            count[0] += 1
            n = count[0]
        if n == 1 or n % 10 == 0 or n == len(held):
            _say(f"   [{n:3d}/{len(held)}] ingested {doc.doc_id}  (index: {pipeline.index.n_documents} docs)")

    stream = LiveDocumentStream(pipeline, on_ingested=on_ingested).start()
    started = time.perf_counter()
    for doc in held:
        stream.put(doc)
        if args.delay > 0:
            time.sleep(args.delay)
    stream.stop()
    stream.join(60)
    if stream.failures:
        failures.append(f"{len(stream.failures)} documents failed to ingest")
    _say(f"   {stream.ingested} documents streamed in {time.perf_counter() - started:.1f} s.")

    _say(f"\n4. Asking the same question again: {QUESTION!r}")
    after = pipeline.query(QUESTION)
    _show(after)
    if after.abstained:
        failures.append("the Tesla question is still refused after streaming")
    elif EXPECTED not in (after.answer or ""):
        failures.append(f"the answer does not mention {EXPECTED!r}")
    elif not any(c.doc_id.startswith(HELD_BACK) for c in after.citations):
        failures.append("the answer does not cite a streamed Tesla document")
    else:
        _say("   Answered from a document that arrived seconds ago, with its citation.")

    _say(f"\n5. Asking an out-of-domain question: {OUT_OF_DOMAIN!r}")
    ood = pipeline.query(OUT_OF_DOMAIN)
    _show(ood)
    if not ood.abstained:
        failures.append("the out-of-domain question was answered")
    else:
        _say("   Still refused: new documents do not make it answer what they do not support.")

    _say()
    if failures:
        for failure in failures:
            _say(f"STORY BROKEN: {failure}")
        return 1
    _say("STORY OK: refused -> streamed -> answered with citation; out-of-domain still refused.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
