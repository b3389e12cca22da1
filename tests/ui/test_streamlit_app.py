"""The Streamlit app, driven by Streamlit's AppTest: its tabs, a real pipeline on the bundled corpus
(in this process: no API address is given)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from verityrag.pipeline import VerityRAGPipeline
from verityrag.types import (
    CASE_HEADLINES,
    AbstainReason,
    Chunk,
    Citation,
    CitedSentence,
    ClaimSupport,
    GroundingReport,
    Hit,
    QueryResult,
    ReplyCase,
    ShortAnswer,
    TraceStep,
)
from verityrag.ui.views import (
    CHECKS_OFF_TEXT,
    UNSUPPORTED_DROPPED,
    UNSUPPORTED_KEPT,
    Marked,
    learned_checks_line,
    result_view,
)

APP = Path(__file__).resolve().parents[2] / "app.py"
pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


@pytest.fixture
def app() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=180)
    at.run()
    assert not at.exception, at.exception
    return at


def _page_text(at: AppTest) -> str:
    parts = [
        e.value
        for kind in ("title", "caption", "markdown", "success", "warning", "error")
        for e in at.get(kind)
    ]
    parts += [
        w.label for kind in ("text_input", "selectbox", "slider", "expander", "tab") for w in at.get(kind)
    ]
    parts += [str(getattr(w, "help", "") or "") for kind in ("selectbox", "slider") for w in at.get(kind)]
    return "\n".join(str(p) for p in parts)


def test_app_has_its_tabs_and_says_how_answers_are_checked(app: AppTest) -> None:
    assert app.title[0].value == "VerityRAG"
    assert [t.label for t in app.tabs] == ["Ask", "Documents", "Add documents", "Real-time streaming demo"]
    assert "documents" in app.caption[1].value
    [about] = [e for e in app.expander if e.label.startswith("About")]
    assert CHECKS_OFF_TEXT in [m.value for m in about.markdown]  # no learned check switched on
    text = _page_text(app)
    assert "VERITYRAG_" not in text  # no environment variable names on the page
    assert "make " not in text  # nor make targets


def test_typed_question_is_asked_without_picking_anything(app: AppTest) -> None:
    assert not app.text_input(key="question").disabled
    app.text_input(key="question").input("What is the largest bone in the human body?").run()
    app.button(key="ask").click().run()
    assert not app.exception, app.exception
    # Refused, in the words of its case: what a passage may say, or that nothing says it.
    boxes = [*app.warning, *app.info]
    assert any("not sure enough to answer" in b.value or "Not found" in b.value for b in boxes)


def test_picking_an_example_puts_it_in_the_question_box(app: AppTest) -> None:
    app.selectbox(key="sample").select("What is the atomic number of oxygen?").run()
    assert app.text_input(key="question").value == "What is the atomic number of oxygen?"


def test_checks_line_names_each_check_and_where_its_threshold_came_from() -> None:
    line = learned_checks_line(
        {
            "answerability": {
                "threshold": 0.05,
                "threshold_from": "calibration",
                "model_dir": "a",
                "sufficiency_threshold": 0.35,
            },
            "reader": {"threshold": 0.0, "threshold_from": "calibration", "model_dir": "r"},
            "guard": {"threshold": 0.9, "threshold_from": "settings", "model_dir": "g"},
        }
    )
    assert line == (
        "Learned checks: answerability (threshold 0.05, fitted on the calibration questions; "
        "fitted with the sufficiency gate at 0.35), "
        "reader (threshold 0, fitted on the calibration questions; scores only, never refuses), "
        "guard (threshold 0.9, set in the settings)."
    )


def _developer_details(app: AppTest) -> Any:
    [details] = [e for e in app.expander if e.label.startswith("Developer details")]
    return details


def test_ask_answers_first_with_the_quoted_sentence_and_its_source(app: AppTest) -> None:
    app.selectbox(key="sample").select("Who did Tesla work for in New York in 1884?").run()
    app.button(key="ask").click().run()
    assert not app.exception, app.exception
    answer = app.success[0].value
    assert "Edison" in answer
    assert answer.startswith("### ")  # the short answer first,
    assert "\n\n> " in answer
    assert ":orange-background[" in answer
    sources = [m.value for m in app.markdown if m.value.startswith("**[1] ")]
    assert sources
    assert "Nikola Tesla" in sources[0]
    details = _developer_details(app)
    assert [m.label for m in details.metric] == ["Grounding", "Confidence", "Latency"]
    claims = details.table[0].value
    assert "support" in claims.columns
    assert len(claims) >= 1
    assert claims["support"].between(0, 1).all()
    citations = details.table[-2].value
    assert citations["doc_id"].str.startswith("squad-nikola-tesla").any()
    # An extractive answer is verbatim evidence: no unsupported-claims section.
    assert not [e.label for e in app.expander if e.label.startswith("Claims the verifier")]


def test_ask_refuses_out_of_domain_in_words_and_shows_what_was_found(app: AppTest) -> None:
    app.selectbox(key="sample").select("What is the largest bone in the human body?").run()
    app.button(key="ask").click().run()
    assert not app.success
    assert app.info[0].value.startswith("**Not found in the documents.** ")
    assert "What was found instead" in "\n".join(m.value for m in app.markdown)
    labels = [m.label for m in _developer_details(app).metric]
    assert "Grounding" not in labels  # a refusal has no answer to ground: no "Grounding 0.00"
    assert "Refusal reason" in labels


def test_question_must_not_be_empty(app: AppTest) -> None:
    app.text_input(key="question").input("   ").run()
    app.button(key="ask").click().run()
    assert "Type a question first." in app.error[0].value


def test_question_over_the_length_limit_is_an_error_not_a_traceback(app: AppTest) -> None:
    app.text_input(key="question").input("Who did Tesla work for? " * 100).run()
    app.button(key="ask").click().run()
    assert not app.exception, app.exception
    assert app.error[0].value == "Cannot ask this: question is 2,400 characters; the limit is 2,000."


def test_evidence_lists_every_chunk_asked_for(app: AppTest) -> None:
    app.selectbox(key="sample").select("Who did Tesla work for in New York in 1884?").run()
    app.slider(key="k").set_value(8).run()
    app.button(key="ask").click().run()
    details = _developer_details(app)
    assert "**Evidence (8 chunks)**" in [m.value for m in details.markdown]
    assert len([m for m in details.markdown if re.match(r"\d+\. \*\*", m.value)]) == 8


def test_claims_table_numbers_the_answer_sentence_from_one(app: AppTest) -> None:
    app.selectbox(key="sample").select("Who did Tesla work for in New York in 1884?").run()
    app.button(key="ask").click().run()
    claims = _developer_details(app).table[0].value
    assert claims["sentence"].tolist() == [1] * len(claims)  # one extractive sentence, not "0.0000"


@pytest.fixture
def fresh_pipeline() -> Iterator[None]:
    """The app's pipeline is cached per process: built again here, and again by the next test."""
    st.cache_resource.clear()
    yield
    st.cache_resource.clear()


