"""The Streamlit app, driven by Streamlit's AppTest: both tabs, a real pipeline on the bundled corpus."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[2] / "app.py"
pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


@pytest.fixture
def app() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=180)
    at.run()
    assert not at.exception, at.exception
    return at


def test_app_has_both_tabs(app: AppTest) -> None:
    assert app.title[0].value == "VerityRAG"
    assert [t.label for t in app.tabs] == ["Ask a question", "Real-time streaming demo"]
    assert "documents" in app.caption[1].value


def test_ask_answers_with_citation_and_claim_support(app: AppTest) -> None:
    app.selectbox(key="sample").select("Which company did Tesla work for in 1881?").run()
    app.button(key="ask").click().run()
    assert not app.exception, app.exception
    assert "Budapest" in app.success[0].value
    assert [m.label for m in app.metric] == ["Grounding", "Confidence", "Latency"]
    claims = app.table[0].value
    assert "support" in claims.columns
    assert len(claims) >= 1
    assert claims["support"].between(0, 1).all()
    citations = app.table[1].value
    assert citations["doc_id"].str.startswith("squad-nikola-tesla").any()


def test_ask_refuses_out_of_domain_with_reason(app: AppTest) -> None:
    app.selectbox(key="sample").select("What is the largest bone in the human body?").run()
    app.button(key="ask").click().run()
    assert not app.success
    assert "Abstained" in app.warning[0].value
    assert "reason" in app.warning[0].value


def test_custom_question_must_not_be_empty(app: AppTest) -> None:
    app.selectbox(key="sample").select("(type your own)").run()
    app.text_input(key="question").input("   ").run()
    app.button(key="ask").click().run()
    assert "Type a question first." in app.error[0].value


def test_streaming_demo_tells_the_story(app: AppTest) -> None:
    app.slider(key="delay").set_value(0.0).run()
    app.button(key="run_demo").click().run()
    assert not app.exception, app.exception
    assert not app.error, [e.value for e in app.error]
    assert "answered with a citation" in app.success[-1].value
    text = "\n".join(m.value for m in app.markdown)
    assert "Abstained" in text
    assert "Budapest" in text
