"""Chunks by slot, stored by columns: what a ``LiveIndex`` keeps of each chunk besides its postings.

A million ``Chunk`` objects cost ~1 KB each in RAM (the text as a ``str``, the id, the object).
The table keeps per slot a few integers (document entry, position, offsets, where its text
is) and per document version its id and title; a :class:`~verityrag.types.Chunk` is built
when a reader asks for one. Chunk texts go to a :class:`TextArena`
(:class:`~verityrag.index._arena.ByteArena`: in memory up to a limit, then an unlinked
temporary file).

Everything is append-only, so a reader holding an older snapshot reads what it saw.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from verityrag.index._arena import MEMORY_LIMIT, ByteArena
from verityrag.index._growable import GrowableArray
from verityrag.types import Chunk

#: Chunk texts stay in RAM up to this many bytes, then move to a temporary file.
TEXT_MEMORY_LIMIT = MEMORY_LIMIT


class TextArena(ByteArena):
    """UTF-8 texts in a :class:`~verityrag.index._arena.ByteArena`."""

    def append_texts(self, texts: Sequence[str]) -> tuple[list[int], list[int]]:
        """Store ``texts``; returns their offsets and byte lengths."""
        return self.append_many([t.encode("utf-8") for t in texts])

    def read_text(self, offset: int, length: int) -> str:
        return self.read(offset, length).decode("utf-8")


class ChunkTable:
    """Slot -> :class:`Chunk`, stored by columns (see the module's docstring)."""

    def __init__(self, texts: TextArena | None = None) -> None:
        self.texts = texts if texts is not None else TextArena()
        self.entry = GrowableArray(np.int32)  # per slot: its document entry (doc id and title)
        self.position = GrowableArray(np.int32)
        self.start = GrowableArray(np.int64)
        self.end = GrowableArray(np.int64)
        self.text_at = GrowableArray(np.int64)
        self.text_len = GrowableArray(np.int32)
        self.doc_ids: list[str] = []  # per document entry (one per upsert of a document)
        self.titles: list[str] = []
        # Slots whose chunk id is not "<doc id>#<position>" (chunks made by hand).
        self.odd_ids: dict[int, str] = {}
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def append(self, chunks: Sequence[Chunk]) -> None:
        """Write ``chunks`` at the next slots (the caller publishes them later)."""
        first = self.size
        entries = []
        last: tuple[str, str] | None = None
        for c in chunks:
            if (c.doc_id, c.title) != last:
                last = (c.doc_id, c.title)
                self.doc_ids.append(c.doc_id)
                self.titles.append(c.title)
            entries.append(len(self.doc_ids) - 1)
        offsets, lengths = self.texts.append_texts([c.text for c in chunks])
        self.entry.extend(entries)
        self.position.extend([c.position for c in chunks])
        self.start.extend([c.start for c in chunks])
        self.end.extend([c.end for c in chunks])
        self.text_at.extend(offsets)
        self.text_len.extend(lengths)
        for i, c in enumerate(chunks):
            if c.chunk_id != f"{c.doc_id}#{c.position}":
                self.odd_ids[first + i] = c.chunk_id
        self.size = first + len(chunks)

    def doc_id(self, slot: int) -> str:
        return self.doc_ids[int(self.entry.buf[slot])]

    def chunk_id(self, slot: int) -> str:
        odd = self.odd_ids.get(slot)
        if odd is not None:
            return odd
        return f"{self.doc_id(slot)}#{int(self.position.buf[slot])}"

    def get(self, slot: int) -> Chunk:
        entry = int(self.entry.buf[slot])
        doc_id = self.doc_ids[entry]
        position = int(self.position.buf[slot])
        odd = self.odd_ids.get(slot)
        return Chunk(
            odd if odd is not None else f"{doc_id}#{position}",
            doc_id,
            self.titles[entry],
            self.texts.read_text(int(self.text_at.buf[slot]), int(self.text_len.buf[slot])),
            position,
            int(self.start.buf[slot]),
            int(self.end.buf[slot]),
        )

    def get_many(self, slots: Sequence[int]) -> list[Chunk]:
        """``get`` of each slot, with the columns read once (a query's hits)."""
        if not slots:
            return []
        index = np.asarray(slots, dtype=np.int64)
        entries = self.entry.buf[index].tolist()
        positions = self.position.buf[index].tolist()
        starts = self.start.buf[index].tolist()
        ends = self.end.buf[index].tolist()
        at = self.text_at.buf[index].tolist()
        lengths = self.text_len.buf[index].tolist()
        doc_ids, titles, odd, read = self.doc_ids, self.titles, self.odd_ids, self.texts.read_text
        out = []
        for i, slot in enumerate(slots):
            doc_id = doc_ids[entries[i]]
            chunk_id = odd.get(slot) if odd else None
            out.append(
                Chunk(
                    chunk_id or f"{doc_id}#{positions[i]}",
                    doc_id,
                    titles[entries[i]],
                    read(at[i], lengths[i]),
                    positions[i],
                    starts[i],
                    ends[i],
                )
            )
        return out

    def entries_of(self, doc_id: str) -> list[int]:
        """Document entries (versions) of ``doc_id``: a scan, for readers of an older snapshot."""
        return [i for i, d in enumerate(self.doc_ids) if d == doc_id]

    def compacted(self, live: np.ndarray) -> ChunkTable:
        """The table of the ``live`` slots (ascending), renumbered from 0; texts stay where they are."""
        table = ChunkTable(self.texts)
        old_entries = self.entry.buf[live]
        kept, new_entries = np.unique(old_entries, return_inverse=True)
        table.doc_ids = [self.doc_ids[i] for i in kept.tolist()]
        table.titles = [self.titles[i] for i in kept.tolist()]
        table.entry.extend(new_entries.astype(np.int32))
        for name in ("position", "start", "end", "text_at", "text_len"):
            getattr(table, name).extend(getattr(self, name).buf[live])
        if self.odd_ids:
            where = {int(s): i for i, s in enumerate(live.tolist())}
            table.odd_ids = {where[s]: cid for s, cid in self.odd_ids.items() if s in where}
        table.size = len(live)
        return table

    def frozen(self) -> ChunkTable:
        """The table as it stands, for an image written while writers go on (they hold off while
        this runs): its columns' first ``size`` rows and copies of its lists; the texts' arena is
        shared (its bytes past what the table points at are not the table's)."""
        table = ChunkTable.__new__(ChunkTable)
        table.texts = self.texts
        for name in ("entry", "position", "start", "end", "text_at", "text_len"):
            setattr(table, name, getattr(self, name).frozen())
        table.doc_ids, table.titles = self.doc_ids.copy(), self.titles.copy()
        table.odd_ids = self.odd_ids.copy()
        table.size = self.size
        return table

    def nbytes(self) -> dict[str, int]:
        """Bytes held in RAM by the table, by part (the arena's file is not RAM)."""
        columns = sum(
            getattr(self, n).buf.nbytes for n in ("entry", "position", "start", "end", "text_at", "text_len")
        )
        entries = sum(len(d) + 49 for d in self.doc_ids) + 8 * (len(self.doc_ids) + len(self.titles))
        return {
            "columns": columns,
            "document_entries": entries,
            "text_in_ram": self.texts.ram_bytes,
        }
