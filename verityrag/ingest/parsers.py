"""File parsers: PDF, HTML, Markdown, DOCX and plain text to a title and plain text.

``parse_file(filename, data, content_type)`` picks the format from the bytes first (a
PDF's ``%PDF-`` header, a DOCX's zip holding ``word/document.xml``), then the file name's
extension, then the content type, and returns a :class:`ParsedFile`. A file that cannot be
parsed (a claimed format it is not, an encrypted or scanned PDF, binary data, no text at
all) raises :class:`~verityrag.errors.InvalidInputError` naming the file and why.

Parsers (decision 0053): pypdf for PDF, lxml for DOCX (``word/document.xml`` streamed) and
HTML (libxml2's HTML parser, as events), markdown-it-py (CommonMark, tables) for Markdown,
rendered to HTML and read by the same HTML reader. Paragraphs, headings, list items and table
rows end in a line break; blocks are separated by a blank line. Given ``max_chars``, a file is
refused the moment its text is over it.
"""

from __future__ import annotations

import contextlib
import csv
import io
import logging
import re
import struct
import time
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Literal, get_args

from verityrag.errors import InvalidInputError

__all__ = ["FORMATS", "FileFormat", "ParsedFile", "detect_format", "parse_file"]

logger = logging.getLogger(__name__)

FileFormat = Literal["pdf", "html", "markdown", "docx", "csv", "text"]
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
    ".csv": "csv",
    ".tsv": "csv",
    ".log": "text",
}
_CONTENT_TYPES: dict[str, FileFormat] = {
    "application/pdf": "pdf",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "text/csv": "csv",
    "text/tab-separated-values": "csv",
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


def parse_file(
    filename: str, data: bytes, content_type: str | None = None, max_chars: int | None = None
) -> ParsedFile:
    """Parse an uploaded file into its plain text and a title (the file's stem when it names none).

    ``max_chars`` (``Settings.max_document_chars``): a file whose text outgrows it is refused as
    soon as the parse sees so, not after reading all of it (a 30 MB one-line HTML file took
    seconds and half a gigabyte to be refused by the document limit afterwards).

    Raises :class:`InvalidInputError` (field ``file``) naming the file and why it cannot be read.
    """
    name = filename or "upload"
    if not data:
        raise _fail(name, "is empty")
    fmt = detect_format(name, data, content_type)
    budget = _TextBudget(name, max_chars)
    if fmt == "pdf":
        text, title = _parse_pdf(name, data, budget)
    elif fmt == "docx":
        text, title = _parse_docx(name, data, budget)
    elif fmt == "html":
        text, title = _read_html(_decode(name, data), budget)
    elif fmt == "markdown":
        text, title = _parse_markdown(_decode(name, data), budget)
    elif fmt == "csv":
        decoded = _decode(name, data)
        budget.take(decoded)
        budget.finish()
        text, title = _parse_csv(decoded, max_chars), ""
    else:
        decoded = _decode(name, data)
        budget.take(decoded)  # before normalising: its regular expressions hold a piece per word
        budget.finish()
        text, title = _normalise(decoded), ""
    budget.finish()
    if not re.search(r"[^\W_]", text):
        raise _fail(name, f"has no text to index (read as {fmt})")
    title = _clean_title(title) or PurePath(name).stem or name
    return ParsedFile(text=text, title=title, source=name, format=fmt)


# ------------------------------------------------------------------ CSV


def _parse_csv(text: str, max_chars: int | None) -> str:
    """A CSV (or TSV) as a table: its header line, then each row on its own line, blank lines
    between, so that a row is a sentence and a chunk never more than a few rows. Each cell is
    named by its column ("Loaf: White bloomer; Size: 800g; Price: £3.10") while the text stays
    within ``max_chars``; a table that naming would take past it keeps its cells bare ("White
    bloomer; 800g; £3.10") after the header line, and one that even this would take past it its
    own lines. Quoted cells may hold commas and line breaks."""
    sample = text[:8192]
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel_tab if sample.count("\t") > sample.count(",") else csv.excel
    try:
        rows = [[" ".join(cell.split()) for cell in row] for row in csv.reader(io.StringIO(text), dialect)]
    except csv.Error:  # a quote never closed, a NUL: read it as plain lines
        return _normalise(text)
    rows = [row for row in rows if any(row)]
    if not rows:
        return ""
    header, body = rows[0], rows[1:]
    head = "; ".join(cell for cell in header if cell)
    for cells_of in (lambda row: table_row_text(row, header), lambda row: "; ".join(c for c in row if c)):
        table = "\n\n".join(line for line in [head, *map(cells_of, body)] if line)
        if max_chars is None or len(table) <= max_chars:
            return table
    return _normalise(text)  # a file at the limit: its own lines, which the chunker still bounds


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
                filename, "is binary, not text (supported: PDF, DOCX, HTML, Markdown, CSV, plain text)"
            ) from exc
        try:
            return data.decode("cp1252")
        except UnicodeDecodeError:
            raise _fail(
                filename, f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
            ) from exc


