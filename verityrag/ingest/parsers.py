"""File parsers: PDF, HTML, Markdown, DOCX and plain text to a title and plain text.

``parse_file(filename, data, content_type)`` picks the format from the bytes first (a
PDF's ``%PDF-`` header, a DOCX's zip holding ``word/document.xml``), then the file name's
extension, then the content type, and returns a :class:`ParsedFile`. A file that cannot be
parsed (a claimed format it is not, an encrypted or scanned PDF, binary data, no text at
all) raises :class:`~verityrag.errors.InvalidInputError` naming the file and why.

Parsers (decision 0053): pypdf for PDF, python-docx for DOCX, the standard library's
``html.parser`` for HTML, markdown-it-py (CommonMark, tables) for Markdown, rendered to
HTML and read by the same HTML reader. Paragraphs, headings, list items and table rows end
in a line break; blocks are separated by a blank line.
"""

from __future__ import annotations

import io
import logging
import re
import struct
import zipfile
import zlib
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import PurePath
from typing import Any, Literal, get_args

from verityrag.errors import InvalidInputError

__all__ = ["FORMATS", "FileFormat", "ParsedFile", "detect_format", "parse_file"]

logger = logging.getLogger(__name__)

FileFormat = Literal["pdf", "html", "markdown", "docx", "text"]
FORMATS: tuple[FileFormat, ...] = get_args(FileFormat)

#: The most a DOCX may unpack to, its parts inflated and counted (never their declared sizes): a
#: zip bomb is refused. 64 MiB of XML is far more than the longest document's text (1M characters).
MAX_UNPACKED_BYTES = 64 * 1024 * 1024
#: The longest title taken from a file's content (a first line can be a paragraph).
MAX_TITLE_CHARS = 200

_EXTENSIONS: dict[str, FileFormat] = {
    ".pdf": "pdf",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdown": "markdown",
    ".docx": "docx",
    ".txt": "text",
    ".text": "text",
    ".rst": "text",
    ".csv": "text",
    ".log": "text",
}
_CONTENT_TYPES: dict[str, FileFormat] = {
    "application/pdf": "pdf",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "text/plain": "text",
}
_DOCX_PART = "word/document.xml"
# Style ids (not names) of paragraphs whose text may title a DOCX without a core title.
_DOCX_TITLE_STYLES = frozenset({"Title", "Heading1"})


@dataclass(frozen=True)
class ParsedFile:
    """A file's text and title. ``source`` is the file name as uploaded; ``format`` one of FORMATS."""

    text: str
    title: str
    source: str
    format: FileFormat

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise InvalidInputError("format", f"must be one of {', '.join(FORMATS)}, not {self.format!r}")


def _fail(filename: str, why: str) -> InvalidInputError:
    return InvalidInputError("file", f"{filename!r} {why}")


def _is_docx(data: bytes) -> bool:
    if not data.startswith(b"PK\x03\x04"):
        return False
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            return _DOCX_PART in z.namelist()
    except zipfile.BadZipFile:
        return False


def detect_format(filename: str, data: bytes, content_type: str | None = None) -> FileFormat:
    """The format of a file: from its bytes (PDF, DOCX), else its extension, else its content type,
    else ``html`` for text that opens as HTML and ``text`` for anything else."""
    if data.lstrip()[:5] == b"%PDF-":
        return "pdf"
    if _is_docx(data):
        return "docx"
    by_name = _EXTENSIONS.get(PurePath(filename).suffix.lower())
    if by_name is not None:
        return by_name
    media = (content_type or "").split(";")[0].strip().lower()
    if media in _CONTENT_TYPES:
        return _CONTENT_TYPES[media]
    head = data[:1024].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html")):
        return "html"
    return "text"


def parse_file(filename: str, data: bytes, content_type: str | None = None) -> ParsedFile:
    """Parse an uploaded file into its plain text and a title (the file's stem when it names none).

    Raises :class:`InvalidInputError` (field ``file``) naming the file and why it cannot be read.
    """
    name = filename or "upload"
    if not data:
        raise _fail(name, "is empty")
    fmt = detect_format(name, data, content_type)
    if fmt == "pdf":
        text, title = _parse_pdf(name, data)
    elif fmt == "docx":
        text, title = _parse_docx(name, data)
    elif fmt == "html":
        text, title = _read_html(_decode(name, data))
    elif fmt == "markdown":
        text, title = _parse_markdown(_decode(name, data))
    else:
        text, title = _normalise(_decode(name, data)), ""
    if not re.search(r"[^\W_]", text):
        raise _fail(name, f"has no text to index (read as {fmt})")
    title = _clean_title(title) or PurePath(name).stem or name
    return ParsedFile(text=text, title=title, source=name, format=fmt)


