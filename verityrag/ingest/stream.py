"""``LiveDocumentStream``: a background thread that ingests documents as they arrive."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from verityrag.errors import InvalidInputError, StreamClosedError
from verityrag.types import Document

logger = logging.getLogger(__name__)

_STOP = object()
# How often a put() waiting for room checks that the stream is still open: the delay before a
# stop() or a dead thread is noticed, and the longest stop() waits for a put() to let go.
_POLL_S = 0.05


class _Ingests(Protocol):
    def ingest_document(
        self, doc_id: str, title: str, text: str, metadata: dict[str, object] | None = None
    ) -> object: ...


@dataclass(frozen=True, slots=True)
class IngestFailure:
    """What failed, on which document: ``stage`` is ``"ingest"`` (the document was not
    ingested), ``"source"`` (the source iterator raised, or yielded something that is not a
    ``Document``, which is skipped; ``doc_id`` is ``"<source>"``), or
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
    ``join()`` waits for that. After ``stop()``, or if the thread died, ``put()`` raises
    ``StreamClosedError`` rather than wait for room nobody will make.
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
        # Reentrant: a signal handler that calls stop() may interrupt this thread inside put().
        self._accepting = threading.RLock()
        self._died_of: BaseException | None = None  # what ended the thread, if not stop()

    def start(self) -> LiveDocumentStream:
        self._thread.start()
        if self._stopping.is_set():  # stop() came first, maybe with no room to queue _STOP
            self._queue_stop()
        return self

    def put(self, doc: Document, timeout: float | None = None) -> None:
        """Queue ``doc`` for ingestion. On a full queue, wait for room while the thread drains
        it, at most ``timeout`` seconds (``queue.Full`` then; ``None`` waits as long as it takes).

        Raises ``StreamClosedError`` after ``stop()``, or once the thread has ended, also
        while waiting: no thread would ever make room. Before ``start()`` a full queue waits,
        as another thread may start the stream.
        """
        if not isinstance(doc, Document):  # the thread would die on it, and nobody drain the queue
            raise InvalidInputError("doc", f"expected a Document, got {type(doc).__name__}")
        if timeout is not None and timeout < 0:
            raise InvalidInputError("timeout", f"must be None or >= 0 seconds, got {timeout}")
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            # Checked and queued under one lock that stop() also takes: a document is either
            # queued ahead of _STOP (and ingested) or refused, never queued behind it and lost.
            with self._accepting:
                self._check_open()
                wait = _POLL_S if deadline is None else min(_POLL_S, max(0.0, deadline - time.monotonic()))
                try:
                    self._queue.put(doc, timeout=wait)
                    return
                except queue.Full:
                    pass
            if deadline is not None and time.monotonic() >= deadline:
                raise queue.Full

    def _check_open(self) -> None:
        if self._stopping.is_set():
            raise StreamClosedError("the stream is stopping; it takes no more documents")
        if self._thread.ident is not None and not self._thread.is_alive():
            cause = self._died_of
            why = "" if cause is None else f" ({type(cause).__name__}: {cause})"
            raise StreamClosedError(
                f"the stream's thread has ended{why}; it takes no more documents, and those still"
                " queued will not be ingested"
            )

    def stop(self) -> None:
        """Ingest what is already queued (and what the source yields), then end the thread.
        A ``put()`` waiting for room then raises ``StreamClosedError``."""
        with self._accepting:  # held by a put() for at most _POLL_S
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
        try:
            self._serve()
        except BaseException as exc:  # e.g. SystemExit from the pipeline: put() then says why
            self._died_of = exc
            logger.error("stream: the ingest thread died: %r", exc)
            raise

    def _serve(self) -> None:
        if self.source is not None:
            try:
                for i, doc in enumerate(self.source):
                    if not isinstance(doc, Document):
                        # Recorded and skipped: reading doc.doc_id in the failure path raised out
                        # of _ingest, so one dict in the source ended it, losing what came after.
                        error = InvalidInputError(
                            f"source[{i}]", f"expected a Document, got {type(doc).__name__}"
                        )
                        logger.warning("stream: %s", error)
                        with self._lock:
                            self.failures.append(IngestFailure("<source>", error, "source"))
                        continue
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
