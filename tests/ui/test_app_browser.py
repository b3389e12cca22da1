"""The Streamlit app served for real and used in headless Chromium (Debian ``chromium``).

Starts ``streamlit run app.py`` on a free loopback port, opens it with Playwright driving
/usr/bin/chromium, asks a question and waits for the answer, and saves a screenshot to
test-artifacts/. Skipped when Chromium is absent, unless VERITYRAG_REQUIRE_BROWSER=1
(CI sets it, so there a missing browser fails the run instead of hiding it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image, ImageStat

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

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def _require_browser() -> None:
    if Path(CHROMIUM).exists():
        return
    if os.environ.get("VERITYRAG_REQUIRE_BROWSER") == "1":
        pytest.fail(f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    pytest.skip("Chromium not installed (apt-get install chromium); CI requires it")


@pytest.fixture(scope="module")
def streamlit_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _require_browser()
    port = free_port(HOST)
    log = tmp_path_factory.mktemp("streamlit") / "server.log"
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


def test_app_answers_in_headless_chromium(streamlit_url: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "streamlit_ask_tab.png"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1400})
        try:
            page.goto(streamlit_url, wait_until="domcontentloaded")
            # The first run loads and calibrates the pipeline; the Ask button appears after.
            page.get_by_role("button", name="Ask", exact=True).click(timeout=120_000)
            expect(page.get_by_text("BBC Radio 5 Live").first).to_be_visible(timeout=60_000)
            expect(page.get_by_text("Grounding", exact=True)).to_be_visible()
            page.screenshot(path=str(shot), full_page=True)

            page.get_by_role("tab", name="Real-time streaming demo").click()
            page.get_by_role("button", name="Run the demo", exact=True).click()
            # The closing verdict only appears once all five steps have run and held.
            expect(page.get_by_text("Refused, then streamed in, then answered")).to_be_visible(
                timeout=120_000
            )
            expect(page.get_by_text("Demo finished in")).to_be_visible()
            expect(page.get_by_text("Budapest").first).to_be_visible()
            page.screenshot(path=str(ARTIFACTS / "streamlit_streaming_tab.png"), full_page=True)
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "streamlit_failure.png"), full_page=True)
            print("page text at failure:\n" + page.inner_text("body"))
            raise
        finally:
            browser.close()
    with Image.open(shot) as img:
        assert img.width >= 1000
        # A blank or error page is near-uniform; a rendered answer page is not.
        assert max(ImageStat.Stat(img.convert("L")).stddev) > 10
