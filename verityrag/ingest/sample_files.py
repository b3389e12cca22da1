"""Small files made in code, for tests, benchmarks and demos: a PDF with a text layer, a DOCX.

``make_pdf`` writes the PDF by hand (Helvetica, one text line per 90 characters, US Letter
pages), so no PDF-writing library is needed; ``make_docx`` uses python-docx.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence

__all__ = ["make_docx", "make_pdf"]

_LINES_PER_PAGE = 48


def _pdf_string(text: str) -> bytes:
    raw = text.encode("cp1252", errors="replace")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def make_pdf(pages: Sequence[str], title: str | None = None) -> bytes:
    """A PDF with one page per string (a longer string is cut at the page's last line).

    Each page's text is wrapped at 90 characters; blank lines in it are kept. ``title`` goes
    into the document information dictionary, where PDF readers find it.
    """
    objects: list[bytes] = []  # object i + 1

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled once the pages object exists
    pages_ref = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    kids: list[int] = []
    for page_text in pages:
        lines: list[str] = []
        for paragraph in page_text.split("\n"):
            lines.extend(textwrap.wrap(paragraph, 90) or [""])
        ops = [b"BT /F1 11 Tf 14 TL 56 740 Td"]
        ops += [_pdf_string(line) + b" Tj T*" for line in lines[:_LINES_PER_PAGE]]
        ops.append(b"ET")
        stream = b"\n".join(ops)
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] "
                b"/Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>" % (pages_ref, font, content)
            )
        )
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_ref
    objects[pages_ref - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids),
        len(kids),
    )
    info = add(b"<< /Title " + _pdf_string(title) + b" >>") if title else None

    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    trailer = b"<< /Size %d /Root %d 0 R" % (len(objects) + 1, catalog)
    if info is not None:
        trailer += b" /Info %d 0 R" % info
    out.write(b"trailer\n" + trailer + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref)
    return out.getvalue()


def make_docx(paragraphs: Sequence[str], title: str | None = None, heading: str | None = None) -> bytes:
    """A DOCX with an optional ``Heading 1`` paragraph, then one paragraph per string."""
    import docx

    document = docx.Document()
    if title:
        document.core_properties.title = title
    if heading:
        document.add_heading(heading, level=1)
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
