"""The index image: the embedded index as it stood at one store generation, so that a restart
opens it instead of re-indexing every stored chunk.

    <data dir>/index_image/
        manifest.json   format, the store it is of (its id), the store generation and the last
                        document seq it holds, what the
                        index was built with (its settings, the analyzer's and the embedder's
                        fingerprints), each file's size and XXH3 checksum
        state.pkl       the index and what else the writer keeps (pickle protocol 5), without
                        its arrays, byte arenas and locks
        buffers.bin     the arrays' bytes, out of band, one after the other (64-byte aligned),
        buffers.json    and where each starts and ends: mapped back (a private, copy-on-write
                        mapping of the file), each array a view into it
        arena0.bin ...  the byte arenas (chunk texts, float32 vector rows), one file each

Written at a clean stop (``VerityRAGPipeline.close``) and in the background while running
(:mod:`verityrag.ingest.checkpoints`: from a frozen copy of the state, while writers go on) into
a new folder that replaces the old one by rename, so a crash while writing leaves the old image
or none (and a failed write, a full disk, leaves no half of one); read at the next start when it
is of this store (its id), was made with the same settings and its generation is the store's or
an earlier one (a crash since: the writer replays the store's writes after it). The store stays
the truth: an image that is damaged (a size or checksum that does not match, a manifest of
another shape, a file it cannot read), made otherwise, or of another store is passed over, and
the index is rebuilt from the store. An image ahead of its store is not: the store lost writes
(the writer stops the start). The state is checked before it is unpickled; the arrays' and
arenas' files, most of the image, are checked beside the unpickling and what the reader derives
from the state, on the other core, and the image is used once all have passed.
"""

from __future__ import annotations

import _thread
import contextlib
import io
import json
import logging
import mmap
import os
import pickle
import shutil
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import xxhash

from verityrag.index._arena import ByteArena
from verityrag.index._chunks import TextArena

logger = logging.getLogger(__name__)

# 2: a segment's postings packed (snapshot.PackedPostings)
FORMAT = "verityrag-index-image/2"
MANIFEST = "manifest.json"
STATE = "state.pkl"
BUFFERS = "buffers.bin"
BUFFER_INDEX = "buffers.json"
_ALIGN = 64
_ARENA_TYPES: dict[str, type[ByteArena]] = {"ByteArena": ByteArena, "TextArena": TextArena}
_LOCK_TYPES = (_thread.LockType, type(threading.RLock()))
_READ_BLOCK = 8 * 1024 * 1024


class _ImagePickler(pickle.Pickler):
    """Pickles the state, writing each arena to its own file and leaving locks out."""

    def __init__(
        self,
        file: io.BufferedWriter,
        folder: Path,
        buffers: list[pickle.PickleBuffer],
        arena_sizes: Mapping[int, int],
    ) -> None:
        super().__init__(file, protocol=5, buffer_callback=buffers.append)
        self.folder = folder
        self.arena_sizes = arena_sizes
        self.arenas: dict[int, tuple[Any, ...]] = {}

    def persistent_id(self, obj: Any) -> tuple[Any, ...] | None:
        if isinstance(obj, ByteArena):
            if id(obj) not in self.arenas:
                name = f"arena{len(self.arenas)}.bin"
                size = obj.write_to(self.folder / name, self.arena_sizes.get(id(obj)))
                spill = None if obj.spill_dir is None else str(obj.spill_dir)
                self.arenas[id(obj)] = ("arena", type(obj).__name__, name, size, spill, obj.memory_limit)
            return self.arenas[id(obj)]
        if isinstance(obj, _LOCK_TYPES):
            return ("lock", isinstance(obj, type(threading.RLock())))
        return None


class _ImageUnpickler(pickle.Unpickler):
    def __init__(self, file: io.BufferedReader, folder: Path, buffers: list[memoryview]) -> None:
        super().__init__(file, buffers=buffers)
        self.folder = folder
        self.arenas: dict[str, ByteArena] = {}

    def persistent_load(self, pid: tuple[Any, ...]) -> Any:
        if pid[0] == "lock":
            return threading.RLock() if pid[1] else threading.Lock()
        if pid[0] == "arena":
            _, kind, name, size, spill, memory_limit = pid
            if name not in self.arenas:
                self.arenas[name] = _ARENA_TYPES[kind].from_file(
                    self.folder / name, size, spill, memory_limit
                )
            return self.arenas[name]
        raise pickle.UnpicklingError(f"unknown persistent id {pid[0]!r}")


