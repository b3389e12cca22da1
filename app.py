"""VerityRAG in the browser: ``streamlit run app.py`` (``make run`` starts it next to the API).

Two tabs. "Ask a question": the bundled corpus, calibrated once per process; the answer
with its grounding score, the support of each claim, the claims the verifier did not
support (an LLM answer's; dropped, or kept under ``loose``: the bundled pipeline is
extractive, so the section shows only for a pipeline given an LLM answer strategy), the evidence and the agent's
trace, or the refusal with its reason. "Real-time streaming demo": a question refused,
documents streamed in live, the same question answered, an out-of-domain question still
refused.
All the logic lives in ``verityrag``; this file only lays it out.
"""

from __future__ import annotations

import time
from typing import Any

import streamlit as st

from verityrag.config import STRICTNESS_LEVELS
from verityrag.errors import InvalidInputError, LLMError, VerityRAGError
from verityrag.generation.completion import CompleteFn
from verityrag.llm_providers import PROVIDERS, complete_fn_for
from verityrag.pipeline import IN_MEMORY, VerityRAGPipeline
from verityrag.serve.bundled import bundled_pipeline
from verityrag.types import QueryResult
from verityrag.ui.llm_compare import LLMView, llm_side_by_side
from verityrag.ui.streaming_story import StoryEvent, StoryOutcome, run_streaming_story
from verityrag.ui.views import ResultView, learned_checks_line, result_view

SAMPLE_QUESTIONS = (
    "What BBC radio station will carry the game in the United Kingdom?",
    "Which company did Tesla work for in 1881?",
    "What is the largest bone in the human body?",
    "What is the atomic number of oxygen?",
    "Who did Tesla work for in New York in 1884?",
)
CUSTOM = "(type your own)"
NO_LLM = "(none)"
PROVIDER_HELP = (
    "local: the offline Qwen2.5-Coder-0.5B-Instruct chat model; gemma: the offline gemma-3-270m base "
    "model (first use of either loads it, ~1 min); gemini / anthropic / openai: keys and URLs from the "
    "environment (see docs/llm.md)."
)


@st.cache_resource(show_spinner="Loading the bundled corpus and calibrating (a few seconds, once)...")
def ask_pipeline() -> VerityRAGPipeline:
    # In memory: `make run --data-dir` persists the API's index; two processes must not share one store.
    return bundled_pipeline(store_dir=IN_MEMORY)


@st.cache_resource(show_spinner="Loading the LLM provider...")
def llm_for(provider: str) -> CompleteFn:
    return complete_fn_for(provider)


def show_llm(view: LLMView) -> None:
    st.markdown(f"**LLM ({view.provider}) on the same evidence**")
    if view.error:
        st.error(view.error)
        return
    if view.refused or not view.answer:
        st.info("The LLM said the evidence does not answer the question.")
        return
    verdict = (
        "every sentence supported by what it cites"
        if view.all_supported
        else "NOT every sentence is supported: VerityRAG would refuse this answer"
    )
    st.write(view.answer)
    st.caption(f"{view.latency_ms / 1000:.1f} s; verifier: {verdict}")
    st.table(view.sentences)


def ask_llm(provider: str, result: QueryResult) -> LLMView:
    try:
        complete_fn = llm_for(provider)
    except LLMError as exc:  # e.g. a missing key: shown, not raised
        return LLMView(provider, None, error=f"{type(exc).__name__}: {exc}")
    return llm_side_by_side(provider, complete_fn, result.question, result.evidence)


def show_result(view: ResultView) -> None:
    if view.abstained:
        st.warning(f"**Abstained** - reason `{view.reason}`: {view.reason_text}")
    elif view.short_answer:
        st.success(f"**{view.short_answer}**\n\n{view.answer or ''}")
    else:
        st.success(view.answer or "")
    metrics = [("Confidence", f"{view.confidence:.2f}"), ("Latency", f"{view.latency_ms:.1f} ms")]
    if not view.abstained:  # a refusal has no answer to ground
        metrics.insert(0, ("Grounding", f"{view.grounding:.2f}"))
    for col, (label, value) in zip(st.columns(len(metrics)), metrics, strict=True):
        col.metric(label, value)
    if view.claims:
        st.markdown("**Support per claim** (0..1; the answer is as grounded as its weakest claim)")
        st.table(view.claims)
    if view.citations:
        st.markdown("**Citations**")
        st.table(view.citations)
    if view.unsupported_claims:
        with st.expander(view.unsupported_label, expanded=True):
            for claim in view.unsupported_claims:
                st.markdown(f"- {claim}")
    with st.expander(view.evidence_label):
        for ev in view.evidence:
            st.markdown(f"**{ev['rank']}. {ev['title']}** `{ev['chunk_id']}` score {ev['score']}")
            st.caption(ev["text"])
    with st.expander("Agent trace"):
        st.table([{"stage": t["stage"], "ms": t["ms"]} for t in view.trace])
        st.json([{"stage": t["stage"], **t["details"]} for t in view.trace], expanded=False)