def test_strictness_defaults_to_the_configured_level(
    monkeypatch: pytest.MonkeyPatch, fresh_pipeline: None
) -> None:
    monkeypatch.setenv("VERITYRAG_STRICTNESS", "strict")
    at = AppTest.from_file(str(APP), default_timeout=180)
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="strictness").value == "strict"


def _hit(n: int) -> Hit:
    return Hit(Chunk(f"d#{n}", "d", "D", f"Sentence {n}.", n, 0, 12), 1.0 / (n + 1))


def test_view_says_when_it_shows_only_the_first_chunks() -> None:
    result = dataclasses.replace(_llm_result(), evidence=tuple(_hit(n) for n in range(7)))
    assert result_view(result).evidence_label == "Evidence (first 5 of 7 chunks)"
    assert result_view(result, max_evidence=7).evidence_label == "Evidence (7 chunks)"


def test_view_numbers_claim_sentences_from_one_and_rounds_the_signals() -> None:
    claim = ClaimSupport("Tesla worked in Budapest.", 0.91234, {"sentence": 1.0, "lexical": 0.87654})
    result = dataclasses.replace(_llm_result(), grounding=GroundingReport(0.91234, (claim,)))
    assert result_view(result).claims == [
        {"claim": "Tesla worked in Budapest.", "support": 0.912, "sentence": 2, "lexical": 0.877}
    ]


