"""Small files made in code, for tests, benchmarks and demos: a PDF with a text layer, a DOCX.

``make_pdf`` writes the PDF by hand (Helvetica, one text line per 90 characters, US Letter
pages), so no PDF-writing library is needed; ``make_docx`` uses python-docx.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence

__all__ = ["make_docx", "make_nested_forms_pdf", "make_pdf"]

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
    return _pdf_file(objects, catalog, info)


def make_nested_forms_pdf(depth: int = 7, fanout: int = 10, pages: int = 1) -> bytes:
    """A hostile PDF of a few kilobytes: one page draws a form ``fanout`` times, which draws the
    next ``fanout`` times, ``depth`` deep, the last showing a word: ``fanout ** depth`` words to
    extract (a "billion laughs" of the PDF format), on each of ``pages`` pages."""
    objects: list[bytes] = [b"", b""]
    font = len(objects) + 1
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    forms: list[int] = []
    for _ in range(depth):
        forms.append(len(objects) + 1)
        objects.append(b"")
    for level, number in enumerate(forms):
        if level == depth - 1:
            stream, resources = b"BT /F1 9 Tf (word) Tj ET", b"/Font << /F1 %d 0 R >>" % font
        else:
            stream = b" ".join([b"/X Do"] * fanout)
            resources = b"/XObject << /X %d 0 R >>" % forms[level + 1]
        objects[number - 1] = (
            b"<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << %s >> /Length %d >>\n"
            b"stream\n%s\nendstream" % (resources, len(stream), stream)
        )
    page_stream = b" ".join([b"/X Do"] * fanout)
    content = len(objects) + 1
    objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(page_stream), page_stream))
    kids = []
    for _ in range(pages):
        kids.append(len(objects) + 1)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /X %d 0 R >> >> "
            b"/Contents %d 0 R >>" % (forms[0], content)
        )
    objects[0] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), pages)
    return _pdf_file(objects, 1, None)


def _pdf_file(objects: Sequence[bytes], catalog: int, info: int | None) -> bytes:
    """The file of ``objects`` (object i + 1 is ``objects[i]``), its cross-reference table and trailer."""
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
