"""LiveDocumentStream: background ingestion while queries run; failures recorded; clean stop."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from verityrag import Document, InvalidInputError, LiveDocumentStream, Settings, VerityRAGPipeline
from verityrag.errors import StreamClosedError

pytestmark = pytest.mark.unit

# How long a wait for the stream may take before the test fails instead of hanging: generous, as
# each wait ends as soon as its condition holds (5 s leaves a busy machine little room).
WAIT_S = 60.0


def _doc(i: int, text: str | None = None) -> Document:
    return Document(
        f"stream-{i:03d}", "Stream", text or f"Streamed document about token qq{i:03d}z and rivers."
    )


def _wait_until(predicate: Callable[[], bool], timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting for the stream"
        time.sleep(0.002)


def _found(pipeline: VerityRAGPipeline, i: int) -> bool:
    hits = pipeline.index.search_lexical(f"qq{i:03d}z", 1)
    return bool(hits) and hits[0].chunk.doc_id == f"stream-{i:03d}"


@pytest.fixture
def pipeline() -> VerityRAGPipeline:
    # No reader: the stream's promise is that an acknowledged document is found, not answered.
    return VerityRAGPipeline(settings=Settings(max_document_chars=200, reader=False))


def test_put_while_querying_every_document_becomes_searchable(pipeline: VerityRAGPipeline) -> None:
    ingested: list[str] = []
    stream = LiveDocumentStream(pipeline, on_ingested=lambda d: ingested.append(d.doc_id)).start()
    checked = 0
    for i in range(30):
        stream.put(_doc(i))
        _wait_until(lambda n=i // 2: stream.ingested >= n)  # let the stream run behind the puts
        # Whatever the stream has acknowledged so far must already be answerable.
        if ingested:
            latest = ingested[-1]
            result = pipeline.query(f"Which document mentions token qq{latest[-3:]}z?")
            # Answering is the gate's call; being found is the index's promise.
            assert result.evidence[0].chunk.doc_id == latest
            checked += 1
    _wait_until(lambda: stream.ingested == 30)
    assert all(_found(pipeline, i) for i in range(30))
    assert sorted(ingested) == [f"stream-{i:03d}" for i in range(30)]
    assert pipeline.index.n_documents == 30
    stream.stop()
    assert stream.join(timeout=WAIT_S)
    assert checked > 0


def test_bad_document_is_recorded_and_stream_continues(pipeline: VerityRAGPipeline) -> None:
    errors: list[tuple[str, BaseException]] = []
    stream = LiveDocumentStream(pipeline, on_error=lambda d, e: errors.append((d.doc_id, e))).start()
    stream.put(_doc(0))
    stream.put(_doc(1, "Too long. " * 30))  # over max_document_chars=200
    stream.put(_doc(2, "Lone \ud800 surrogate in text."))
    stream.put(_doc(3))
    stream.stop()
    assert stream.join(timeout=WAIT_S)
    assert stream.ingested == 2
    assert [f.doc_id for f in stream.failures] == ["stream-001", "stream-002"]
    assert all(isinstance(f.error, InvalidInputError) for f in stream.failures)
    assert [f.error.field for f in stream.failures] == ["text", "text"]  # type: ignore[attr-defined]
    assert [doc_id for doc_id, _ in errors] == ["stream-001", "stream-002"]
    assert _found(pipeline, 0)
    assert _found(pipeline, 3)
    assert pipeline.index.doc_ids() == ["stream-000", "stream-003"]


def test_stop_ingests_what_was_queued_then_join_ends_thread(pipeline: VerityRAGPipeline) -> None:
    gate = threading.Event()
    slow = _SlowPipeline(pipeline, gate)
    stream = LiveDocumentStream(slow).start()
    for i in range(10):
        stream.put(_doc(i))
    stream.stop()
    assert stream.running
    assert not stream.join(timeout=0.05)  # still working on the queue
    gate.set()
    assert stream.join(timeout=WAIT_S)
    assert not stream.running
    assert stream.ingested == 10
    assert pipeline.index.n_documents == 10


def test_put_after_stop_raises() -> None:
    stream = LiveDocumentStream(VerityRAGPipeline()).start()
    stream.stop()
    with pytest.raises(RuntimeError, match="stream is stopping") as err:  # RuntimeError as before
        stream.put(_doc(0))
    assert isinstance(err.value, StreamClosedError)
    assert stream.join(timeout=WAIT_S)
    with pytest.raises(StreamClosedError, match="stream is stopping"):  # also once the thread ended
        stream.put(_doc(1), timeout=0)


def _outcome_within(call: Callable[[], object], timeout: float = WAIT_S) -> BaseException | None:
    """Run ``call`` on a thread; the exception it raised (None if it returned), failing (not
    hanging) if it blocks."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    caller = threading.Thread(target=run, daemon=True)
    caller.start()
    caller.join(timeout)
    assert not caller.is_alive(), "put() blocked"
    return outcome[0]