def test_streaming_demo_tells_the_story(app: AppTest) -> None:
    app.slider(key="delay").set_value(0.0).run()
    app.button(key="run_demo").click().run()
    assert not app.exception, app.exception
    assert not app.error, [e.value for e in app.error]
    assert "answered with a citation" in app.success[-1].value
    text = "\n".join(m.value for m in app.markdown)
    refusals = [words for case, words in CASE_HEADLINES.items() if case is not ReplyCase.ANSWERED]
    assert any(words in text for words in refusals)  # refused first, in the words of its case
    assert "Answered, " in text
    assert "Edison" in text


UNSUPPORTED = ("Tesla also invented the telephone.", "He moved to Paris in 1881.")


def _llm_result(*trace: TraceStep, claims: tuple[str, ...] = UNSUPPORTED) -> QueryResult:
    return QueryResult(
        question="q",
        answer="Tesla worked for the Budapest Telephone Exchange.",
        abstained=False,
        abstain_reason=None,
        grounding=GroundingReport(0.9),
        confidence=0.8,
        trace=trace,
        unsupported_claims=claims,
    )


def _grounding(enforced: bool) -> TraceStep:
    return TraceStep("grounding", 1.0, {"score": 0.9, "threshold": 0.5, "claims": 1, "enforced": enforced})


def _llm(strictness: str) -> TraceStep:
    return TraceStep(
        "llm_generation", 1.0, {"strictness": strictness, "unsupported_claims": list(UNSUPPORTED)}
    )


@pytest.mark.parametrize(
    ("trace", "label"),
    [
        ((_llm("balanced"), _grounding(True)), UNSUPPORTED_DROPPED),
        ((_llm("loose"), _grounding(False)), UNSUPPORTED_KEPT),
        ((_llm("strict"),), UNSUPPORTED_DROPPED),  # unverified pipeline: no grounding step
        ((_llm("loose"),), UNSUPPORTED_KEPT),
        ((_llm("lenient"),), UNSUPPORTED_KEPT),  # the Settings/API alias of loose
        ((), UNSUPPORTED_DROPPED),  # nothing recorded: every level but loose drops
    ],
)
def test_view_labels_unsupported_claims_dropped_or_kept(trace: tuple[TraceStep, ...], label: str) -> None:
    view = result_view(_llm_result(*trace))
    assert view.unsupported_claims == list(UNSUPPORTED)
    assert view.unsupported_label == label


def test_view_has_no_unsupported_claims_for_an_extractive_answer() -> None:
    assert result_view(_llm_result(claims=())).unsupported_claims == []


PASSAGE = "Tesla moved in 1881. He worked at the Budapest Telephone Exchange. He left in 1882."
SENTENCE = "He worked at the Budapest Telephone Exchange."


def _extractive_result() -> QueryResult:
    chunk = Chunk("d#0", "d", "Nikola Tesla", PASSAGE, 0, 0, len(PASSAGE))
    start = PASSAGE.index(SENTENCE)
    cit = Citation("d#0", "d", "Nikola Tesla", start, start + len(SENTENCE), source="tesla.pdf")
    at = PASSAGE.index("Budapest Telephone Exchange")
    short = ShortAnswer("Budapest Telephone Exchange", "d#0", at, at + 27, 0.9)
    return dataclasses.replace(
        _llm_result(claims=()),
        answer=SENTENCE,
        sentences=(CitedSentence(SENTENCE, (cit,)),),
        evidence=(Hit(chunk, 0.5),),
        short_answer=short,
    )


def test_view_marks_the_short_answer_inside_the_quoted_sentence() -> None:
    view = result_view(_extractive_result())
    assert view.quote == Marked("He worked at the ", "Budapest Telephone Exchange", ".")


def test_view_quotes_each_cited_passage_with_its_title_and_the_sentence_marked() -> None:
    [source] = result_view(_extractive_result()).sources
    assert (source.title, source.doc_id, source.source) == ("Nikola Tesla", "d", "tesla.pdf")
    assert source.passage == Marked("Tesla moved in 1881. ", SENTENCE, " He left in 1882.")


