"""The real-time + abstention story, told as events so a terminal or a web page can narrate it.

A pipeline over the bundled corpus without the Nikola Tesla documents refuses a Tesla
question; the held-back documents stream in through ``LiveDocumentStream``, each
searchable on arrival; the same question is answered with a citation; an out-of-domain
question is still refused. ``StoryOutcome.failures`` lists any step that broke the story.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from verityrag.ingest.stream import LiveDocumentStream
from verityrag.pipeline import IN_MEMORY, VerityRAGPipeline
from verityrag.serve.bundled import bundled_documents
from verityrag.serve.bundled_corpus import DEFAULT_DATA_DIR
from verityrag.types import Document, QueryResult

HELD_BACK = "squad-nikola-tesla"
QUESTION = "Who did Tesla work for in New York in 1884?"
EXPECTED = "Edison"
OUT_OF_DOMAIN = "What is the largest bone in the human body?"


@dataclass(frozen=True, slots=True)
class StoryEvent:
    """``kind``: setup | ask | result | ingested | streamed | done. ``step`` numbers the narration."""

    kind: str
    step: int
    text: str
    result: QueryResult | None = None
    done: int = 0
    total: int = 0


@dataclass
class StoryOutcome:
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def _check_before(result: QueryResult, outcome: StoryOutcome) -> str:
    if not result.abstained:
        outcome.failures.append("the Tesla question was answered before the Tesla documents arrived")
        return "Answered, which breaks the story."
    return "The system has no evidence for this, so it refuses instead of guessing."


def _check_after(result: QueryResult, outcome: StoryOutcome) -> str:
    if result.abstained:
        outcome.failures.append("the Tesla question is still refused after streaming")
    elif EXPECTED not in (result.answer or ""):
        outcome.failures.append(f"the answer does not mention {EXPECTED!r}")
    elif not any(c.doc_id.startswith(HELD_BACK) for c in result.citations):
        outcome.failures.append("the answer does not cite a streamed Tesla document")
    else:
        return "Answered from a document that arrived seconds ago, with its citation."
    return outcome.failures[-1]


def _check_ood(result: QueryResult, outcome: StoryOutcome) -> str:
    if not result.abstained:
        outcome.failures.append("the out-of-domain question was answered")
        return "Answered, which breaks the story."
    return "Still refused: new documents do not make it answer what they do not support."


def run_streaming_story(
    outcome: StoryOutcome,
    *,
    delay: float = 0.02,
    data_dir: Path = DEFAULT_DATA_DIR,
    pipeline: VerityRAGPipeline | None = None,
) -> Iterator[StoryEvent]:
    """Tell the story, yielding events as they happen; failures accumulate in ``outcome``.

    ``pipeline`` must be empty; by default a fresh in-memory one (shipped calibration).
    """
    docs = bundled_documents(data_dir)
    base = [d for d in docs if not d.doc_id.startswith(HELD_BACK)]
    held = [d for d in docs if d.doc_id.startswith(HELD_BACK)]
    yield StoryEvent(
        "setup",
        1,
        f"Building a pipeline over {len(base)} documents; the {len(held)} Nikola Tesla documents are held back.",
    )
    pipeline = pipeline if pipeline is not None else VerityRAGPipeline(data_dir=IN_MEMORY)
    pipeline.ingest_documents(base, progress=False)

    yield StoryEvent("ask", 2, f"Asking before Tesla is known: {QUESTION!r}")
    before = pipeline.query(QUESTION)
    yield StoryEvent("result", 2, _check_before(before, outcome), result=before)

    yield StoryEvent(
        "ask",
        3,
        f"Streaming the {len(held)} held-back documents in, one by one (each searchable on arrival):",
    )
    # Index size read when each document lands, not when the event is shown.
    arrived: queue.Queue[tuple[Document, int]] = queue.Queue()
    index = pipeline.index
    stream = LiveDocumentStream(pipeline, on_ingested=lambda d: arrived.put((d, index.n_documents))).start()
    started = time.perf_counter()
    n = 0

    def drain() -> Iterator[StoryEvent]:
        nonlocal n
        while True:
            try:
                doc, n_docs = arrived.get_nowait()
            except queue.Empty:
                return
            n += 1
            text = f"ingested {doc.doc_id}  (index: {n_docs} docs)"
            yield StoryEvent("ingested", 3, text, done=n, total=len(held))

    for doc in held:
        stream.put(doc)
        if delay > 0:
            time.sleep(delay)
        yield from drain()
    stream.stop()
    stream.join(60)
    yield from drain()
    if stream.failures:
        broken = sorted({f"{f.doc_id} ({f.stage})" for f in stream.failures})
        outcome.failures.append(f"{len(stream.failures)} stream failures: {', '.join(broken)}")
    elapsed = time.perf_counter() - started
    yield StoryEvent("streamed", 3, f"{stream.ingested} documents streamed in {elapsed:.1f} s.")

    yield StoryEvent("ask", 4, f"Asking the same question again: {QUESTION!r}")
    after = pipeline.query(QUESTION)
    yield StoryEvent("result", 4, _check_after(after, outcome), result=after)

    yield StoryEvent("ask", 5, f"Asking an out-of-domain question: {OUT_OF_DOMAIN!r}")
    ood = pipeline.query(OUT_OF_DOMAIN)
    yield StoryEvent("result", 5, _check_ood(ood, outcome), result=ood)
    summary = (
        "STORY OK: refused -> streamed -> answered with citation; out-of-domain still refused."
        if outcome.ok
        else "; ".join(f"STORY BROKEN: {f}" for f in outcome.failures)
    )
    yield StoryEvent("done", 6, summary)
