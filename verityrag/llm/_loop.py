"""The event loop thread that runs the sync path of every HTTP provider in the process."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

_T = TypeVar("_T")


class LoopThread:
    """An event loop on a daemon thread, started on first use, that runs sync callers' coroutines.

    A forked child inherits the loop but not its thread; it starts its own on its first call.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pid = 0

    def run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        future = asyncio.run_coroutine_threadsafe(coro, self._running_loop())
        try:
            return future.result()
        except BaseException:
            future.cancel()  # the caller stopped waiting (KeyboardInterrupt): so does the request
            raise

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name=self._name, daemon=True)
                thread.start()
                self._loop, self._thread, self._pid = loop, thread, os.getpid()
            return self._loop

    def run_if_started(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` on the loop when this process started it; else there is nothing it could touch."""
        with self._lock:
            loop = self._loop if self._pid == os.getpid() else None
        if loop is None:
            coro.close()
            return
        asyncio.run_coroutine_threadsafe(coro, loop).result()


# The sync path's event loop, one per process for every provider (see HTTPCompleteFn).
LOOP = LoopThread("verityrag-llm")