def test_view_of_a_refusal_shows_what_was_found_one_passage_per_document() -> None:
    refused = dataclasses.replace(
        _llm_result(claims=()),
        answer=None,
        abstained=True,
        abstain_reason=AbstainReason.SUFFICIENCY,
        explanation="the documents found do not cover the question well enough to answer it",
        evidence=(_hit(0), _hit(1), Hit(Chunk("e#0", "e", "E", "x " * 400, 0, 0, 800), 0.1)),
    )
    view = result_view(refused)
    assert view.reason_text == "the documents found do not cover the question well enough to answer it"
    assert [f.doc_id for f in view.found_instead] == ["d", "e"]
    assert len(view.found_instead[1].text) < 420
    assert view.found_instead[1].text.endswith("…")


@pytest.mark.usefixtures("fresh_pipeline")  # it adds documents: the next test gets a new index
def test_added_document_is_answerable_at_once(app: AppTest) -> None:
    app.text_input(key="paste_title").input("Harbour notes")
    app.text_area(key="paste_text").input(ADDED_TEXT)
    app.button(key="add_paste").click().run()
    assert not app.exception, app.exception
    assert any("“Harbour notes” added" in s.value for s in app.success)
    app.text_input(key="question").input(ADDED_QUESTION).run()
    app.button(key="ask").click().run()
    answer = app.success[0].value
    assert "Ilse Varga" in answer, answer
    assert any("Harbour notes" in m.value for m in app.markdown if m.value.startswith("**[1] "))


@pytest.mark.usefixtures("fresh_pipeline")  # it adds documents: the next test gets a new index
def test_your_documents_are_asked_first_and_counted_at_once(app: AppTest) -> None:
    before = int(app.metric[0].value.replace(",", ""))
    app.text_input(key="paste_title").input("Harbour notes")
    app.text_area(key="paste_text").input(ADDED_TEXT)
    app.button(key="add_paste").click().run()
    assert int(app.metric[0].value.replace(",", "")) == before + 1  # not one add behind
    assert any(" 1 passage," in s.value for s in app.success)
    tesla = "Who did Tesla work for in New York in 1884?"
    app.text_input(key="question").input(tesla).run()
    app.button(key="ask").click().run()
    assert not app.success or "Edison" not in app.success[0].value  # not from the demo articles
    app.selectbox(key="collection").select("demo").run()
    app.button(key="ask").click().run()
    assert "Edison" in app.success[0].value


ADDED_TEXT = (
    "The Kellmark lighthouse stands on the northern pier of the harbour. "
    "It was designed by the engineer Ilse Varga and first lit in 1911. "
    "Its lamp can be seen from 40 kilometres away on a clear night."
)
ADDED_QUESTION = "Who designed the Kellmark lighthouse?"


@pytest.mark.parametrize(
    ("strictness", "label"), [("balanced", UNSUPPORTED_DROPPED), ("loose", UNSUPPORTED_KEPT)]
)
def test_ask_lists_unsupported_claims(
    app: AppTest, monkeypatch: pytest.MonkeyPatch, strictness: str, label: str
) -> None:
    # The bundled pipeline answers extractively (never any unsupported claim), so its real
    # result is given an LLM step's trace and claims, as an LLM answer strategy would.
    real_query = VerityRAGPipeline.query

    def query(self: VerityRAGPipeline, *args: Any, **kwargs: Any) -> QueryResult:
        result = real_query(self, *args, **kwargs)
        level = kwargs["settings"].strictness
        # As the agent records it for an LLM answer: loose makes the grounding check informational.
        trace = [_grounding(enforced=level != "loose") if s.stage == "grounding" else s for s in result.trace]
        return dataclasses.replace(result, trace=(_llm(level), *trace), unsupported_claims=UNSUPPORTED)

    monkeypatch.setattr(VerityRAGPipeline, "query", query)
    app.selectbox(key="sample").select("Who did Tesla work for in New York in 1884?").run()
    app.selectbox(key="strictness").select(strictness).run()
    app.button(key="ask").click().run()
    assert not app.exception, app.exception
    assert "Edison" in app.success[0].value
    [section] = [e for e in app.expander if e.label.startswith("Claims the verifier")]
    assert section.label == label
    assert [m.value for m in section.markdown] == [f"- {c}" for c in UNSUPPORTED]