def _xxh3(path: Path) -> str:
    """The file's XXH3 (64 bits, hex), read through a map (no copy). A million chunks' image is
    3 GB: 0.2 s here, where CRC-32 took 0.9 s and was most of a restart once the state's
    unpickling was cut."""
    with path.open("rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return xxhash.xxh3_64_hexdigest(b"")
        with mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) as mapped, memoryview(mapped) as view:
            digest = xxhash.xxh3_64()
            for start in range(0, size, _READ_BLOCK):
                with view[start : start + _READ_BLOCK] as block:
                    digest.update(block)
            return digest.hexdigest()


def _crc32(path: Path) -> int:
    """The file's CRC-32, as the manifests of images written before XXH3 give it."""
    crc = 0
    with path.open("rb") as f:
        while block := f.read(_READ_BLOCK):
            crc = zlib.crc32(block, crc)
    return crc


def _damaged(folder: Path, files: dict[str, Any], names: Iterable[str]) -> str | None:
    """The first of ``names`` whose file is missing, or whose size or checksum is not the
    manifest's; None when they are whole."""
    return next((name for name in names if not _whole(folder / name, files[name])), None)


def _whole(path: Path, expected: dict[str, Any]) -> bool:
    if not path.is_file() or path.stat().st_size != expected["size"]:
        return False
    if "xxh3_64" in expected:
        return bool(_xxh3(path) == expected["xxh3_64"])
    return bool(_crc32(path) == expected["crc32"])


def _write_buffers(path: Path, buffers: list[pickle.PickleBuffer]) -> list[list[int]]:
    """The out-of-band buffers one after the other, each start aligned; their [start, end)."""
    spans = []
    with path.open("wb") as f:
        offset = 0
        for buffer in buffers:
            raw = buffer.raw()
            pad = -offset % _ALIGN
            f.write(b"\0" * pad)
            offset += pad
            f.write(raw)
            spans.append([offset, offset + raw.nbytes])
            offset += raw.nbytes
        f.flush()
        os.fsync(f.fileno())
    return spans


def _read_buffers(path: Path, spans: list[list[int]]) -> list[memoryview]:
    """``buffers.bin`` mapped into memory, private and writable (a page is copied only when the
    index writes to it, and the file never changes): a view of it per buffer. Opening the image
    copies nothing; the pages a query touches are read then (from the page cache, after the
    checksums have just read the file)."""
    size = path.stat().st_size
    if size == 0:
        return [memoryview(bytearray(0)) for _ in spans]
    with path.open("rb") as f:
        mapped = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY)
    view = memoryview(mapped)
    if any(end > size for _, end in spans):
        raise OSError(f"{path} ended early")
    return [view[start:end] for start, end in spans]


