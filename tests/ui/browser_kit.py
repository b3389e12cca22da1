"""What the browser tests of the app share: headless Chromium (Debian ``chromium``) driven by
Playwright, the app served for real, and the steps a user takes on its pages.

Skipped when Chromium is absent, unless VERITYRAG_REQUIRE_BROWSER=1 (CI sets it, so there a
missing browser fails the run instead of hiding it). Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from verityrag.serve import Service, free_port, ui_command, wait_healthy

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps dialling Google on this closed network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


#: The window the pages are drawn in (and screenshots taken of).
VIEWPORT = {"width": 1280, "height": 1400}


@contextmanager
def browser_page(failure_shot: str) -> Iterator[Any]:
    """A page of headless Chromium; on a failure, a screenshot named ``failure_shot`` and the
    page's text printed before the error goes on."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        try:
            yield page
        except Exception:
            page.screenshot(path=str(ARTIFACTS / failure_shot), full_page=True)
            print("page text at failure:\n" + page.inner_text("body"))
            raise
        finally:
            browser.close()


def require_browser() -> None:
    if Path(CHROMIUM).exists():
        return
    if os.environ.get("VERITYRAG_REQUIRE_BROWSER") == "1":
        pytest.fail(f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    pytest.skip("Chromium not installed (apt-get install chromium); CI requires it")


@contextmanager
def streamlit_alone(log: Path) -> Iterator[str]:
    """``streamlit run app.py`` on a free loopback port (its own pipeline): its URL."""
    require_browser()
    port = free_port(HOST)
    with log.open("wb") as out:
        proc = subprocess.Popen(ui_command(HOST, port), cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    service = Service("streamlit", f"http://{HOST}:{port}", "/_stcore/health", proc)
    try:
        try:
            wait_healthy(service, 60)
        except SystemExit as exc:
            pytest.fail(f"{exc}:\n{log.read_text()}")
        yield service.url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


def settled(page: Any) -> None:
    """Wait until no script run is in progress (Streamlit's running indicator is gone) and no
    element of an earlier run is left: the page has finished rendering, so a screenshot shows
    what a user sees."""
    from playwright.sync_api import expect

    expect(
        page.get_by_test_id("stStatusWidget").get_by_test_id(re.compile("stStatusWidgetRunning.*"))
    ).to_have_count(0, timeout=30_000)
    # The elements of the run before that this one did not draw are gone too.
    expect(page.locator('[data-stale="true"]')).to_have_count(0, timeout=30_000)


def type_question(page: Any, question: str) -> None:
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Ask", exact=True).click()
    box = page.get_by_label("Your question")
    box.fill(question)
    box.press("Enter")  # commits the text; Streamlit reruns
    expect(box).to_have_value(question)


def ask(page: Any, question: str) -> None:
    type_question(page, question)
    page.get_by_role("button", name="Ask", exact=True).click()