class _Dies:
    """A pipeline whose ingest ends the stream's thread: SystemExit is no ``Exception``."""

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.gate = gate

    def ingest_document(
        self, doc_id: str, title: str, text: str, metadata: dict[str, object] | None = None
    ) -> object:
        if self.gate is not None:
            assert self.gate.wait(timeout=WAIT_S)
        raise SystemExit(f"killed on {doc_id}")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # dies on purpose
def test_put_after_the_thread_died_raises_instead_of_blocking_on_the_full_queue() -> None:
    stream = LiveDocumentStream(_Dies(), maxsize=1).start()
    stream.put(_doc(0))
    assert stream.join(timeout=WAIT_S)  # the thread died on it
    for i in (1, 2):  # the second put used to find the queue full and block forever
        error = _outcome_within(lambda i=i: stream.put(_doc(i)))
        assert isinstance(error, StreamClosedError)
        assert "thread has ended (SystemExit: killed on stream-000)" in str(error)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # dies on purpose
def test_put_waiting_for_room_raises_when_the_thread_dies() -> None:
    gate = threading.Event()
    stream = LiveDocumentStream(_Dies(gate), maxsize=1).start()
    stream.put(_doc(0))
    _wait_until(lambda: stream._queue.empty())  # the thread holds doc 0 at the gate
    stream.put(_doc(1))  # the queue is full now
    threading.Timer(0.2, gate.set).start()
    error = _outcome_within(lambda: stream.put(_doc(2)))
    assert isinstance(error, StreamClosedError)
    assert not stream.running


def test_put_waiting_for_room_raises_when_stop_is_called(pipeline: VerityRAGPipeline) -> None:
    gate = threading.Event()
    stream = LiveDocumentStream(_SlowPipeline(pipeline, gate), maxsize=1).start()
    stream.put(_doc(0))
    _wait_until(lambda: stream._queue.empty())
    stream.put(_doc(1))
    threading.Timer(0.2, stream.stop).start()
    error = _outcome_within(lambda: stream.put(_doc(2)))
    assert isinstance(error, StreamClosedError)
    assert isinstance(_outcome_within(lambda: stream.put(_doc(3))), StreamClosedError)
    gate.set()
    assert stream.join(timeout=WAIT_S)
    assert stream.ingested == 2  # what was queued before stop(), and nothing after it
    assert pipeline.index.doc_ids() == ["stream-000", "stream-001"]


def test_put_on_a_full_queue_with_a_live_thread_waits_for_room_within_its_timeout(
    pipeline: VerityRAGPipeline,
) -> None:
    gate = threading.Event()
    stream = LiveDocumentStream(_SlowPipeline(pipeline, gate), maxsize=1).start()
    stream.put(_doc(0))
    _wait_until(lambda: stream._queue.empty())
    stream.put(_doc(1))
    started = time.monotonic()
    with pytest.raises(queue.Full):
        stream.put(_doc(2), timeout=0.2)
    assert time.monotonic() - started >= 0.2
    threading.Timer(0.2, gate.set).start()
    assert _outcome_within(lambda: stream.put(_doc(3))) is None  # waits as long as it takes
    _stop_within(stream)
    assert stream.ingested == 3
    assert stream.failures == []


def test_put_of_something_other_than_a_document_is_refused_and_the_stream_goes_on(
    pipeline: VerityRAGPipeline,
) -> None:
    stream = LiveDocumentStream(pipeline).start()
    with pytest.raises(InvalidInputError, match="doc: expected a Document, got tuple"):
        stream.put(("stream-000", "Stream", "A tuple is not a Document."))  # type: ignore[arg-type]
    stream.put(_doc(1))
    _stop_within(stream)
    assert stream.ingested == 1


def test_source_iterator_is_consumed_then_queue(pipeline: VerityRAGPipeline) -> None:
    stream = LiveDocumentStream(pipeline, source=(_doc(i) for i in range(12))).start()
    stream.put(_doc(99))
    _wait_until(lambda: stream.ingested == 13)
    stream.stop()
    assert stream.join(timeout=WAIT_S)
    assert stream.failures == []
    assert all(_found(pipeline, i) for i in [*range(12), 99])


def test_source_that_raises_is_recorded_and_queue_still_served(pipeline: VerityRAGPipeline) -> None:
    def source() -> Iterator[Document]:
        yield _doc(0)
        yield _doc(1)
        raise OSError("feed went away")

    stream = LiveDocumentStream(pipeline, source=source()).start()
    stream.put(_doc(2))
    stream.stop()
    assert stream.join(timeout=WAIT_S)
    assert stream.ingested == 3
    assert [(f.doc_id, str(f.error)) for f in stream.failures] == [("<source>", "feed went away")]