# ------------------------------------------------------------------ text


def _decode(filename: str, data: bytes) -> str:
    """UTF-8 (a BOM allowed), UTF-16 with a BOM, else Windows-1252 for bytes with no NUL."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise _fail(filename, f"is not valid UTF-16 ({exc.reason} at byte {exc.start})") from exc
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if b"\x00" in data:
            raise _fail(
                filename, "is binary, not text (supported: PDF, DOCX, HTML, Markdown, plain text)"
            ) from exc
        try:
            return data.decode("cp1252")
        except UnicodeDecodeError:
            raise _fail(
                filename, f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
            ) from exc


_SPACES = re.compile(r"[^\S\n]+")
_BLANK_LINES = re.compile(r"\n{3,}")


def _normalise(text: str) -> str:
    """Runs of spaces to one, lines trimmed, at most one blank line between blocks."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def _clean_title(title: str) -> str:
    title = " ".join(title.split())
    return title[: MAX_TITLE_CHARS - 1] + "…" if len(title) > MAX_TITLE_CHARS else title


# ------------------------------------------------------------------ HTML

# Elements that end a line of text; blocks get a blank line around them.
_BLOCKS = frozenset(
    "address article aside blockquote dd div dl dt figcaption figure footer form h1 h2 h3 h4 h5 h6 "
    "header hr li main nav ol p pre section table tbody thead tfoot ul caption details summary".split()
)
_LINES = frozenset({"br", "tr"})
_CELLS = frozenset({"td", "th"})
# Elements whose content is never text for a reader; <title> is kept apart as the title.
_HIDDEN = frozenset({"script", "style", "noscript", "template", "title"})


class _TextReader(HTMLParser):
    """Text of an HTML document with line breaks where blocks end; the <title> and first <h1> kept."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self.h1_parts: list[str] = []
        self._hidden: list[str] = []
        self._in_h1 = False
        self._h1_done = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HIDDEN:
            self._hidden.append(tag)
        elif tag in _BLOCKS:
            self.parts.append("\n\n")
            if tag == "h1" and not self._h1_done:
                self._in_h1 = True
        elif tag in _LINES:
            self.parts.append("\n")
        elif tag in _CELLS:
            self.parts.append(" ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _LINES or tag in _BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN:
            if tag in self._hidden:  # a stray end tag closes nothing
                while self._hidden.pop() != tag:
                    pass
        elif tag in _BLOCKS:
            self.parts.append("\n\n")
            if tag == "h1" and self._in_h1:
                self._in_h1, self._h1_done = False, True
        elif tag == "tr":
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._hidden:
            if self._hidden[-1] == "title":
                self.title_parts.append(data)
            return
        self.parts.append(data)
        if self._in_h1:
            self.h1_parts.append(data)


# Declarations and marked sections (``<!DOCTYPE ...>``, ``<![CDATA[...]]>``), comments kept.
_DECLARATIONS = re.compile(r"<!(?!--)[^>]*>?")


def _read_html(html: str) -> tuple[str, str]:
    # A "<" with no ">" after it anywhere is text: the standard parser retried each such tag from
    # every later position to the end, quadratic ("<a " x 10,000, 30 KB: 14.6 s of CPU).
    last_close = html.rfind(">")
    if html.find("<", last_close + 1) != -1:
        html = html[: last_close + 1] + html[last_close + 1 :].replace("<", "&lt;")
    reader = _TextReader()
    try:
        reader.feed(html)
        reader.close()
    except AssertionError:
        # The standard library's parser gives up on some malformed declarations ("unknown
        # status keyword 'x' in marked section", an unexpected '[' in a DOCTYPE): read again
        # without any declaration; they hold no text.
        reader = _TextReader()
        reader.feed(_DECLARATIONS.sub(" ", html))
        reader.close()
    title = "".join(reader.title_parts).strip() or "".join(reader.h1_parts).strip()
    return _normalise("".join(reader.parts)), title


# -------------------------------------------------------------- Markdown

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_FRONT_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.MULTILINE)


def _parse_markdown(source: str) -> tuple[str, str]:
    from markdown_it import MarkdownIt

    front_title = ""
    front = _FRONT_MATTER.match(source)
    if front is not None:  # YAML front matter: its title, and no text of it indexed
        found = _FRONT_TITLE.search(front.group(1))
        front_title = found.group(1).strip("\"'") if found else ""
        source = source[front.end() :]
    html = MarkdownIt("commonmark").enable("table").render(source)
    text, h1 = _read_html(html)
    return text, front_title or h1


# ------------------------------------------------------------------- PDF


def _parse_pdf(filename: str, data: bytes) -> tuple[str, str]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise _fail(filename, "is an encrypted PDF: save it without a password and upload it again")
        pages = [page.extract_text() or "" for page in reader.pages]
        info: Any = reader.metadata
        title = str(info.title or "") if info is not None else ""
    except InvalidInputError:
        raise
    except PdfReadError as exc:
        raise _fail(filename, f"is not a readable PDF ({exc})") from exc
    except Exception as exc:  # pypdf raises many kinds on a damaged file
        logger.info("PDF %r failed to parse", filename, exc_info=exc)
        raise _fail(filename, f"is not a readable PDF ({type(exc).__name__}: {exc})") from exc
    text = _normalise("\n\n".join(pages))
    if not text:
        raise _fail(
            filename,
            f"has no text layer ({len(pages)} page(s) of images, e.g. a scan): run OCR on it first",
        )
    return text, title


# ------------------------------------------------------------------ DOCX


_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # a zip member's local file header (30 bytes)
_INFLATE_CHUNK = 1 << 20


def _check_unpacked_size(filename: str, data: bytes) -> None:
    """Refuse a DOCX whose parts, inflated, come to more than MAX_UNPACKED_BYTES, or unpack to
    other sizes than they declare. Counted by inflating each part a megabyte at a time with zlib
    on its raw bytes: a 1.9 MB file declaring 4 KiB that inflates to 1.1 GiB took 7.7 s and 2 GB
    of memory before the parser gave up, when the declared sizes were what was checked."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            members = z.infolist()
    except zipfile.BadZipFile as exc:
        raise _fail(filename, f"is not a readable DOCX ({exc})") from exc
    total = 0
    for info in members:
        size = _inflated_size(data, info, MAX_UNPACKED_BYTES - total)
        if size is None:
            raise _fail(filename, f"unpacks to more than the {MAX_UNPACKED_BYTES:,} bytes allowed")
        if size < 0:
            raise _fail(filename, f"is not a readable DOCX (part {info.filename!r} cannot be unpacked)")
        if size != info.file_size:
            raise _fail(
                filename,
                f"is not a readable DOCX (part {info.filename!r} declares {info.file_size:,} bytes, unpacks to {size:,})",
            )
        total += size


