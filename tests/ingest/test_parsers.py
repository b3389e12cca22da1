"""parse_file: PDF, HTML, Markdown, DOCX and plain text made here, and files it must refuse by name."""

from __future__ import annotations

import io
import zipfile

import pytest

from verityrag.errors import InvalidInputError
from verityrag.ingest.parsers import FORMATS, MAX_UNPACKED_BYTES, ParsedFile, detect_format, parse_file
from verityrag.ingest.sample_files import make_docx, make_pdf

pytestmark = pytest.mark.unit

WATT = "James Watt improved the steam engine in 1776."


def test_parse_pdf_two_pages_gives_text_of_both_and_the_info_title() -> None:
    data = make_pdf([f"Steam\n\n{WATT}", "The second page (with brackets) is here."], title="Steam Power")
    parsed = parse_file("steam.pdf", data)
    assert parsed.format == "pdf"
    assert parsed.title == "Steam Power"
    assert parsed.source == "steam.pdf"
    assert WATT in parsed.text
    assert "The second page (with brackets) is here." in parsed.text
    assert parsed.text.index(WATT) < parsed.text.index("second page")


def test_parse_pdf_without_title_uses_the_file_stem() -> None:
    assert parse_file("reports/annual-2024.pdf", make_pdf([WATT])).title == "annual-2024"


def test_parse_pdf_without_text_layer_is_refused_naming_the_file() -> None:
    with pytest.raises(InvalidInputError, match=r"'scan\.pdf' has no text layer .*OCR"):
        parse_file("scan.pdf", make_pdf([""]))


def test_parse_pdf_damaged_is_refused_naming_the_file() -> None:
    with pytest.raises(InvalidInputError, match=r"'broken\.pdf' is not a readable PDF") as info:
        parse_file("broken.pdf", make_pdf([WATT])[:200])
    assert info.value.field == "file"


def test_parse_docx_gives_paragraphs_in_order_and_heading_as_title() -> None:
    data = make_docx([WATT, "Boulton was his partner."], heading="Watt")
    parsed = parse_file("watt.docx", data)
    assert parsed == ParsedFile(
        text=f"Watt\n\n{WATT}\n\nBoulton was his partner.", title="Watt", source="watt.docx", format="docx"
    )


def test_parse_docx_core_title_wins_over_heading() -> None:
    assert parse_file("w.docx", make_docx([WATT], title="Core", heading="Heading")).title == "Core"


