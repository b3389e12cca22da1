"""Checkpoints while running: the index image written in the background, so a crash replays a
bounded tail of writes.

A clean stop writes the index image beside the store (:meth:`DocumentWriter.checkpoint`), and a
start opens it and replays the writes the store holds since. A server that runs for days and then
dies (kill -9, a power cut) had written no image since its last clean stop, and its next start
replayed every write since. :class:`PeriodicCheckpoints` writes the image from a daemon thread
once ``every_writes`` writes have been committed since the last one, or ``every_seconds`` after
the first write since it, whichever comes first; a start after a crash then replays at most
about that many writes. Writers are held only while the index's state is taken; the image is
written from it while they go on (:meth:`DocumentWriter.checkpoint`; an hnsw graph holds them).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)

#: How often the thread looks at the store's write count, in seconds.
POLL_SECONDS = 1.0


class PeriodicCheckpoints:
    """Call ``checkpoint`` when ``generation`` (the store's committed writes) has moved by
    ``every_writes`` since the last checkpoint, or ``every_seconds`` have passed since it first
    moved. :meth:`tick` decides once (what the thread runs each ``poll_seconds``, while ``open_``
    says the store is open)."""

    def __init__(
        self,
        checkpoint: Callable[[], bool],
        generation: Callable[[], int],
        every_writes: int,
        every_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        poll_seconds: float = POLL_SECONDS,
        open_: Callable[[], bool] = lambda: True,
    ) -> None:
        self.checkpoint = checkpoint
        self.generation = generation
        self.every_writes = every_writes
        self.every_seconds = every_seconds
        self.clock = clock
        self.poll_seconds = poll_seconds
        self.open = open_  # whether the store is still open: the thread ends when it is not
        self.written_at = generation()  # the generation the image on disk is of (as far as known)
        self.pending_since: float | None = None  # when the first write since it was seen
        self.checkpoints = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> bool:
        """Checkpoint now if the writes since the last one call for it; whether it did."""
        now, generation = self.clock(), self.generation()
        behind = generation - self.written_at
        if behind <= 0:
            self.pending_since = None
            return False
        if self.pending_since is None:
            self.pending_since = now
        due = (self.every_writes and behind >= self.every_writes) or (
            self.every_seconds and now - self.pending_since >= self.every_seconds
        )
        if not due:
            return False
        started = time.perf_counter()
        if self.checkpoint():
            self.checkpoints += 1
            logger.info(
                "index image written in the background (%d writes since the last) in %.2fs",
                behind,
                time.perf_counter() - started,
            )
        # Written or not (another process wrote to the store: the next start rebuilds), the
        # writes are not asked about again until more come.
        self.written_at, self.pending_since = generation, None
        return True

    def start(self) -> None:
        """Run :meth:`tick` every ``poll_seconds`` in a daemon thread until :meth:`stop`."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="verityrag-checkpoints", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (a checkpoint under way finishes first)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            if not self.open():  # closed without stopping this first
                return
            try:
                self.tick()
            except Exception:  # a failed write (a full disk) must not end the checkpoints
                logger.exception("the background index image was not written")
