"""A file as a document, the same way in from everywhere: ``POST /documents/files``, the app's
upload, ``VerityRAGPipeline.ingest_file``.

The file is parsed by its format (:func:`verityrag.ingest.parsers.parse_file`: PDF, DOCX, HTML,
Markdown, CSV, plain text); its document id is its name made safe (:func:`doc_id_for_file`), so
adding the same file again replaces it; its metadata holds ``source`` (the file name, shown with
citations), ``title`` and ``format``, beside whatever the caller adds (a ``collection``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import PurePath, PureWindowsPath
from typing import Any

from verityrag.ingest.parsers import ParsedFile, parse_file
from verityrag.types import Document

_DOC_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._:\-]+")


def doc_id_for_file(filename: str) -> str:
    """A valid doc id from a file's name: its last path part (``/`` or ``\\``), other
    characters than letters, digits and ``. _ : -`` as ``-``, starting with a letter or digit,
    at most 200 characters; ``file`` when nothing is left. A name with characters outside ASCII
    also carries 8 hex digits of its hash before the extension (``договор.txt`` gives
    ``01feb781.txt``, ``ümlaut.txt`` ``mlaut-f34494f7.txt``), so two such names stay two
    documents while adding the same name again still replaces its document."""
    name = PureWindowsPath(PurePath(filename).name).name
    suffix = PurePath(name).suffix if name not in (".", "..") else ""
    stem = name[: len(name) - len(suffix)] if suffix else name
    cleaned = re.sub(r"^[^A-Za-z0-9]+", "", _DOC_ID_UNSAFE.sub("-", stem))
    ext = _DOC_ID_UNSAFE.sub("-", suffix)[:10]
    if not name.isascii():
        # Replacing each non-ASCII run by "-" would map every Cyrillic or Chinese name alike.
        digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
        cleaned = f"{cleaned[:180]}-{digest}" if cleaned else digest
    whole = re.sub(r"^[^A-Za-z0-9]+", "", cleaned + ext)[:200]
    return whole or "file"


def document_from_file(
    filename: str,
    data: bytes,
    content_type: str | None = None,
    max_chars: int | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> tuple[Document, ParsedFile]:
    """The document a file becomes, and what its parse found. Raises
    :class:`~verityrag.errors.InvalidInputError` (field ``file``) naming a file that cannot be
    read, and why."""
    parsed = parse_file(filename, data, content_type, max_chars)
    meta = {**(metadata or {}), "source": parsed.source, "title": parsed.title, "format": parsed.format}
    return Document(doc_id_for_file(filename), parsed.title, parsed.text, meta), parsed
