"""An append-only byte store: in memory up to a limit, then in an unlinked temporary file.

What the index keeps for reading back a few items per query (chunk texts, float32 vectors for
exact rescoring) but never scans: past ``memory_limit`` bytes it moves to a file read with
``pread``, which the page cache holds, not the process. The file is unlinked when made, so
nothing is left behind when the process ends; the durable copy of everything is the document
store's. Appends never move what a reader already sees.
"""

from __future__ import annotations

import os
import tempfile
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path

#: Bytes kept in RAM before the arena moves to a temporary file.
MEMORY_LIMIT = 32 * 1024 * 1024


class ByteArena:
    """Append-only bytes addressed by (offset, length). ``spill_dir``: where the file goes
    (default: the system's temporary folder)."""

    def __init__(self, spill_dir: str | Path | None = None, memory_limit: int = MEMORY_LIMIT) -> None:
        self.spill_dir = spill_dir
        self.memory_limit = memory_limit
        self.size = 0
        self._mem: bytearray | None = bytearray()
        self._fd: int | None = None
        self._lock = threading.Lock()  # writers only; readers never wait

    @property
    def spilled(self) -> bool:
        return self._fd is not None

    @property
    def ram_bytes(self) -> int:
        mem = self._mem
        return 0 if mem is None else len(mem)

    def append(self, blob: bytes) -> int:
        """Store ``blob``; returns its offset."""
        with self._lock:
            first = self.size
            if self._fd is None and first + len(blob) > self.memory_limit:
                self._spill()
            if self._fd is None:
                assert self._mem is not None
                self._mem += blob
            elif blob:
                os.pwrite(self._fd, blob, first)
            self.size = first + len(blob)
        return first

    def append_many(self, blobs: Sequence[bytes]) -> tuple[list[int], list[int]]:
        """Store ``blobs`` one after the other; returns their offsets and lengths."""
        lengths = [len(b) for b in blobs]
        offset = self.append(b"".join(blobs))
        offsets = []
        for length in lengths:
            offsets.append(offset)
            offset += length
        return offsets, lengths

    def _spill(self) -> None:
        with tempfile.TemporaryFile(dir=self.spill_dir) as handle:  # unlinked: gone when closed
            fd = os.dup(handle.fileno())
        weakref.finalize(self, os.close, fd)
        assert self._mem is not None
        if self._mem:
            os.pwrite(fd, bytes(self._mem), 0)
        self._fd = fd  # readers switch to the file; the bytes in memory stay valid until dropped
        self._mem = None

    def read(self, offset: int, length: int) -> bytes:
        mem = self._mem
        if mem is not None and offset + length <= len(mem):
            return bytes(mem[offset : offset + length])
        fd = self._fd
        if fd is None:  # pragma: no cover - a reader only asks for what a snapshot published
            raise IndexError(f"bytes at {offset}+{length} are past the arena's end")
        return os.pread(fd, length, offset)