def test_parse_docx_tables_are_read_row_by_row() -> None:
    import docx

    document = docx.Document()
    table = document.add_table(rows=2, cols=2)
    for r, row in enumerate([("Engine", "Year"), ("Watt", "1776")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    # The first row is the header, said once and then with each cell of every row
    assert parse_file("t.docx", out.getvalue()).text == "Engine; Year\n\nEngine: Watt; Year: 1776"


def test_parse_docx_reads_a_nested_table_with_its_outer_row_and_keeps_tabs_and_breaks() -> None:
    import docx

    document = docx.Document()
    document.add_paragraph("Before the table.")
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "Outer"
    inner = table.cell(0, 1).add_table(rows=1, cols=2)
    inner.cell(0, 0).text = "Inner A"
    inner.cell(0, 1).text = "Inner B"
    run = document.add_paragraph("After").add_run()
    run.add_tab()
    run.add_text("the")
    run.add_break()
    run.add_text("table.")
    out = io.BytesIO()
    document.save(out)
    text = parse_file("nested.docx", out.getvalue()).text
    # The inner cells within the outer row (python-docx's cell text left them out)
    assert text.split("\n\n") == ["Before the table.", "Outer; Inner A Inner B", "After the\ntable."]


def test_parse_docx_zip_without_document_is_refused() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("hello.txt", "not a word file")
    with pytest.raises(InvalidInputError, match=r"'x\.docx' is not a readable DOCX"):
        parse_file("x.docx", out.getvalue())


def test_parse_html_drops_scripts_and_styles_and_keeps_blocks_apart() -> None:
    html = (
        "<!doctype html><html><head><title>Steam &amp; Power</title><style>p {color: red}</style>"
        "<script>if (a < b) { alert('x') }</script></head><body><h1>Steam</h1>"
        "<p>James <b>Watt</b> improved the steam engine in 1776.</p><ul><li>one</li><li>two</li></ul>"
        "<table><tr><td>Engine</td><td>Year</td></tr></table></body></html>"
    )
    parsed = parse_file("page.html", html.encode())
    assert parsed.title == "Steam & Power"
    assert parsed.text == f"Steam\n\n{WATT}\n\n- one\n\n- two\n\nEngine: Year"


def test_parse_html_without_title_uses_first_h1() -> None:
    assert parse_file("p.htm", b"<h1>The <i>Engine</i></h1><p>Text here.</p>").title == "The Engine"


def test_parse_html_unclosed_tags_still_give_text() -> None:
    text = parse_file("bad.html", b"<div><p>Unclosed <b>bold <i>italic</p>tail").text
    assert text == "Unclosed bold italic\n\ntail"


@pytest.mark.parametrize(
    "html", [b"<![bogus[ x ]]><p>Text here.</p>", b"<!DOCTYPE html [ <!x [> ]><p>Text here.</p>"]
)
def test_parse_html_malformed_declarations_are_skipped_not_an_error(html: bytes) -> None:
    assert parse_file("odd.html", html).text.endswith("Text here.")


def test_parse_markdown_strips_markup_and_takes_h1_as_title() -> None:
    md = "# The *Steam* Engine\n\nJames **Watt** improved [the steam engine](https://x) in 1776.\n\n- one\n"
    parsed = parse_file("notes.md", md.encode())
    assert parsed.format == "markdown"
    assert parsed.title == "The Steam Engine"
    assert parsed.text == f"The Steam Engine\n\n{WATT}\n\n- one"


def test_parse_markdown_front_matter_title_is_used_and_not_indexed() -> None:
    md = '---\ntitle: "Front Title"\ntags: [a]\n---\nBody text here.\n'
    parsed = parse_file("n.markdown", md.encode())
    assert (parsed.title, parsed.text) == ("Front Title", "Body text here.")


def test_parse_text_utf8_with_bom_and_crlf() -> None:
    parsed = parse_file("notes.txt", "\ufeffCafé line one.\r\nLine   two.\r\n".encode())
    assert parsed == ParsedFile(
        text="Café line one.\nLine two.", title="notes", source="notes.txt", format="text"
    )


def test_parse_text_utf16_and_cp1252_are_decoded() -> None:
    assert parse_file("a.txt", "Café au lait".encode("utf-16")).text == "Café au lait"
    assert parse_file("b.txt", "Café – au lait".encode("cp1252")).text == "Café – au lait"


def test_parse_binary_data_is_refused_naming_the_file() -> None:
    with pytest.raises(InvalidInputError, match=r"'photo\.png' is binary, not text"):
        parse_file("photo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")


@pytest.mark.parametrize(
    ("name", "data"), [("empty.txt", b""), ("blank.md", b"  \n\n"), ("e.html", b"<p> </p>")]
)
def test_parse_file_without_text_is_refused(name: str, data: bytes) -> None:
    with pytest.raises(InvalidInputError, match=rf"'{name}' (is empty|has no text)"):
        parse_file(name, data)


def test_detect_format_content_wins_over_name_and_type() -> None:
    pdf = make_pdf([WATT])
    assert detect_format("upload.bin", pdf) == "pdf"
    assert detect_format("letter.txt", make_docx([WATT])) == "docx"
    assert detect_format("readme", b"# Hi", "text/markdown; charset=utf-8") == "markdown"
    assert detect_format("page", b"<!DOCTYPE html><p>x") == "html"
    assert detect_format("notes", b"plain") == "text"
    assert detect_format("x.PDF", b"not really") == "pdf"
    assert set(FORMATS) == {"pdf", "html", "markdown", "docx", "csv", "text"}


def _docx_declaring(part: str, real: bytes, declared: int) -> bytes:
    """A zip holding ``part`` deflated from ``real``, its headers declaring ``declared`` bytes."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(part, real)
    data = bytearray(out.getvalue())
    local = data.find(b"PK\x03\x04")
    central = data.find(b"PK\x01\x02")
    data[local + 22 : local + 26] = declared.to_bytes(4, "little")
    data[central + 24 : central + 28] = declared.to_bytes(4, "little")
    return bytes(data)


def test_a_docx_whose_parts_inflate_past_the_limit_is_refused_whatever_they_declare() -> None:
    bomb = _docx_declaring("word/document.xml", b"\0" * (MAX_UNPACKED_BYTES + 1), 4096)
    assert len(bomb) < MAX_UNPACKED_BYTES // 100  # a small file
    with pytest.raises(InvalidInputError, match="unpacks to more than"):
        parse_file("bomb.docx", bomb)


def test_a_docx_part_that_unpacks_to_another_size_than_declared_is_refused() -> None:
    lying = _docx_declaring("word/document.xml", b"<w:document/>" * 100, 13)
    with pytest.raises(InvalidInputError, match="declares 13 bytes, unpacks to 1,300"):
        parse_file("lying.docx", lying)


@pytest.mark.timeout(20)
def test_html_with_tags_that_never_close_is_read_as_text_at_once() -> None:
    # The standard parser took 12 s for 4,000 of these and grew faster than quadratically.
    parsed = parse_file("a.html", b"<p>Intro</p>" + b"<a " * 20_000)
    assert parsed.text.startswith("Intro\n\n<a <a")


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("long.html", b"<html><body>" + b"<p>word and more</p>" * 200 + b"</body></html>"),
        ("long.txt", b"plain words here " * 200),
        ("long.md", b"# Title\n\n" + b"Some *words* here.\n\n" * 200),
    ],
)
def test_a_file_whose_text_outgrows_one_document_is_refused_as_it_is_read(name: str, data: bytes) -> None:
    with pytest.raises(InvalidInputError, match=r"more than 1,000 characters of text.*max_document_chars"):
        parse_file(name, data, max_chars=1_000)
    assert len(parse_file(name, data).text) > 1_000  # without a limit, all of it


def test_the_text_limit_counts_text_not_the_whitespace_normalising_removes() -> None:
    html = (
        b"<html><body>"
        + b"\n"
        + b" " * 5_000
        + b"<p>Nine hundred characters of text.</p>"
        + b"</body></html>"
    )
    assert parse_file("indented.html", html, max_chars=1_000).text == "Nine hundred characters of text."


def test_html_read_in_pieces_gives_the_text_read_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from verityrag.ingest import parsers

    # Over a megabyte: the parser is fed in pieces, whose ends fall inside tags and entities.
    rows = [f"<tr><td>Engine &amp; {i}</td><td>{1700 + i % 300}</td></tr>" for i in range(25_000)]
    html = ("<html><body><table>" + "".join(rows) + "</table></body></html>").encode()
    assert len(html) > 1 << 20
    in_pieces = parse_file("table.html", html).text
    assert [line for line in in_pieces.splitlines() if line][-1] == "Engine & 24999: 1799"
    monkeypatch.setattr(parsers, "_FEED_CHARS", len(html))
    assert parse_file("table.html", html).text == in_pieces


def test_a_table_row_carries_its_column_headers() -> None:
    html = (
        "<html><body><h2>Opening hours</h2><table><thead><tr><th>Day</th><th>Brackenford</th>"
        "<th>Ostley Cross</th></tr></thead><tbody><tr><td>Saturday</td><td>7am to 4pm</td>"
        "<td>8am to 2pm</td></tr><tr><td>Sunday</td><td>8am to 12 noon</td><td></td></tr>"
        "</tbody></table></body></html>"
    )
    assert parse_file("hours.html", html.encode()).text.split("\n\n") == [
        "Opening hours",
        "Day; Brackenford; Ostley Cross",
        "Day: Saturday; Brackenford: 7am to 4pm; Ostley Cross: 8am to 2pm",
        "Day: Sunday; Brackenford: 8am to 12 noon",  # an empty cell is left out
    ]
    md = "## Bread\n\n| Loaf | Price |\n|---|---|\n| White bloomer, large | £3.10 |\n"
    assert parse_file("prices.md", md.encode()).text.split("\n\n") == [
        "Bread",
        "Loaf; Price",
        "Loaf: White bloomer, large; Price: £3.10",
    ]


def test_lists_stay_items_and_a_line_break_in_markup_is_a_space() -> None:
    html = "<ol><li>Fill in a\nform</li><li>Pay</li></ol><ul><li>Card only</li></ul><pre>a\nb</pre>"
    assert parse_file("p.html", html.encode()).text.split("\n\n") == [
        "1. Fill in a form",
        "2. Pay",
        "- Card only",
        "a\nb",
    ]


def test_a_dot_leader_reads_as_item_and_value_and_a_menu_is_not_text() -> None:
    assert (
        parse_file("l.txt", b"Sourdough ........ \xc2\xa33.80\nRye....\xc2\xa34").text
        == "Sourdough: £3.80\nRye: £4"
    )
    html = "<html><body><nav><a href='/'>Home</a> | <a href='/p'>Prices</a></nav><p>Hello there.</p></body></html>"
    assert parse_file("n.html", html.encode()).text == "Hello there."


def test_a_row_label_column_is_said_with_each_cell() -> None:
    html = (
        "<table><tr><th></th><th>Tannery Gallery</th><th>Orchard Gallery</th></tr>"
        "<tr><td>Address</td><td>2 Tanyard Row</td><td>18 Orchard Street</td></tr></table>"
    )
    assert parse_file("t.html", html.encode()).text.split("\n\n")[-1] == (
        "Address, Tannery Gallery: 2 Tanyard Row; Address, Orchard Gallery: 18 Orchard Street"
    )


def test_a_csv_is_a_table_each_row_a_line_naming_its_columns() -> None:
    data = 'Loaf,Size,Price\n"White bloomer, large",800g,£3.10\nSeeded rye,600g,£3.80\n\n'.encode()
    parsed = parse_file("prices.csv", data)
    assert parsed.format == "csv"
    assert parsed.text.split("\n\n") == [
        "Loaf; Size; Price",
        "Loaf: White bloomer, large; Size: 800g; Price: £3.10",
        "Loaf: Seeded rye; Size: 600g; Price: £3.80",
    ]
    assert (
        parse_file("prices.tsv", b"Loaf\tPrice\nRye\t3.80\n").text == "Loaf; Price\n\nLoaf: Rye; Price: 3.80"
    )
    assert detect_format("upload", b"a,b\n1,2\n", "text/csv") == "csv"


def test_a_csv_whose_named_cells_would_outgrow_one_document_keeps_them_bare() -> None:
    header = "Product code,Description of the item,Price including VAT"
    data = "\n".join([header, *(f"P{i},Item {i},{i}.00" for i in range(200))]).encode()
    limit = len(data) * 3 // 2  # the file fits; naming each cell would not
    parsed = parse_file("items.csv", data, max_chars=limit)
    rows = parsed.text.split("\n\n")
    assert rows[0] == "Product code; Description of the item; Price including VAT"
    assert rows[1] == "P0; Item 0; 0.00"
    assert len(parsed.text) <= limit


def test_a_million_character_csv_is_chunked_row_by_row_within_the_word_limit() -> None:
    from verityrag import Settings, VerityRAGPipeline

    # What once was one chunk of any size: no sentence ends, a line break per row.
    header = "order_id,customer,city,product,quantity,unit_price,status,notes"
    row = "{i},Customer {i},Town{c},Widget model {m},{q},{p}.99,shipped,left at the door by courier {i}"
    lines = [header]
    while sum(len(line) + 1 for line in lines) < 990_000:
        i = len(lines)
        lines.append(row.format(i=i, c=i % 97, m=i % 13, q=i % 7 + 1, p=i % 50))
    data = "\n".join(lines).encode()
    settings = Settings(reader=False)
    parsed = parse_file("orders.csv", data, max_chars=settings.max_document_chars)
    pipeline = VerityRAGPipeline(settings=settings)
    pipeline.ingest_document("orders", parsed.title, parsed.text)
    chunks = pipeline.index.chunks_of("orders")
    assert max(len(c.text.split()) for c in chunks) <= 2 * settings.chunk_max_words
    assert len(chunks) > 500


def test_a_pdf_whose_forms_draw_forms_is_refused_not_read_for_seconds() -> None:
    from verityrag.ingest.sample_files import make_nested_forms_pdf

    # A few kilobytes: each page draws a form that draws the next ten times, five deep (8 pages
    # took 15 s to read); refused once it has drawn more forms than honest pages do.
    with pytest.raises(InvalidInputError, match=r"'forms\.pdf' is refused: it draws more than 2,000 forms"):
        parse_file("forms.pdf", make_nested_forms_pdf(depth=5, fanout=10, pages=8))
    # A form drawn a few times, as a logo is, is read.
    assert "word" in parse_file("logo.pdf", make_nested_forms_pdf(depth=2, fanout=3, pages=2)).text
