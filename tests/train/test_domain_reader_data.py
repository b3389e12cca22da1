"""The reader's examples from user domains: spans found where the reader reads, tables asked."""

from __future__ import annotations

import random

import pytest

from verityrag.eval.domains import Domain, DomainDocument, DomainQuestion
from verityrag.train.domain_reader_data import find_answer, sentence_context, table_examples, table_rows

PRICES = DomainDocument(
    "prices",
    "Price list",
    "markdown",
    "# Price list\n\n## Bread\n\n| Loaf | Size | Price |\n|---|---|---|\n| White bloomer | 800g | £3.10 |\n"
    "| Sourdough | 750g | £4.20 |\n\nPrices from March.\n",
)


@pytest.mark.unit
def test_an_answer_is_found_as_whole_words_whatever_its_case() -> None:
    assert find_answer("Ring by 2pm the day before.", ["by 2PM"]) == {"text": "by 2pm", "answer_start": 5}
    assert find_answer("It costs £12.50.", ["£12"]) is None  # not a whole number
    assert find_answer("Nothing here.", ["£12"]) is None


@pytest.mark.unit
def test_the_sentence_holding_the_answer_is_read_after_its_heading() -> None:
    text = "Delivery\n\nWe deliver cakes. It costs £12 within 10 miles. Bread is not delivered.\n\nOther"
    context, answer = sentence_context(text, ["£12"]) or ("", {})
    assert context == "Delivery We deliver cakes. It costs £12 within 10 miles. Bread is not delivered."
    assert context[answer["answer_start"] :].startswith("£12")
    assert sentence_context(text, ["£99"]) is None


@pytest.mark.unit
def test_a_parsed_table_is_asked_for_its_cells_and_for_what_it_lacks() -> None:
    text = PRICES.parsed().text
    tables = table_rows(text)
    assert [[row.cells[0][1] for row in t] for t in tables] == [["White bloomer", "Sourdough"]]
    domain = Domain("bakery", (PRICES,), (DomainQuestion("A1", "answerable", "q?", ("£3.10",)),))
    rows = list(table_examples(domain, ["Carrot cake"], random.Random(0)))
    cells = [r for r in rows if r["kind"] == "table_cell"]
    assert {r["answer_text"] for r in cells} == {"800g", "£3.10", "750g", "£4.20"}
    for r in cells:
        assert r["context"][r["answer_start"] : r["answer_start"] + len(r["answer_text"])] == r["answer_text"]
        assert r["context"].startswith("Bread ")  # the table's heading comes first
    absent = [r for r in rows if r["kind"] == "table_absent_row"]
    assert all(r["answer_text"] is None and "Carrot cake" in r["question"] for r in absent)


@pytest.mark.integration
def test_a_domain_asked_gives_the_reads_of_its_questions_as_examples() -> None:
    from verityrag.train.domain_reader_data import asked_examples

    about = DomainDocument(
        "about",
        "About us",
        "text",
        "About us\n\nOur head baker is Tomasz Wilk. He starts at 2am every night.\n",
    )
    domain = Domain(
        "bakery",
        (PRICES, about),
        (
            DomainQuestion("A1", "answerable", "Who is the head baker?", ("Tomasz Wilk",), ("about",)),
            DomainQuestion("W1", "wrong_entity", "Who is the head baker at the other shop?"),
        ),
    )
    rows = list(asked_examples(domain, random.Random(0)))
    answerable = [r for r in rows if r["kind"] == "domain_answerable"]
    assert answerable
    assert all(r["answer_text"] == "Tomasz Wilk" for r in answerable)
    assert all(r["answer_text"] is None for r in rows if r["kind"] == "domain_wrong_entity")
