"""The app's Documents tab, and the Ask tab once a user has documents of their own (Streamlit's
AppTest over the app in this process: the bundled demo articles, then two documents added in the
app)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[2] / "app.py"
pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

PRICES = "Ashgrove practice prices. A scale and polish at Ashgrove costs £110. A nail clip costs £12."
HOURS = "Brindle Street opening hours. The Brindle Street surgery opens at eight on weekdays."


@pytest.fixture
def app() -> Iterator[AppTest]:
    """The app over a pipeline of its own (the cached one cleared before and after), with two
    documents added through its Add documents tab."""
    st.cache_resource.clear()
    at = AppTest.from_file(str(APP), default_timeout=180)
    at.run()
    assert not at.exception, at.exception
    for title, text in (("Ashgrove price list", PRICES), ("Brindle Street hours", HOURS)):
        at.text_input(key="paste_title").input(title)
        at.text_area(key="paste_text").input(text)
        at.button(key="add_paste").click().run()
        assert not at.exception, at.exception
    yield at
    st.cache_resource.clear()


def _table_titles(at: AppTest) -> list[str]:
    return list(at.table[0].value["title"]) if at.table else []


def test_the_documents_are_listed_searched_and_filtered_by_collection(app: AppTest) -> None:
    app.selectbox(key="doc_collection").select("yours").run()
    assert sorted(_table_titles(app)) == ["Ashgrove price list", "Brindle Street hours"]
    row = app.table[0].value.iloc[0]
    assert (row["collection"], row["format"]) == ("yours", "text")
    assert row["size"] == f"{len(PRICES):,} characters"
    app.text_input(key="doc_search").input("brindle").run()
    assert _table_titles(app) == ["Brindle Street hours"]
    app.selectbox(key="doc_collection").select("demo").run()
    assert not app.table  # no demo article is titled so
    assert "No documents match." in [i.value for i in app.info]
    app.text_input(key="doc_search").input("").run()
    assert "605 documents; page 1 of 31." in [c.value for c in app.caption]
    app.button(key="doc_next").click().run()
    assert "605 documents; page 2 of 31." in [c.value for c in app.caption]


def test_a_document_opens_as_its_parsed_text_and_passages(app: AppTest) -> None:
    app.selectbox(key="doc_collection").select("yours").run()
    picked = next(o for o in app.selectbox(key="doc_pick").options if o.startswith("Ashgrove"))
    app.selectbox(key="doc_pick").select(picked).run()
    text = "\n".join(m.value for m in app.markdown)
    assert "#### Ashgrove price list" in text
    assert "costs £110" in text
    assert "**Passages** (1)" in text
    assert not any("{" in m.value and "doc_id" in m.value for m in app.markdown)  # text, not JSON


def test_a_document_is_deleted_only_once_confirmed(app: AppTest) -> None:
    app.selectbox(key="doc_collection").select("yours").run()
    picked = next(o for o in app.selectbox(key="doc_pick").options if o.startswith("Brindle"))
    app.selectbox(key="doc_pick").select(picked).run()
    app.button(key="doc_delete").click().run()
    assert "Delete “Brindle Street hours”?" in app.warning[0].value
    app.button(key="doc_delete_no").click().run()
    assert sorted(_table_titles(app)) == ["Ashgrove price list", "Brindle Street hours"]
    app.selectbox(key="doc_pick").select(picked).run()
    app.button(key="doc_delete").click().run()
    app.button(key="doc_delete_yes").click().run()
    assert not app.exception, app.exception
    assert _table_titles(app) == ["Ashgrove price list"]
    assert "Deleted “Brindle Street hours”." in [s.value for s in app.success]


def test_a_whole_collection_is_deleted_once_confirmed(app: AppTest) -> None:
    app.selectbox(key="collection_pick").select("demo").run()
    assert app.button(key="collection_delete").disabled
    app.checkbox(key="collection_sure").check().run()
    app.button(key="collection_delete").click().run()
    assert not app.exception, app.exception
    assert "demo" not in app.selectbox(key="doc_collection").options
    assert "Deleted “demo: 605 documents”." in [s.value for s in app.success]


def test_the_ask_tab_offers_no_demo_questions_once_there_are_documents_of_ones_own(app: AppTest) -> None:
    # The demo alone: an example in the question box, the examples offered.
    assert app.text_input(key="question").value == "Who did Tesla work for in New York in 1884?"
    # A new visit once the index holds documents of one's own (the pipeline is the same): neither.
    visit = AppTest.from_file(str(APP), default_timeout=180)
    visit.run()
    assert not visit.exception, visit.exception
    assert visit.text_input(key="question").value in ("", None)
    assert not [s for s in visit.selectbox if s.key == "sample"]
    # Choosing the demo under Answer settings brings the examples back.
    visit.selectbox(key="collection").select("demo").run()
    assert [s for s in visit.selectbox if s.key == "sample"]