def _inflated_size(data: bytes, info: zipfile.ZipInfo, limit: int) -> int | None:
    """The size of ``info``'s part inflated from its raw bytes, or None past ``limit``."""
    start = info.header_offset
    header = data[start : start + _LOCAL_HEADER.size]
    if len(header) < _LOCAL_HEADER.size:
        return 0 if info.compress_size == 0 else -1
    fields = _LOCAL_HEADER.unpack(header)
    name_length, extra_length = fields[-2], fields[-1]
    begin = start + _LOCAL_HEADER.size + name_length + extra_length
    raw = memoryview(data)[begin : begin + info.compress_size]
    if info.compress_type == zipfile.ZIP_STORED:
        return len(raw) if len(raw) <= limit else None
    if info.compress_type != zipfile.ZIP_DEFLATED:
        return -1  # not what a DOCX holds: refused as unreadable
    inflate = zlib.decompressobj(-zlib.MAX_WBITS)
    size = 0
    try:
        pending = bytes(raw)
        while pending:
            out = inflate.decompress(pending, _INFLATE_CHUNK)
            size += len(out)
            if size > limit:
                return None
            pending = inflate.unconsumed_tail
        size += len(inflate.flush())
    except zlib.error:
        return -1
    return size if size <= limit else None


def _parse_docx(filename: str, data: bytes) -> tuple[str, str]:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    _check_unpacked_size(filename, data)
    try:
        document = docx.Document(io.BytesIO(data))
        blocks: list[str] = []
        heading = ""
        for item in document.iter_inner_content():
            if isinstance(item, Paragraph):
                blocks.append(item.text)
                # The raw style id, not ``item.style``: resolving the style object scans every
                # style of the document per paragraph (2 s for 800 paragraphs, measured).
                if not heading and item._p.style in _DOCX_TITLE_STYLES and item.text.strip():
                    heading = item.text
            elif isinstance(item, Table):
                for row in item.rows:
                    blocks.append(" ".join(cell.text for cell in row.cells))
        title = document.core_properties.title or heading
    except Exception as exc:  # python-docx and lxml raise many kinds on a damaged file
        logger.info("DOCX %r failed to parse", filename, exc_info=exc)
        raise _fail(filename, f"is not a readable DOCX ({type(exc).__name__}: {exc})") from exc
    return _normalise("\n\n".join(blocks)), title