def ask_tab() -> None:
    pipeline = ask_pipeline()
    stats = pipeline.stats()
    st.caption(
        f"{stats['documents']} documents, {stats['chunks']} chunks (SQuAD 1.1 dev articles). "
        "The system answers with a cited sentence from them, or refuses."
    )
    st.caption(learned_checks_line(stats["learned_checks"]))
    choice = st.selectbox("Sample question", (*SAMPLE_QUESTIONS, CUSTOM), key="sample")
    typed = st.text_input("Your question", key="question", disabled=choice != CUSTOM)
    question = typed if choice == CUSTOM else choice
    cols = st.columns(2)
    # The configured level (VERITYRAG_STRICTNESS, VERITYRAG_PROFILE) is the default, as k's is.
    strictness = cols[0].selectbox(
        "Strictness",
        STRICTNESS_LEVELS,
        index=STRICTNESS_LEVELS.index(pipeline.settings.strictness),
        key="strictness",
    )
    k = cols[1].slider("Evidence chunks (k)", 1, 10, pipeline.settings.top_k, key="k")
    provider = st.selectbox(
        "Also ask an LLM on the same evidence", (NO_LLM, *PROVIDERS), key="llm", help=PROVIDER_HELP
    )
    if st.button("Ask", type="primary", key="ask"):
        if not question.strip():
            st.error("Type a question first.")
            return
        settings = pipeline.settings.replace(strictness=strictness)
        try:
            result = pipeline.query(question, k=k, settings=settings)
        except InvalidInputError as exc:  # e.g. a question over max_query_chars: said, not a traceback
            st.error(f"Cannot ask this: {exc.field} {exc.problem}.")
            return
        except VerityRAGError as exc:  # e.g. an Elasticsearch backend that is down
            st.error(f"The query failed: {type(exc).__name__}: {exc}")
            return
        view = result_view(result, max_evidence=k)
        if provider == NO_LLM:
            show_result(view)
            return
        left, right = st.columns(2)
        with left:
            st.markdown("**VerityRAG**")
            show_result(view)
        with right, st.spinner(f"Asking {provider}..."):
            show_llm(ask_llm(provider, result))


def _story_line(event: StoryEvent) -> str:
    if event.kind == "result" and event.result is not None:
        view = result_view(event.result)
        quote = f"\n\n> {view.answer}" if view.answer else ""
        return f"**{view.headline}**  \n{event.text}{quote}"
    return f"**{event.step}.** {event.text}" if event.kind in {"setup", "ask"} else event.text


def streaming_tab() -> None:
    st.markdown(
        "A pipeline starts **without** the 92 Nikola Tesla documents and is asked about Tesla: "
        "it refuses. The documents then stream in one by one, each searchable the moment it "
        "lands, with no reindex. The same question is answered with a citation; a question "
        "about something the corpus never covers is still refused."
    )
    delay = st.slider("Seconds between arriving documents", 0.0, 0.2, 0.02, 0.01, key="delay")
    if not st.button("Run the demo", type="primary", key="run_demo"):
        return
    outcome = StoryOutcome()
    progress = st.progress(0.0, text="waiting for documents")
    log: list[str] = []
    started = time.perf_counter()
    with st.status("Running the streaming demo...", expanded=True) as status:
        for event in run_streaming_story(outcome, delay=delay):
            if event.kind == "ingested":
                progress.progress(event.done / event.total, text=f"{event.done}/{event.total}: {event.text}")
                continue
            log.append(_story_line(event))
            st.markdown(log[-1])
        state: Any = "complete" if outcome.ok else "error"
        status.update(
            label=f"Demo finished in {time.perf_counter() - started:.1f} s", state=state, expanded=True
        )
    if outcome.ok:
        st.success("Refused, then streamed in, then answered with a citation; out-of-domain still refused.")
    else:
        st.error("The story broke: " + "; ".join(outcome.failures))


def main() -> None:
    st.set_page_config(page_title="VerityRAG", layout="wide")
    st.title("VerityRAG")
    st.caption("Answers questions over documents that keep arriving, and refuses rather than hallucinates.")
    ask, stream = st.tabs(["Ask a question", "Real-time streaming demo"])
    with ask:
        ask_tab()
    with stream:
        streaming_tab()


main()
