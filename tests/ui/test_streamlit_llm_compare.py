"""The Ask tab's side-by-side LLM answer, against a real local OpenAI-compatible HTTP server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[2] / "app.py"
ANSWER = "In 1884 Tesla emigrated to the United States to work for Thomas Edison in New York City [1]."
pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


class _ChatCompletions(BaseHTTPRequestHandler):
    prompts: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.prompts.append(body["messages"][-1]["content"])
        reply = json.dumps(
            {
                "model": body["model"],
                "choices": [{"message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 12},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatCompletions)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("OPENAI_MODEL", "scripted")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    try:
        yield url
    finally:
        server.shutdown()


def _ask(provider: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=180)
    at.run()
    at.selectbox(key="sample").select("Who did Tesla work for in New York in 1884?").run()
    at.selectbox(key="llm").select(provider).run()
    at.button(key="ask").click().run()
    assert not at.exception, at.exception
    return at


def test_llm_answer_shown_beside_the_pipeline_with_verdicts(openai_server: str) -> None:
    at = _ask("openai")
    assert "Edison" in at.success[0].value  # the pipeline's own answer, unchanged
    markdown = "\n".join(m.value for m in at.markdown)
    assert "LLM (openai) on the same evidence" in markdown
    verdicts = next(t.value for t in at.table if "supported" in t.value.columns)  # the LLM side's
    assert verdicts["sentence"].str.contains("Thomas Edison").all()
    assert verdicts["supported"].all()
    # The LLM was shown the pipeline's evidence, numbered.
    assert "[1]" in _ChatCompletions.prompts[-1]
    assert "Edison" in _ChatCompletions.prompts[-1]


def test_llm_without_its_key_is_an_error_on_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    at = _ask("anthropic")
    assert "Edison" in at.success[0].value
    assert "ANTHROPIC_API_KEY" in at.error[0].value