_SPACES = re.compile(r"[^\S\n]+")
_BLANK_LINES = re.compile(r"\n{3,}")
# A dot leader between an item and its value ("Sourdough ........ £3.80").
_LEADER = re.compile(r"[^\S\n]*(?:\.{4,}|\u2026{2,})[^\S\n]*(?=\S)")


def _normalise(text: str) -> str:
    """Runs of spaces to one, lines trimmed, at most one blank line between blocks; a dot leader
    becomes ": " ("Sourdough: £3.80")."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = _LEADER.sub(": ", text)
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def _clean_title(title: str) -> str:
    title = " ".join(title.split())
    return title[: MAX_TITLE_CHARS - 1] + "…" if len(title) > MAX_TITLE_CHARS else title


_WHITESPACE_RUNS = re.compile(r"\s+")
#: Characters of text counted at a time.
_COUNT_CHARS = 1 << 16


class _TextBudget:
    """The characters a parse may yield before its file is refused as more than one document.

    Counted without whitespace, which normalising may remove, so a file refused here would have
    been refused whole by the document limit; in batches of :data:`_COUNT_CHARS` (a DOCX of a
    million one-letter paragraphs is a million pieces), the last batch left to that limit.
    ``slack`` allows for markup still in the text (a Markdown source counts its ``#`` and links)."""

    def __init__(self, filename: str, limit: int | None) -> None:
        self.filename = filename
        self.limit = limit
        self.used = 0
        self._pending: list[str] = []
        self._pending_chars = 0

    def take(self, text: str, slack: int = 1) -> None:
        if self.limit is None:
            return
        self._pending.append(text)
        self._pending_chars += len(text)
        if self._pending_chars >= _COUNT_CHARS or slack != 1:
            self.finish(slack)

    def finish(self, slack: int = 1) -> None:
        """Count what was taken and not counted yet."""
        if self.limit is None or not self._pending:
            return
        batch = "".join(self._pending)
        self._pending.clear()
        self._pending_chars = 0
        self.used += len(batch) - sum(len(run) for run in _WHITESPACE_RUNS.findall(batch))
        if self.used > self.limit * slack:
            raise _fail(
                self.filename,
                f"holds more than {self.limit:,} characters of text, the limit of one document "
                "(max_document_chars): split it",
            )

    def restart(self) -> None:
        """Count from nothing again (the same file read another way)."""
        self.used = 0
        self._pending.clear()
        self._pending_chars = 0


# ------------------------------------------------------------------ HTML

# Elements that end a line of text; blocks get a blank line around them.
_BLOCKS = frozenset(
    "address article aside blockquote dd div dl dt figcaption figure footer form h1 h2 h3 h4 h5 h6 "
    "header hr li main nav ol p pre section tbody thead tfoot ul caption details summary".split()
)
_LINES = frozenset({"br"})
_CELLS = frozenset({"td", "th"})
# Elements whose content is never text for a reader; <title> is kept apart as the title.
# (<nav>: a site's menu, the same links on every page, is no document's text.)
_HIDDEN = frozenset({"script", "style", "noscript", "template", "title", "nav"})
_LISTS = frozenset({"ul", "ol"})


def table_row_text(cells: list[str], header: list[str] | None) -> str:
    """A table row as a line a reader can use on its own: each cell after its column's header
    ("Loaf: White bloomer; Size: 800g; Price: £3.10"); where the header's first cell is empty the
    first column labels the row, and each cell says both ("Address, Tannery Gallery: 2 Tanyard
    Row; Address, Orchard Gallery: 18 Orchard Street"). Without a header, a two-cell row reads as
    "label: value" and a longer one as its cells joined by "; ". Empty cells are left out."""
    if header and len(header) > 1:
        label = cells[0] if not header[0] and cells and cells[0] else ""
        parts = [label] if label and not any(cells[1:]) else []
        for i, cell in enumerate(cells):
            if not cell or (label and i == 0):
                continue
            name = header[i] if i < len(header) else ""
            if label:
                name = f"{label}, {name}" if name else label
            parts.append(f"{name}: {cell}" if name and name != cell else cell)
        return "; ".join(parts)
    filled = [c for c in cells if c]
    if len(filled) == 2:
        return f"{filled[0]}: {filled[1]}"
    return "; ".join(filled)


class _Table:
    """A table being read: its header row (the first row of header cells, or of <thead>), the row
    and cell being read."""

    def __init__(self) -> None:
        self.header: list[str] | None = None
        self.rows = 0
        self.row: list[str] | None = None
        self.row_is_header = True
        self.cell: list[str] | None = None
        self.in_head = False


class _TextTarget:
    """lxml parser target: the text of an HTML document with line breaks where blocks end; the
    <title> and first <h1> kept apart. Events come from libxml2's HTML parser, fed in pieces.

    Structure a reader needs is kept: each table row is one line, its cells after their column's
    header (:func:`table_row_text`), rows a blank line apart; a list item starts with "- " (or its
    number in an ordered list); a heading is a block of its own. A line break in the markup is a
    space, as a browser shows it (but in <pre>)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self.h1_parts: list[str] = []
        self._hidden = 0
        self._in_title = False
        self._in_h1 = False
        self._h1_done = False
        self._pre = 0
        self._lists: list[list[int]] = []  # per open list: [number of the next item], or [] for <ul>
        self._table: _Table | None = None
        self._nested_tables = 0  # tables inside a cell: read as the cell's text

    def _emit(self, text: str) -> None:
        table = self._table
        if table is not None and table.cell is not None:
            table.cell.append(" " if not text.strip() else text)
        elif table is not None and table.row is not None:
            return  # text between cells
        else:
            self.parts.append(text)

    def start(self, tag: str, attrib: object) -> None:
        if tag in _HIDDEN:
            self._hidden += 1
            self._in_title = self._in_title or tag == "title"
            return
        if tag == "table":
            if self._table is not None:
                self._nested_tables += 1
            else:
                self._table = _Table()
                self.parts.append("\n\n")
            return
        table = self._table
        if table is not None and not self._nested_tables:
            if tag == "thead":
                table.in_head = True
            elif tag == "tr":
                table.row, table.row_is_header = [], True
            elif tag in _CELLS and table.row is not None:
                table.cell = []
                table.row_is_header = table.row_is_header and (tag == "th" or table.in_head)
            elif tag in _BLOCKS or tag in _LINES:
                self._emit(" ")
            return
        if tag in _LISTS:
            self._lists.append([1] if tag == "ol" else [])
        if tag == "pre":
            self._pre += 1
        if tag in _BLOCKS:
            self._emit("\n\n")
            if tag == "li":
                numbering = self._lists[-1] if self._lists else []
                if numbering:
                    self._emit(f"{numbering[0]}. ")
                    numbering[0] += 1
                else:
                    self._emit("- ")
            if tag == "h1" and not self._h1_done:
                self._in_h1 = True
        elif tag in _LINES:
            self._emit("\n")
        elif tag in _CELLS:
            self._emit(" ")

    def end(self, tag: str) -> None:
        if tag in _HIDDEN:
            self._hidden -= 1
            if tag == "title":
                self._in_title = False
            return
        table = self._table
        if tag == "table" and table is not None:
            if self._nested_tables:
                self._nested_tables -= 1
            else:
                self._table = None
                self.parts.append("\n\n")
            return
        if table is not None and not self._nested_tables:
            if tag == "thead":
                table.in_head = False
            elif tag in _CELLS and table.cell is not None and table.row is not None:
                table.row.append(" ".join("".join(table.cell).split()))
                table.cell = None
            elif tag == "tr" and table.row is not None:
                cells, table.row = table.row, None
                if table.rows == 0 and table.row_is_header and any(cells):
                    table.header = cells  # said once as a line of its own, then with every row
                    self.parts.append("\n\n" + "; ".join(c for c in cells if c) + "\n\n")
                elif any(cells):
                    self.parts.append("\n\n" + table_row_text(cells, table.header) + "\n\n")
                table.rows += 1
            elif tag in _BLOCKS or tag in _LINES:
                self._emit(" ")
            return
        if tag in _LISTS and self._lists:
            self._lists.pop()
        if tag == "pre" and self._pre:
            self._pre -= 1
        if tag in _BLOCKS:
            self._emit("\n\n")
            if tag == "h1" and self._in_h1:
                self._in_h1, self._h1_done = False, True

    def data(self, data: str) -> None:
        if self._hidden:
            if self._in_title:
                self.title_parts.append(data)
            return
        if not self._pre:
            data = data.replace("\r", " ").replace("\n", " ")
        self._emit(data)
        if self._in_h1:
            self.h1_parts.append(data)

    def comment(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass


#: The parser is fed this many characters at a time; what it read is then joined into one
#: string (a piece per tag and text run held 30 MB of ``<p>`` elements in ~500 MB) and counted.
_FEED_CHARS = 1 << 20


def _read_html(html: str, budget: _TextBudget | None = None) -> tuple[str, str]:
    # A "<" with no ">" after it anywhere is text (a parser would take it for a tag to the end).
    last_close = html.rfind(">")
    if html.find("<", last_close + 1) != -1:
        html = html[: last_close + 1] + html[last_close + 1 :].replace("<", "&lt;")
    budget = budget or _TextBudget("", None)
    from lxml import etree

    reader = _TextTarget()
    # libxml2's HTML parser (recovering as browsers do), streaming events to the target: no tree
    # is built, and 30 MB of markup reads in under a second (the standard library's took 5 s).
    parser = etree.HTMLParser(target=reader, recover=True, huge_tree=True, no_network=True)
    blocks: list[str] = []

    def collect() -> None:
        block = "".join(reader.parts)
        reader.parts.clear()
        budget.take(block)
        blocks.append(block)

    for start in range(0, len(html), _FEED_CHARS):
        parser.feed(html[start : start + _FEED_CHARS])
        collect()
    with contextlib.suppress(etree.XMLSyntaxError):  # "Document is empty": no text, said below
        parser.close()
    collect()
    title = "".join(reader.title_parts).strip() or "".join(reader.h1_parts).strip()
    return _normalise("".join(blocks)), title


# -------------------------------------------------------------- Markdown

#: A Markdown source's characters per character of its text, at most, before it is refused
#: unrendered: the markup (``#``, ``*``, ``|``, link targets) is not text.
_MARKDOWN_SLACK = 4
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_FRONT_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.MULTILINE)


def _parse_markdown(source: str, budget: _TextBudget | None = None) -> tuple[str, str]:
    from markdown_it import MarkdownIt

    front_title = ""
    front = _FRONT_MATTER.match(source)
    if front is not None:  # YAML front matter: its title, and no text of it indexed
        found = _FRONT_TITLE.search(front.group(1))
        front_title = found.group(1).strip("\"'") if found else ""
        source = source[front.end() :]
    if budget is not None:  # before rendering, which holds the whole source and its HTML
        budget.take(source, slack=_MARKDOWN_SLACK)
        budget.restart()  # the rendered text is counted again, as text
    html = MarkdownIt("commonmark").enable("table").render(source)
    text, h1 = _read_html(html, budget)
    return text, front_title or h1


# ------------------------------------------------------------------- PDF


#: The most forms (``Do``) a PDF's pages may draw in all while their text is read: a file of a few
#: kilobytes whose page draws a form that draws the next ten times, five deep, took 15 s for 8
#: pages. A page with a logo and a few icons draws a handful.
MAX_PDF_FORMS_DRAWN = 2_000
#: How long reading a PDF's text may take: this, and this much more per page.
PDF_SECONDS = 1.5
PDF_SECONDS_PER_PAGE = 0.02


class _PdfTooCostlyError(Exception):
    """A PDF's text costs more to read than an honest one's would."""


class _PdfWork:
    """Counts what a PDF's text extraction does (pypdf calls it before each operator, those of
    nested forms too) and stops it when the file asks for more than :data:`MAX_PDF_FORMS_DRAWN`
    forms or more time than its pages allow."""

    def __init__(self, pages: int) -> None:
        self.deadline = time.monotonic() + PDF_SECONDS + PDF_SECONDS_PER_PAGE * pages
        self.forms = 0
        self.ops = 0

    def __call__(self, operator: bytes, *_: Any) -> None:
        self.ops += 1
        if operator == b"Do":
            self.forms += 1
            if self.forms > MAX_PDF_FORMS_DRAWN:
                raise _PdfTooCostlyError(f"draws more than {MAX_PDF_FORMS_DRAWN:,} forms (nested forms?)")
        if self.ops % 256 == 0 and time.monotonic() > self.deadline:
            raise _PdfTooCostlyError(
                "takes too long to read (its drawing is nested or repeated beyond reason)"
            )


def _parse_pdf(filename: str, data: bytes, budget: _TextBudget) -> tuple[str, str]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise _fail(filename, "is an encrypted PDF: save it without a password and upload it again")
        pages = []
        work = _PdfWork(len(reader.pages))
        for page in reader.pages:
            pages.append(page.extract_text(visitor_operand_before=work) or "")
            budget.take(pages[-1])
        info: Any = reader.metadata
        title = str(info.title or "") if info is not None else ""
    except InvalidInputError:
        raise
    except _PdfTooCostlyError as exc:
        raise _fail(filename, f"is refused: it {exc}") from exc
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


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
# What a paragraph's text is made of, in document order (python-docx reads runs the same way).
_RUN_TEXT = {f"{_W}t": None, f"{_W}tab": "\t", f"{_W}br": "\n", f"{_W}cr": "\n"}
_RUN_TEXT_TAGS = tuple(_RUN_TEXT)
_W_P, _W_TR, _W_TC, _W_PPR = f"{_W}p", f"{_W}tr", f"{_W}tc", f"{_W}pPr"


def _parse_docx(filename: str, data: bytes, budget: _TextBudget | None = None) -> tuple[str, str]:
    """Paragraphs and table rows of ``word/document.xml`` in order, streamed: each paragraph is
    read and dropped as it ends (python-docx built the whole tree first: 60 MB of XML in a 0.2
    MB file took 20 s and 800 MB). Title: the core properties', else the first Title/Heading 1."""
    from lxml import etree

    _check_unpacked_size(filename, data)
    budget = budget or _TextBudget(filename, None)
    blocks: list[str] = []
    heading = ""
    table: Any = None  # the table whose rows are being read (held: its proxy stays the same)
    header: list[str] | None = None
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            title = _docx_core_title(z)
            with z.open(_DOCX_PART) as part:
                for _, element in etree.iterparse(part, ("end",), tag=(_W_P, _W_TR), huge_tree=True):
                    parent = element.getparent()
                    if element.tag == _W_P:
                        if parent is not None and parent.tag == _W_TC:
                            continue  # a cell's paragraph: read with its row
                        text = _docx_text(element)
                        if not heading and text.strip() and _docx_style(element) in _DOCX_TITLE_STYLES:
                            heading = text
                    else:
                        outer = parent.getparent() if parent is not None else None
                        if outer is not None and outer.tag == _W_TC:
                            continue  # a nested table's row: read with the outer cell
                        cells = [
                            " ".join(" ".join(_docx_text(p) for p in c.iter(_W_P)).split())
                            for c in element.iterchildren(_W_TC)
                        ]
                        if parent is not table:  # a table's first row is its header
                            table, header = parent, (cells if len(cells) > 1 and all(cells) else None)
                        text = "; ".join(cells) if cells is header else table_row_text(cells, header)
                    if text:
                        budget.take(text)
                        blocks.append(text)
                    element.clear()  # read: drop it and what came before it
                    while parent is not None and element.getprevious() is not None:
                        del parent[0]
    except InvalidInputError:
        raise
    except Exception as exc:  # lxml and zipfile raise many kinds on a damaged file
        logger.info("DOCX %r failed to parse", filename, exc_info=exc)
        raise _fail(filename, f"is not a readable DOCX ({type(exc).__name__}: {exc})") from exc
    return _normalise("\n\n".join(blocks)), title or heading


def _docx_text(paragraph: Any) -> str:
    parts = []
    for node in paragraph.iter(_RUN_TEXT_TAGS):
        fixed = _RUN_TEXT[node.tag]
        parts.append(node.text or "" if fixed is None else fixed)
    return "".join(parts)


def _docx_style(paragraph: Any) -> str | None:
    if not len(paragraph) or paragraph[0].tag != _W_PPR:  # properties come first when there are any
        return None
    style = paragraph[0].find(f"{_W}pStyle")
    return None if style is None else style.get(f"{_W}val")


def _docx_core_title(z: zipfile.ZipFile) -> str:
    from lxml import etree

    if "docProps/core.xml" not in z.namelist():
        return ""
    found = etree.fromstring(z.read("docProps/core.xml")).find(_DC_TITLE)
    return (found.text or "") if found is not None else ""
