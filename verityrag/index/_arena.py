"""An append-only byte store: in memory up to a limit, then in an unlinked temporary file.

What the index keeps for reading back a few items per query (chunk texts, float32 vectors for
exact rescoring) but never scans: past ``memory_limit`` bytes it moves to a file, which the page
cache holds, not the process. The file is unlinked when made, so nothing is left behind when the
process ends; the durable copy of everything is the document store's. Appends never move what a
reader already sees.

Files are read through a read-only memory map (a query's ten chunk texts were ten ``pread``
calls, half of the time a query spent outside BM25 scoring at 100k chunks): the spill file is
grown ahead of its appends (sparse, doubling) and mapped whole, so a map is made again only when
it doubles; bulk copies (an image) still use ``pread``, so they do not map the whole file in.
"""

from __future__ import annotations

import mmap
import os
import tempfile
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Self

#: Bytes kept in RAM before the arena moves to a temporary file.
MEMORY_LIMIT = 32 * 1024 * 1024
#: Bytes copied at a time between an arena and an image file.
_COPY_BLOCK = 8 * 1024 * 1024
#: The spill file's first size (sparse); it doubles when appends reach its end.
_SPILL_FIRST_CAPACITY = 64 * 1024 * 1024


class ByteArena:
    """Append-only bytes addressed by (offset, length). ``spill_dir``: where the file goes
    (default: the system's temporary folder).

    An arena opened from an index image (:meth:`from_file`) reads its first bytes from the image's
    file, read-only; what is appended after them is kept as in any arena."""

    def __init__(self, spill_dir: str | Path | None = None, memory_limit: int = MEMORY_LIMIT) -> None:
        self.spill_dir = spill_dir
        self.memory_limit = memory_limit
        self.size = 0
        self._base = 0  # bytes read from the base file; the memory or the spill file holds the rest
        self._base_fd: int | None = None
        self._mem: bytearray | None = bytearray()
        self._fd: int | None = None
        self._capacity = 0  # the spill file's length (sparse past what is written)
        # Read-only maps of the base file and of the spill file (its whole capacity), replaced,
        # never changed, so a reader holding one reads what it saw.
        self._base_map: mmap.mmap | None = None
        self._map: mmap.mmap | None = None
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
            tail = first - self._base  # where it goes in the memory or the spill file
            if self._fd is None and tail + len(blob) > self.memory_limit:
                self._spill()
            if self._fd is None:
                assert self._mem is not None
                self._mem += blob
            elif blob:
                if tail + len(blob) > self._capacity:
                    self._grow(tail + len(blob))
                os.pwrite(self._fd, blob, tail)
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
        self._fd = fd
        self._grow(len(self._mem))
        self._mem = None  # readers switch to the file; the bytes they hold stay valid

    def _grow(self, needed: int) -> None:
        """The spill file made at least ``needed`` bytes long (doubling), and mapped again."""
        assert self._fd is not None
        capacity = max(needed, 2 * self._capacity, _SPILL_FIRST_CAPACITY)
        os.ftruncate(self._fd, capacity)  # sparse: no disk used past what is written
        self._map = mmap.mmap(self._fd, capacity, access=mmap.ACCESS_READ)
        self._capacity = capacity

    def read(self, offset: int, length: int, mapped: bool = True) -> bytes:
        """``length`` bytes from ``offset``. ``mapped=False`` reads the files by ``pread`` (bulk
        copies: an image), so that they are not mapped into the process whole."""
        if offset < self._base:  # from the base file, and what follows it when a read runs past it
            head = min(length, self._base - offset)
            base_map = self._base_map if mapped else None
            first = (
                base_map[offset : offset + head] if base_map is not None else self._pread_base(offset, head)
            )
            return first if head == length else first + self.read(self._base, length - head, mapped)
        tail = offset - self._base
        mem = self._mem
        if mem is not None and tail + length <= len(mem):
            return bytes(mem[tail : tail + length])
        spill_map = self._map if mapped else None
        if spill_map is not None and tail + length <= len(spill_map):
            return spill_map[tail : tail + length]
        return self._pread_spill(tail, length)

    def _pread_base(self, offset: int, length: int) -> bytes:
        assert self._base_fd is not None
        return os.pread(self._base_fd, length, offset)

    def _pread_spill(self, tail: int, length: int) -> bytes:
        fd = self._fd
        if fd is None:  # pragma: no cover - a reader only asks for what a snapshot published
            raise IndexError(f"bytes at {tail + self._base}+{length} are past the arena's end")
        return os.pread(fd, length, tail)

    # ------------------------------------------------------------------ images
    def write_to(self, path: Path, size: int | None = None) -> int:
        """Write the arena's first ``size`` bytes (default: all it holds now) to a new file at
        ``path`` (fsynced); returns how many. Appends that come meanwhile are not in it."""
        with self._lock:
            held = self.size
        if size is None:
            size = held
        elif not 0 <= size <= held:
            raise ValueError(f"the arena holds {held} bytes, not {size}")
        with path.open("wb") as out:
            for offset in range(0, size, _COPY_BLOCK):
                out.write(self.read(offset, min(_COPY_BLOCK, size - offset), mapped=False))
            out.flush()
            os.fsync(out.fileno())
        return size

    @classmethod
    def from_file(
        cls, path: Path, size: int, spill_dir: str | Path | None = None, memory_limit: int = MEMORY_LIMIT
    ) -> Self:
        """An arena whose first ``size`` bytes are read from ``path`` (opened read-only: appends
        go to memory, then to a spill file, as in any arena; a later image replacing ``path``
        leaves this arena reading the file it opened)."""
        fd = os.open(path, os.O_RDONLY)
        if os.fstat(fd).st_size < size:
            os.close(fd)
            raise OSError(f"{path} holds fewer than {size} bytes")
        arena = cls(spill_dir, memory_limit)
        weakref.finalize(arena, os.close, fd)
        arena._base_fd, arena._base, arena.size = fd, size, size
        if size:
            arena._base_map = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        return arena
