"""A made-up domain handled start to finish in the app alone, in headless Chromium: a vet
practice with two surgeries adds its documents as files of five formats, lists, searches and opens
them, asks questions that land in each case a reply can be (answered, not found, not sure enough,
sources disagree, a name no document names), deletes the outdated price card, and asks again.
No API call, no terminal: only the app's pages. Screenshots of each step go to test-artifacts/."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from browser_kit import ARTIFACTS, ask, browser_page, settled, streamlit_alone

from verityrag.ingest.sample_files import make_docx, make_pdf

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

FILES: list[dict[str, Any]] = [
    {
        "name": "ashgrove-prices.md",
        "mimeType": "text/markdown",
        "buffer": (
            "# Ashgrove practice price list\n\nAshgrove Veterinary Practice: price list 2025.\n\n"
            "A scale and polish at Ashgrove costs £110. A nail clip costs £12. A rabies vaccination "
            "costs £65. Microchipping costs £25.\n"
        ).encode(),
    },
    {
        "name": "brindle-hours.html",
        "mimeType": "text/html",
        "buffer": (
            b"<html><head><title>Brindle Street surgery hours</title></head><body>"
            b"<h1>Brindle Street Veterinary Surgery: opening hours</h1>"
            b"<p>The Brindle Street surgery opens at 8 am on weekdays and closes at 6 pm.</p>"
            b"<p>On Saturdays it opens from 9 am to 12 noon. It is closed on Sundays.</p></body></html>"
        ),
    },
    {
        "name": "brindle-dental.docx",
        "mimeType": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "buffer": make_docx(
            ["At the Brindle Street surgery a scale and polish costs £95, including a check-up."],
            title="Brindle Street dental leaflet",
        ),
    },
    {
        "name": "brindle-price-card.pdf",
        "mimeType": "application/pdf",
        "buffer": make_pdf(
            [
                "Brindle Street Veterinary Surgery price card. At the Brindle Street surgery a scale and polish costs £120."
            ],
            title="Brindle Street price card",
        ),
    },
    {
        "name": "team.txt",
        "mimeType": "text/plain",
        "buffer": (
            b"Our vets. Dr Priya Nair leads the Ashgrove practice. Dr Tom Hale leads the Brindle Street "
            b"surgery. Both practices belong to the Hale and Nair partnership, founded in 2009.\n"
        ),
    },
]

# Each case of a reply, the question that lands in it, and what the page says.
CASES = [
    ("answered", "How much is a scale and polish at Ashgrove?", "stAlertContentSuccess", "£110"),
    (
        "sources_disagree",
        "How much is a scale and polish at Brindle Street?",
        "stAlertContentError",
        "The sources disagree",
    ),
    ("unknown_name", "How much is a scale and polish at Cedar Lane?", "stAlertContentInfo", "Cedar Lane"),
    ("not_found", "Is there parking at the surgery?", "stAlertContentInfo", "Not found in the documents"),
    ("not_sure", "How much is a cat vaccination?", "stAlertContentWarning", "not sure enough to answer"),
]


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with streamlit_alone(tmp_path_factory.mktemp("streamlit") / "server.log") as url:
        yield url


def _shot(page: Any, name: str) -> None:
    settled(page)
    page.screenshot(path=str(ARTIFACTS / f"own_documents_{name}.png"), full_page=True)


def _rows(page: Any) -> list[str]:
    """The titles in the Documents tab's table."""
    cells = page.get_by_test_id("stTable").locator("tbody tr td:nth-of-type(1)")
    return [c.inner_text() for c in cells.all()]


def _pick(page: Any, label: str, option: str) -> None:
    page.get_by_label(label, exact=True).click()
    page.get_by_role("option", name=re.compile(re.escape(option))).first.click()


def test_a_vet_practice_runs_its_own_documents_in_the_app_alone(app_url: str) -> None:
    from playwright.sync_api import expect

    with browser_page("own_documents_failure.png") as page:
        page.goto(app_url, wait_until="domcontentloaded")
        page.get_by_role("button", name="Ask", exact=True).wait_for(timeout=120_000)

        # Add: five files, five formats.
        page.get_by_role("tab", name="Add documents").click()
        page.locator("input[type=file]").set_input_files(files=FILES)
        page.get_by_role("button", name="Add these files").click()
        for title in ("Ashgrove practice price list", "Brindle Street price card", "team"):
            expect(page.get_by_text(re.compile(f"“{re.escape(title)}” added"))).to_be_visible(timeout=60_000)
        _shot(page, "1_added")

        # List, search, filter, open.
        page.get_by_role("tab", name="Documents", exact=True).click()
        _pick(page, "Collection", "Your documents in no collection")
        expect(page.get_by_text("5 documents; page 1 of 1.")).to_be_visible(timeout=30_000)
        assert sorted(_rows(page)) == sorted(
            [
                "Ashgrove practice price list",
                "Brindle Street surgery hours",
                "Brindle Street dental leaflet",
                "Brindle Street price card",
                "team",
            ]
        )
        page.get_by_label("Search by title", exact=True).fill("brindle")
        page.get_by_label("Search by title", exact=True).press("Enter")
        expect(page.get_by_text("3 documents; page 1 of 1.")).to_be_visible(timeout=30_000)
        _pick(page, "A document to open or delete", "Brindle Street surgery hours")
        expect(page.get_by_text("On Saturdays it opens from 9 am to 12 noon.").first).to_be_visible()
        expect(page.get_by_text("Passages (1): each is searched and quoted on its own")).to_be_visible()
        _shot(page, "2_listed_and_opened")

        # Ask: each case of a reply, in its own words and look.
        for case, question, box, says in CASES:
            ask(page, question)
            reply = page.get_by_test_id(box).filter(has_text=says)
            expect(reply.first).to_be_visible(timeout=60_000)
            _shot(page, f"3_{case}")
        # The disagreement names both values and both sources.
        ask(page, "How much is a scale and polish at Brindle Street?")
        for said in ("£95", "£120", "Brindle Street dental leaflet", "Brindle Street price card"):
            expect(page.get_by_test_id("stTable").get_by_text(said).first).to_be_visible(timeout=60_000)

        # Delete the outdated price card, confirmed; the question is answered from the leaflet.
        page.get_by_role("tab", name="Documents", exact=True).click()
        _pick(page, "A document to open or delete", "Brindle Street price card")
        page.get_by_role("button", name="Delete this document").click()
        expect(page.get_by_text("Delete “Brindle Street price card”?")).to_be_visible()
        page.get_by_role("button", name="Yes, delete it").click()
        expect(page.get_by_text("Deleted “Brindle Street price card”.")).to_be_visible(timeout=30_000)
        expect(page.get_by_text("2 documents; page 1 of 1.")).to_be_visible()
        _shot(page, "4_deleted")
        ask(page, "How much is a scale and polish at Brindle Street?")
        answer = page.get_by_test_id("stAlertContentSuccess").filter(has_text="£95")
        expect(answer.first).to_be_visible(timeout=60_000)
        _shot(page, "5_answered_after_delete")