def _write_synced(path: Path, text: str) -> None:
    """A small file written and fsynced, as every file of an image is before the folder is."""
    with path.open("w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _manifest(folder: Path) -> dict[str, Any] | None:
    """The manifest of the image in ``folder`` when it is one of this format; else None."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        return None
    if not isinstance(manifest.get("generation"), int):
        return None
    return manifest


def image_generation(folder: Path) -> int | None:
    """The store generation of the image in ``folder`` (None: no readable manifest)."""
    manifest = _manifest(folder)
    return None if manifest is None else int(manifest["generation"])


class ImageOf(NamedTuple):
    """What an image's manifest says it is of, read before the image itself."""

    store_id: str | None  # None: an image made before images recorded their store
    generation: int
    documents: int | None


def image_of(folder: Path) -> ImageOf | None:
    """The store and generation the image in ``folder`` is of (None: no readable manifest)."""
    manifest = _manifest(folder)
    if manifest is None:
        return None
    store_id, documents = manifest.get("store_id"), manifest.get("documents")
    return ImageOf(
        store_id if isinstance(store_id, str) else None,
        int(manifest["generation"]),
        documents if isinstance(documents, int) else None,
    )


def _remove(path: Path) -> None:
    """``path`` gone, a folder or a file (the image folder replaced by a file once made every
    later clean stop fail)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


class OpenedImage(NamedTuple):
    state: Any
    generation: int  # the store generation it is of
    seq: int | None  # the seq of the last document it holds (None: not recorded, no replay)


def write_image(
    folder: Path,
    of: ImageOf,
    seq: int,
    made_with: dict[str, Any],
    state: Any,
    arena_sizes: Mapping[int, int] | None = None,
) -> int:
    """Write ``state`` as the image ``of`` a store generation (whose last document has ``seq``)
    in ``folder``, replacing what was there only once the new one is complete on disk; returns
    its size in bytes. A write that fails (a full disk) leaves no part of the new image behind.
    ``state`` is not changed while this runs: writers are held off, or it is a frozen copy
    (:meth:`~verityrag.index.live.LiveIndex.frozen_image_state`) whose arenas keep appending,
    and ``arena_sizes`` (by ``id``) says how much of each is the image's."""
    fresh = folder.with_name(f"{folder.name}.new")
    _remove(fresh)  # a write that a crash cut short
    try:
        return _write_image(folder, fresh, of, seq, made_with, state, arena_sizes or {})
    except BaseException:
        _remove(fresh)
        raise


def _write_image(
    folder: Path,
    fresh: Path,
    of: ImageOf,
    seq: int,
    made_with: dict[str, Any],
    state: Any,
    arena_sizes: Mapping[int, int],
) -> int:
    started = time.perf_counter()
    generation = of.generation
    fresh.mkdir(parents=True)
    buffers: list[pickle.PickleBuffer] = []
    with (fresh / STATE).open("wb") as state_file:
        _ImagePickler(state_file, fresh, buffers, arena_sizes).dump(state)
        state_file.flush()
        os.fsync(state_file.fileno())
    spans = _write_buffers(fresh / BUFFERS, buffers)
    _write_synced(fresh / BUFFER_INDEX, json.dumps(spans))
    files: dict[str, dict[str, Any]] = {
        p.name: {"size": p.stat().st_size, "xxh3_64": _xxh3(p)} for p in sorted(fresh.iterdir())
    }
    manifest = {
        "format": FORMAT,
        "store_id": of.store_id,
        "documents": of.documents,
        "generation": generation,
        "seq": seq,
        "made_with": made_with,
        "files": files,
    }
    _write_synced(fresh / MANIFEST, json.dumps(manifest, sort_keys=True))
    _fsync_dir(fresh)
    old = folder.with_name(f"{folder.name}.old")
    _remove(old)
    if folder.exists() or folder.is_symlink():
        folder.rename(old)
    fresh.rename(folder)
    _fsync_dir(folder.parent)
    _remove(old)
    size = sum(int(f["size"]) for f in files.values())
    logger.info(
        "index image of store generation %d written to %s (%.0f MB) in %.2fs",
        generation,
        folder,
        size / 1e6,
        time.perf_counter() - started,
    )
    return size


def read_image(
    folder: Path,
    newest: int,
    made_with: dict[str, Any],
    store_id: str,
    complete: Callable[[Any], Any] | None = None,
) -> OpenedImage | None:
    """The image in ``folder``, if it is of the store ``store_id``, of its generation ``newest``
    or an earlier one with its seq recorded, made with ``made_with``, and whole; else None (and
    the log says why). ``complete``: what the caller makes of the state once unpickled (what it
    derives rather than keeps), run while the big files' checksums are still being read."""
    if not (folder / MANIFEST).is_file():
        return None
    manifest = _manifest(folder)
    if manifest is None:
        logger.warning(
            "index image at %s has no manifest this version reads: rebuilding from the store", folder
        )
        return None
    generation, seq = manifest["generation"], manifest.get("seq")
    if manifest.get("store_id") != store_id:
        logger.warning("index image at %s is of another document store: rebuilding from this one", folder)
        return None
    if generation > newest or (generation < newest and not isinstance(seq, int)):
        logger.info(
            "index image at %s is of store generation %s, the store is at %d: rebuilding from the store",
            folder,
            generation,
            newest,
        )
        return None
    if manifest.get("made_with") != made_with:
        logger.info("index image at %s was made with other settings: rebuilding from the store", folder)
        return None
    try:
        files = manifest.get("files")
        if not isinstance(files, dict):
            raise ValueError("the manifest lists no files")
        # What is unpickled is checked first; the arrays' and arenas' files, most of the image,
        # beside the unpickling and what ``complete`` derives, on the other core. The image is
        # used only once every file has passed.
        first = [name for name in files if name in (STATE, BUFFER_INDEX)]
        rest = sorted(set(files) - set(first), key=lambda name: -int(files[name]["size"]))
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="image-check") as pool:
            checks = [pool.submit(_damaged, folder, files, rest[i::2]) for i in range(2)]
            damaged = _damaged(folder, files, first)
            state = None
            if damaged is None:
                buffers = _read_buffers(
                    folder / BUFFERS, json.loads((folder / BUFFER_INDEX).read_text(encoding="utf-8"))
                )
                with (folder / STATE).open("rb") as f:
                    state = _ImageUnpickler(f, folder, buffers).load()
                if complete is not None:
                    state = complete(state)
            damaged = damaged or next((d for c in checks if (d := c.result()) is not None), None)
        if damaged is not None:
            logger.warning(
                "index image file %s is missing or damaged: rebuilding from the store", folder / damaged
            )
            return None
        return OpenedImage(state, generation, seq)
    except (
        OSError,
        ValueError,
        pickle.UnpicklingError,
        EOFError,
        AttributeError,
        ImportError,
        KeyError,
        TypeError,
        IndexError,
    ) as exc:
        # A permission, a manifest of another shape: a rebuild from the store, never a start
        # that fails for good while the store is whole.
        logger.warning("index image at %s could not be read (%s): rebuilding from the store", folder, exc)
        return None