def test_source_yielding_a_non_document_records_it_and_ingests_the_rest(pipeline: VerityRAGPipeline) -> None:
    # Its failure was recorded by reading item.doc_id, which raised again (AttributeError) out
    # of the source loop: every document after a dict in the source was lost.
    source = [_doc(0), {"doc_id": "stream-x", "text": "A mapping."}, _doc(2)]
    stream = LiveDocumentStream(pipeline, source=iter(source)).start()  # type: ignore[arg-type]
    stream.stop()
    assert stream.join(timeout=WAIT_S)
    assert stream.ingested == 2
    assert _found(pipeline, 0)
    assert _found(pipeline, 2)
    (failure,) = stream.failures
    assert (failure.doc_id, failure.stage) == ("<source>", "source")
    assert isinstance(failure.error, InvalidInputError)
    assert failure.error.field == "source[1]"
    assert "expected a Document, got dict" in str(failure.error)


def _stop_within(stream: LiveDocumentStream, timeout: float = WAIT_S) -> None:
    """``stop()`` then ``join()``, failing (not hanging) if either blocks."""
    stopper = threading.Thread(target=stream.stop, daemon=True)
    stopper.start()
    stopper.join(timeout)
    assert not stopper.is_alive(), "stop() blocked"
    assert stream.join(timeout=timeout), "the stream thread did not end"


def test_on_ingested_that_raises_is_recorded_and_stream_continues(pipeline: VerityRAGPipeline) -> None:
    seen: list[str] = []

    def on_ingested(doc: Document) -> None:
        seen.append(doc.doc_id)
        if doc.doc_id == "stream-001":
            raise ValueError("callback bug")

    stream = LiveDocumentStream(pipeline, on_ingested=on_ingested, maxsize=2).start()
    for i in range(6):
        stream.put(_doc(i), timeout=WAIT_S)  # the bounded queue fills up if the thread has died
    _stop_within(stream)
    assert stream.ingested == 6
    assert seen == [f"stream-{i:03d}" for i in range(6)]
    assert [(f.doc_id, f.stage, str(f.error)) for f in stream.failures] == [
        ("stream-001", "on_ingested", "callback bug")
    ]
    assert all(_found(pipeline, i) for i in range(6))


def test_on_error_that_raises_is_recorded_and_stream_continues(pipeline: VerityRAGPipeline) -> None:
    def on_error(doc: Document, exc: BaseException) -> None:
        raise RuntimeError(f"error handler broke on {doc.doc_id}")

    stream = LiveDocumentStream(pipeline, on_error=on_error, maxsize=2).start()
    stream.put(_doc(0), timeout=WAIT_S)
    stream.put(_doc(1, "Too long. " * 30), timeout=WAIT_S)  # over max_document_chars=200
    for i in range(2, 6):
        stream.put(_doc(i), timeout=WAIT_S)
    _stop_within(stream)
    assert stream.ingested == 5
    assert [(f.doc_id, f.stage) for f in stream.failures] == [
        ("stream-001", "ingest"),
        ("stream-001", "on_error"),
    ]
    assert isinstance(stream.failures[0].error, InvalidInputError)
    assert str(stream.failures[1].error) == "error handler broke on stream-001"
    assert pipeline.index.doc_ids() == [f"stream-{i:03d}" for i in (0, 2, 3, 4, 5)]


def test_callback_that_raises_on_a_source_document_does_not_end_the_source(
    pipeline: VerityRAGPipeline,
) -> None:
    def on_ingested(doc: Document) -> None:
        if doc.doc_id == "stream-002":
            raise KeyError(doc.doc_id)

    stream = LiveDocumentStream(pipeline, source=(_doc(i) for i in range(6)), on_ingested=on_ingested)
    stream.start()
    _stop_within(stream)
    assert stream.ingested == 6
    assert [(f.doc_id, f.stage) for f in stream.failures] == [("stream-002", "on_ingested")]
    assert all(_found(pipeline, i) for i in range(6))


def test_stop_before_start_on_a_full_queue_does_not_block(pipeline: VerityRAGPipeline) -> None:
    stream = LiveDocumentStream(pipeline, maxsize=1)
    stream.put(_doc(0))
    stopper = threading.Thread(target=stream.stop, daemon=True)
    stopper.start()
    stopper.join(5)
    assert not stopper.is_alive(), "stop() blocked"
    stream.start()
    assert stream.join(timeout=WAIT_S)
    assert stream.ingested == 1
    assert _found(pipeline, 0)


class _SlowPipeline:
    """Delegates to a pipeline, but the first ingest waits for ``gate``."""

    def __init__(self, pipeline: VerityRAGPipeline, gate: threading.Event) -> None:
        self.pipeline = pipeline
        self.gate = gate

    def ingest_document(
        self, doc_id: str, title: str, text: str, metadata: dict[str, object] | None = None
    ) -> object:
        assert self.gate.wait(timeout=WAIT_S)
        return self.pipeline.ingest_document(doc_id, title, text, metadata)
