"""The Streamlit app served for real and used in headless Chromium (Debian ``chromium``).

Starts ``streamlit run app.py`` on a free loopback port (alone: its own pipeline), or the API
and the app as ``make run`` starts them (one index, the app asking the API), opens the app
with Playwright driving /usr/bin/chromium, and waits for content, never for a fixed time:
an answer, a quoted citation. Screenshots go to test-artifacts/. Skipped when Chromium is
absent, unless VERITYRAG_REQUIRE_BROWSER=1 (CI sets it, so there a missing browser fails
the run instead of hiding it).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from browser_kit import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    HOST,
    ask,
    browser_page,
    require_browser,
    settled,
    streamlit_alone,
    type_question,
)
from PIL import Image, ImageStat

from verityrag.ingest.sample_files import make_pdf
from verityrag.serve.launcher import running_services

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def streamlit_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with streamlit_alone(tmp_path_factory.mktemp("streamlit") / "server.log") as url:
        yield url


def test_app_answers_in_headless_chromium(streamlit_url: str) -> None:
    from playwright.sync_api import expect

    shot = ARTIFACTS / "streamlit_ask_tab.png"
    with browser_page("streamlit_failure.png") as page:
        page.goto(streamlit_url, wait_until="domcontentloaded")
        # The first run loads and calibrates the pipeline; the Ask button appears after. The
        # question box holds the first example question.
        page.get_by_role("button", name="Ask", exact=True).click(timeout=120_000)
        expect(page.get_by_text("Thomas Edison").first).to_be_visible(timeout=60_000)
        expect(page.get_by_text("Quoted from Nikola Tesla")).to_be_visible()
        page.screenshot(path=str(shot), full_page=True)

        page.get_by_role("tab", name="Real-time streaming demo").click()
        page.get_by_role("button", name="Run the demo", exact=True).click()
        # The closing verdict only appears once all five steps have run and held.
        expect(page.get_by_text("Refused, then streamed in, then answered")).to_be_visible(timeout=120_000)
        expect(page.get_by_text("Demo finished in")).to_be_visible()
        expect(page.get_by_text("Edison").first).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "streamlit_streaming_tab.png"), full_page=True)
    with Image.open(shot) as img:
        assert img.width >= 1000
        # A blank or error page is near-uniform; a rendered answer page is not.
        assert max(ImageStat.Stat(img.convert("L")).stddev) > 10


# Facts no bundled article holds: only the documents added here can answer them.
API_DOC = {
    "doc_id": "notes/kellmark-lighthouse",
    "title": "Kellmark lighthouse",
    "text": (
        "The Kellmark lighthouse stands on the northern pier of the harbour. "
        "It was designed by the engineer Ilse Varga and first lit in 1911. "
        "Its lamp can be seen from 40 kilometres away on a clear night."
    ),
}
API_QUESTION = "Who designed the Kellmark lighthouse?"
PDF_TITLE = "Orchard survey of Vellmoor"
PDF_TEXT = (
    "The Vellmoor orchard grows apples, pears and plums on the southern slope of the valley. "
    "The orchard was planted in 1896 by the gardener Tobias Lindqvist. "
    "Its cider press is still used every October."
)
PDF_QUESTION = "Who planted the Vellmoor orchard?"


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, str]]:
    """The API and the app as ``make run`` starts them: (API URL, app URL)."""
    require_browser()
    with running_services(HOST, 0, 0, None, 200) as (api, ui):
        yield api.url, ui.url


def test_app_and_api_share_one_index(served: tuple[str, str]) -> None:
    from playwright.sync_api import expect

    api_url, app_url = served
    with browser_page("streamlit_one_index_failure.png") as page:
        opened_at = time.perf_counter()
        page.goto(app_url, wait_until="domcontentloaded")
        page.get_by_role("button", name="Ask", exact=True).wait_for(timeout=60_000)
        print(f"app URL opened -> first page ready to ask in {time.perf_counter() - opened_at:.2f} s")

        # Added through the API, answered in the app: one index. The question is typed first,
        # so the time printed is the document's, from the API's reply to the app's answer.
        type_question(page, API_QUESTION)
        reply = httpx.post(f"{api_url}/documents", json=API_DOC, timeout=30, trust_env=False)
        assert reply.status_code == 200, reply.text
        added_at = time.perf_counter()
        page.get_by_role("button", name="Ask", exact=True).click()
        # Checked at every animation frame: expect() retries at 0.1, 0.25, 0.5 then 1 s
        # steps, which would add up to a second to the time printed.
        page.wait_for_function(
            """() => [...document.querySelectorAll('[data-testid="stAlertContentSuccess"]')]
                .some(e => e.innerText.includes("Ilse Varga"))""",
            polling="raf",
            timeout=30_000,
        )
        print(f"added through the API -> answered in the app in {time.perf_counter() - added_at:.2f} s")
        # The quoted citation: the source's title over its passage.
        expect(page.get_by_text("[1] Kellmark lighthouse")).to_be_visible()
        expect(page.get_by_text("designed by the engineer Ilse Varga").first).to_be_visible()
        # The document opens in the app, as its parsed text and passages (not the API's JSON).
        page.get_by_text("Open the document").first.click()
        expect(page.get_by_text("Passages (1): each is searched and quoted on its own")).to_be_visible()
        settled(page)
        page.screenshot(path=str(ARTIFACTS / "streamlit_api_document_answered.png"), full_page=True)

        # Uploaded in the app (a PDF made here), answered in the app and by the API.
        page.get_by_role("tab", name="Add documents").click()
        pdf = make_pdf([PDF_TEXT], title=PDF_TITLE)
        page.locator("input[type=file]").set_input_files(
            files=[{"name": "vellmoor.pdf", "mimeType": "application/pdf", "buffer": pdf}]
        )
        expect(page.get_by_text("vellmoor.pdf")).to_be_visible()
        page.get_by_role("button", name="Add these files").click()
        expect(
            page.get_by_text(re.compile(r"“Orchard survey of Vellmoor” added: \d+ passages?, pdf"))
        ).to_be_visible(timeout=30_000)
        # Both arrivals (the API's, the upload) counted live on the page, whoever added them.
        expect(page.get_by_text("+2 since this page opened")).to_be_visible(timeout=10_000)
        ask(page, PDF_QUESTION)
        answer = page.get_by_test_id("stAlertContentSuccess").filter(has_text="Tobias Lindqvist")
        expect(answer).to_be_visible(timeout=30_000)
        expect(page.get_by_text(f"[1] {PDF_TITLE}")).to_be_visible()
        settled(page)
        page.screenshot(path=str(ARTIFACTS / "streamlit_pdf_answered.png"), full_page=True)
        body = httpx.post(f"{api_url}/query", json={"question": PDF_QUESTION}, timeout=30, trust_env=False)
        assert "Tobias Lindqvist" in (body.json()["answer"] or ""), body.json()


KEPT_NAME = "wexcombe-mill.md"
KEPT_TEXT = (
    "# Wexcombe tide mill\n\nThe tide mill at Wexcombe was built by the Ashby family in 1790. "
    "It ground corn until 1921 and is now a museum.\n"
)
KEPT_QUESTION = "Who built the tide mill at Wexcombe?"


def test_a_document_added_in_the_app_is_listed_and_answered_after_a_restart(tmp_path: Path) -> None:
    """``make run``'s promise: what a user adds is there after a restart (same data folder)."""
    from playwright.sync_api import expect, sync_playwright

    require_browser()
    data_dir = tmp_path / "var"
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            with running_services(HOST, 0, 0, data_dir, 200) as (_, ui):
                page = browser.new_page(viewport={"width": 1280, "height": 1400})
                page.goto(ui.url, wait_until="domcontentloaded")
                page.get_by_role("button", name="Ask", exact=True).wait_for(timeout=60_000)
                page.get_by_role("tab", name="Add documents").click()
                page.locator("input[type=file]").set_input_files(
                    files=[{"name": KEPT_NAME, "mimeType": "text/markdown", "buffer": KEPT_TEXT.encode()}]
                )
                page.get_by_role("button", name="Add these files").click()
                expect(page.get_by_text(re.compile(r"“Wexcombe tide mill” added"))).to_be_visible(
                    timeout=30_000
                )
            restarted = time.monotonic()
            with running_services(HOST, 0, 0, data_dir, 200, since=restarted) as (api, ui):
                kept = httpx.get(f"{api.url}/documents/{KEPT_NAME}", timeout=30, trust_env=False)
                assert kept.status_code == 200, kept.text
                assert kept.json()["title"] == "Wexcombe tide mill"
                yours = {"collection": {"$nin": ["demo"]}}  # listed among the user's own
                listed = httpx.get(
                    f"{api.url}/documents", params={"filter": json.dumps(yours)}, timeout=30, trust_env=False
                )
                assert [d["doc_id"] for d in listed.json()["documents"]] == [KEPT_NAME], listed.text
                page = browser.new_page(viewport={"width": 1280, "height": 1400})
                page.goto(ui.url, wait_until="domcontentloaded")
                page.get_by_role("button", name="Ask", exact=True).wait_for(timeout=60_000)
                ask(page, KEPT_QUESTION)
                answer = page.get_by_test_id("stAlertContentSuccess").filter(has_text="Ashby")
                expect(answer).to_be_visible(timeout=30_000)
                print(
                    f"restart -> the kept document answered in the app in {time.monotonic() - restarted:.1f} s"
                )
                expect(page.get_by_text("[1] Wexcombe tide mill")).to_be_visible()
                settled(page)
                page.screenshot(path=str(ARTIFACTS / "streamlit_kept_after_restart.png"), full_page=True)
        finally:
            browser.close()
