"""``LiveDocumentStream``: a background thread that ingests documents as they arrive."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from verityrag.types import Document

logger = logging.getLogger(__name__)

_STOP = object()


class _Ingests(Protocol):
    def ingest_document(
        self, doc_id: str, title: str, text: str, metadata: dict[str, object] | None = None
    ) -> object: ...


@dataclass(frozen=True, slots=True)
class IngestFailure:
    """What failed, on which document: ``stage`` is ``"ingest"`` (the document was not
    ingested), ``"source"`` (the source iterator raised; ``doc_id`` is ``"<source>"``), or
    the callback that raised, ``"on_ingested"`` (the document *was* ingested) or ``"on_error"``."""

    doc_id: str
    error: BaseException
    stage: str = "ingest"


class LiveDocumentStream:
    """Consumes documents from ``put()`` (a queue) and/or an iterator on a background thread.

    Each document is searchable once the thread has ingested it (``ingested``
    counts them). A failing document is recorded in ``failures`` (and passed to
    ``on_error``) and the stream goes on; so is a callback that raises, with its
    ``stage``. ``stop()`` finishes what was queued before it, then ends the thread;
    ``join()`` waits for that.
    """

    def __init__(
        self,
        pipeline: _Ingests,
        source: Iterable[Document] | None = None,
        on_ingested: Callable[[Document], None] | None = None,
        on_error: Callable[[Document, BaseException], None] | None = None,
        maxsize: int = 10_000,
    ) -> None:
        self.pipeline = pipeline
        self.source = source
        self.on_ingested = on_ingested
        self.on_error = on_error
        self._queue: queue.Queue[object] = queue.Queue(maxsize=maxsize)
        self._thread = threading.Thread(target=self._run, name="verityrag-ingest", daemon=True)
        self._lock = threading.Lock()
        self.ingested = 0
        self.failures: list[IngestFailure] = []
        self._stopping = threading.Event()
        self._stop_queued = False

    def start(self) -> LiveDocumentStream:
        self._thread.start()
        if self._stopping.is_set():  # stop() came first, maybe with no room to queue _STOP
            self._queue_stop()
        return self

    def put(self, doc: Document, timeout: float | None = None) -> None:
        if self._stopping.is_set():
            raise RuntimeError("the stream is stopping; it takes no more documents")
        self._queue.put(doc, timeout=timeout)

    def stop(self) -> None:
        """Ingest what is already queued (and what the source yields), then end the thread."""
        self._stopping.set()
        self._queue_stop()

    def _queue_stop(self) -> None:
        """Queue ``_STOP`` behind the documents, waiting for room only while the thread drains
        the queue: a bounded queue with no thread (not started, or ended) would block forever.
        Not queued then, ``start()`` queues it."""
        while not self._stop_queued:
            try:
                self._queue.put(_STOP, timeout=0.05)
            except queue.Full:
                if not self._thread.is_alive():
                    return
            else:
                self._stop_queued = True

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread; True if it has ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _ingest(self, doc: Document) -> None:
        try:
            self.pipeline.ingest_document(doc.doc_id, doc.title, doc.text, doc.metadata)
        except Exception as exc:  # one bad document must not end the stream
            logger.warning("stream: document %r failed: %s", doc.doc_id, exc)
            with self._lock:
                self.failures.append(IngestFailure(doc.doc_id, exc))
            if self.on_error is not None:
                self._call_back("on_error", doc, self.on_error, doc, exc)
            return
        with self._lock:
            self.ingested += 1
        if self.on_ingested is not None:
            self._call_back("on_ingested", doc, self.on_ingested, doc)

    def _call_back(self, stage: str, doc: Document, callback: Callable[..., None], *args: object) -> None:
        """Run a user callback; one that raises is recorded and logged, and the stream goes on."""
        try:
            callback(*args)
        except Exception as exc:  # a bug in the caller's callback must not end the stream
            logger.error(
                "stream: %s callback failed on document %r: %s", stage, doc.doc_id, exc, exc_info=exc
            )
            with self._lock:
                self.failures.append(IngestFailure(doc.doc_id, exc, stage))

    def _run(self) -> None:
        if self.source is not None:
            try:
                for doc in self.source:
                    self._ingest(doc)
            except Exception as exc:  # the source itself failed
                logger.error("stream: source failed: %s", exc)
                with self._lock:
                    self.failures.append(IngestFailure("<source>", exc, "source"))
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            assert isinstance(item, Document)
            self._ingest(item)
