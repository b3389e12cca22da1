"""VerityRAG in the browser: ``streamlit run app.py`` (``make run`` starts it next to the API).

Three tabs. "Ask": the answer first, the sentence it is quoted from with the exact answer
marked, each source's passage; or the refusal in words with what was found instead; the
figures (support per claim, thresholds, trace) in "Developer details". "Add documents":
paste text or upload files (PDF, HTML, Markdown, DOCX, text), indexed at once, the index's
count updated live. "Real-time streaming demo": a question refused, documents streamed in
live, the same question answered, an out-of-domain question still refused.

Under ``make run`` the app asks the API the launcher started (``streamlit run app.py --
--api-url URL``), so both serve one index; alone, it builds the bundled pipeline in this
process (:mod:`verityrag.ui.answer_source`). All the logic lives in ``verityrag``; this file lays it out.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

import streamlit as st

from verityrag.config import STRICTNESS_LEVELS, Settings
from verityrag.errors import InvalidInputError, LLMError, VerityRAGError
from verityrag.index.collections import (
    ALL_COLLECTIONS,
    DEMO_COLLECTION,
    OWN_COLLECTION,
    YOURS_FIRST,
    only_demo,
)
from verityrag.llm import PROVIDERS, complete_fn_for
from verityrag.llm.completion import CompleteFn
from verityrag.pipeline import IN_MEMORY, VerityRAGPipeline
from verityrag.serve.bundled import bundled_pipeline
from verityrag.types import FAIRLY_SURE, QueryResult, ReplyCase
from verityrag.ui.answer_source import (
    AddedDocument,
    Backend,
    ListedDocument,
    api_url_from_args,
    backend_for,
    document_id,
)
from verityrag.ui.llm_compare import LLMView, llm_side_by_side
from verityrag.ui.streaming_story import StoryEvent, StoryOutcome, run_streaming_story
from verityrag.ui.views import (
    ABOUT_TEXT,
    ResultView,
    blockquote,
    learned_checks_line,
    marked_markdown,
    md_escape,
    result_view,
)

T = TypeVar("T")

SAMPLE_QUESTIONS = (
    "Who did Tesla work for in New York in 1884?",
    "What network broadcast Super Bowl 50 in the United States?",
    "What is the atomic number of oxygen?",
    "What is the largest bone in the human body?",
)
UPLOAD_TYPES = ("pdf", "html", "htm", "md", "markdown", "docx", "txt", "csv")
NO_LLM = "(none)"
PROVIDER_HELP = (
    "local: the offline Qwen2.5-Coder-0.5B-Instruct chat model; gemma: the offline gemma-3-270m base "
    "model (first use of either loads it, ~1 min); gemini / anthropic / openai: the hosted models, "
    "with the keys the server was given (docs/llm.md)."
)


@st.cache_resource(show_spinner="Loading the bundled corpus and calibrating (a few seconds, once)...")
def ask_pipeline() -> VerityRAGPipeline:
    # Only without the API (streamlit run app.py alone); in memory: two processes never share a store.
    return bundled_pipeline(store_dir=IN_MEMORY, collection=DEMO_COLLECTION, settings=Settings.from_env())


@st.cache_resource(show_spinner=False)
def backend() -> Backend:
    return backend_for(api_url_from_args(sys.argv[1:]), ask_pipeline)


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


def read_document(doc_id: str, key: str) -> None:
    """A document opened in the app, in a closed expander: its parsed text, then its passages."""
    with st.expander("Open the document"):
        show_document(backend(), doc_id, key)


def show_document(source: Backend, doc_id: str, key: str) -> None:
    """The document as it was parsed and indexed: its text, then the passages it was cut into."""
    try:
        doc = source.open_document(doc_id)
    except VerityRAGError as exc:
        st.error(f"The document cannot be read: {exc}")
        return
    if doc is None:
        st.caption("This document is no longer in the index.")
        return
    about = [f"id `{doc.doc_id}`", f"{len(doc.text):,} characters", plural(len(doc.passages), "passage")]
    if doc.metadata.get("format"):
        about.insert(1, str(doc.metadata["format"]))
    st.caption(", ".join(about))
    with st.container(height=320, key=f"text-{key}"):
        st.markdown(md_escape(doc.text))
    st.markdown(f"**Passages** ({len(doc.passages)}): each is searched and quoted on its own")
    for i, passage in enumerate(doc.passages, 1):
        st.markdown(f"{i}.\n" + blockquote(md_escape(passage)))


def show_answer(view: ResultView) -> None:
    """The answer first: the short answer, the sentence it is quoted from with it marked, the
    source; how sure in words, the number beside. An answer not sure enough to trust at a glance
    is shown in blue, not green."""
    quote = marked_markdown(view.quote) if view.quote else md_escape(view.answer or "")
    headline = f"### {md_escape(view.short_answer)}\n\n" if view.short_answer else ""
    box = st.success if view.confidence >= FAIRLY_SURE else st.info  # under it: "not sure"
    box(f"{headline}{blockquote(quote)}\n\n**{md_escape(view.said)}**")
    titles = ", ".join(dict.fromkeys(s.title or s.doc_id for s in view.sources))
    st.caption(
        f"Quoted from {titles or 'the documents'}. Grounding {view.grounding:.2f} "
        f"(how well the cited passage supports the answer, 0-1); {view.latency_ms:.0f} ms."
    )
    if view.sources:
        st.markdown("**Sources**")
        opened: set[str] = set()  # a document cited twice is opened (and fetched) once
        for i, source in enumerate(view.sources, 1):
            where = f" ({md_escape(source.source)})" if source.source else ""
            st.markdown(
                f"**[{i}] {md_escape(source.title or source.doc_id)}**{where}\n\n"
                + blockquote(marked_markdown(source.passage, "**{}**"))
            )
            if source.doc_id not in opened:
                opened.add(source.doc_id)
                read_document(source.doc_id, f"source-{i}")


def show_refusal(view: ResultView) -> None:
    """Which case in words, why, then what to read: the passage that may say it, both sides of a
    disagreement, or what was found instead."""
    why = md_escape(view.why or "of its checks")
    if view.case == ReplyCase.SOURCES_DISAGREE:
        st.error(f"**{md_escape(view.said)}.** {why}.", icon=":material/balance:")
        if view.disagreeing:
            st.table([{"the documents say": d["value"], "source": d["source"]} for d in view.disagreeing])
    elif view.case == ReplyCase.NOT_SURE:
        st.warning(f"**{md_escape(view.said)}.** {why}.", icon=":material/search:")
        if view.candidate is not None:
            title = md_escape(view.candidate.title or view.candidate.doc_id)
            st.markdown(
                f"**The passage to read: {title}**\n\n"
                + blockquote(marked_markdown(view.candidate.passage, "**{}**"))
            )
            read_document(view.candidate.doc_id, "candidate")
    else:
        st.info(f"**{md_escape(view.said)}.** {why}.")
    st.caption(f"Confidence that refusing is right: {view.confidence:.2f}; {view.latency_ms:.0f} ms.")
    if view.case == ReplyCase.NOT_SURE and view.candidate is not None:
        return
    if view.found_instead:
        st.markdown("**What was found instead** (not enough to answer)")
        for i, found in enumerate(view.found_instead, 1):
            title = md_escape(found.title or found.doc_id)
            st.markdown(f"**{title}**\n\n" + blockquote(md_escape(found.text)))
            read_document(found.doc_id, f"found-{i}")
    else:
        st.caption("Nothing related was found in the documents.")


def show_developer_details(view: ResultView) -> None:
    with st.expander("Developer details: scores, thresholds, evidence, trace"):
        figures = [("Confidence", f"{view.confidence:.2f}"), ("Latency", f"{view.latency_ms:.1f} ms")]
        if not view.abstained:  # a refusal has no answer to ground
            figures.insert(0, ("Grounding", f"{view.grounding:.2f}"))
        else:
            figures.insert(0, ("Refusal reason", view.reason or "?"))
        for col, (label, value) in zip(st.columns(len(figures)), figures, strict=True):
            col.metric(label, value)
        if view.claims:
            st.markdown("**Support per claim** (0..1; the answer is as grounded as its weakest claim)")
            st.table(view.claims)
        if view.decisions:
            st.markdown("**Checks** (score against threshold)")
            st.table(view.decisions)
        if view.citations:
            st.markdown("**Citations**")
            st.table(view.citations)
        st.markdown(f"**{view.evidence_label}**")
        for ev in view.evidence:
            score = f" score {ev['score']}" if ev["score"] else ""
            st.markdown(f"{ev['rank']}. **{md_escape(ev['title'])}** `{ev['chunk_id']}`{score}")
            st.caption(ev["text"])
        st.markdown("**Agent trace**")
        st.table([{"stage": t["stage"], "ms": t["ms"]} for t in view.trace])
        st.json([{"stage": t["stage"], **t["details"]} for t in view.trace], expanded=False)


def show_result(view: ResultView) -> None:
    if view.abstained:
        show_refusal(view)
    else:
        show_answer(view)
    if view.unsupported_claims:
        with st.expander(view.unsupported_label, expanded=True):
            for claim in view.unsupported_claims:
                st.markdown(f"- {claim}")
    show_developer_details(view)


def use_sample() -> None:
    """Picking an example puts it in the question box, where it can be edited."""
    if st.session_state.get("sample"):
        st.session_state["question"] = st.session_state["sample"]


def reached(read: Callable[[], T]) -> T | None:
    """What ``read`` gets from the index, or None once the page says the index is not reachable."""
    try:
        return read()
    except VerityRAGError as exc:
        st.error(f"The documents are not reachable: {exc}")
        return None


def ask_tab() -> None:
    source = backend()
    stats = reached(source.stats)
    if stats is None:
        return
    # The index's size when the page opened, for the count of arrivals since (Add documents): taken
    # by the first tab drawn, before a rerun (a question typed at once) can cut the first run short.
    st.session_state.setdefault("documents_at_open", stats["documents"])
    st.caption(
        f"{plural(stats['documents'], 'document')}, {plural(stats['chunks'], 'passage')}. The answer "
        "is a sentence quoted from them, with its source, or a refusal that says why."
    )
    # The examples are about the bundled articles: offered (and one put in the box) only when
    # those are what a question asks.
    try:
        sizes: dict[str, int] | None = source.collections()
    except VerityRAGError:  # an API from before collections: ask as it does by default
        sizes = None
    demo = asks_the_demo(sizes)
    if demo:
        st.session_state.setdefault("question", SAMPLE_QUESTIONS[0])
    question = st.text_input("Your question", key="question", placeholder="Ask about your documents")
    if demo:
        st.selectbox(
            "Or pick an example",
            SAMPLE_QUESTIONS,
            index=None,
            key="sample",
            on_change=use_sample,
            placeholder="Example questions about the bundled articles",
        )
    settings = source.settings
    with st.expander("Answer settings"):
        cols = st.columns(2)
        strictness = cols[0].selectbox(
            "Strictness",
            STRICTNESS_LEVELS,
            index=STRICTNESS_LEVELS.index(settings.strictness),  # the configured level is the default
            key="strictness",
            help="How strictly the answer must be supported by its passage before it is shown.",
        )
        k = cols[1].slider("Passages to read (k)", 1, 10, settings.top_k, key="k")
        collection = collection_choice(sizes)
        provider = st.selectbox(
            "Also ask an LLM on the same passages", (NO_LLM, *PROVIDERS), key="llm", help=PROVIDER_HELP
        )
    with st.expander("About: how answers are checked"):
        st.markdown(ABOUT_TEXT)
        st.markdown(learned_checks_line(stats.get("learned_checks") or {}))
    if st.button("Ask", type="primary", key="ask"):
        if not question.strip():
            st.error("Type a question first.")
            return
        try:
            result = source.query(question, k=k, strictness=strictness, collection=collection)
        except InvalidInputError as exc:  # e.g. a question over max_query_chars: said, not a traceback
            st.error(f"Cannot ask this: {exc.field} {exc.problem}.")
            return
        except VerityRAGError as exc:  # e.g. an Elasticsearch backend, or the API, that is down
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


def asks_the_demo(sizes: dict[str, int] | None) -> bool:
    """Whether a question asks the bundled articles: chosen under Answer settings, or the index
    holds no documents of the user's own (``sizes`` per collection; None: an API from before
    collections, which asks them)."""
    choice = st.session_state.get("collection")
    if choice == DEMO_COLLECTION:
        return True
    if choice not in (None, YOURS_FIRST):
        return False
    return sizes is None or only_demo(sizes)


def plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def collection_label(name: str, sizes: dict[str, int]) -> str:
    if name == YOURS_FIRST:
        mine = sum(n for c, n in sizes.items() if c != DEMO_COLLECTION)
        return f"Your documents ({mine:,}; the demo only while you have none)"
    if name == ALL_COLLECTIONS:
        return f"All documents ({sum(sizes.values()):,})"
    shown = "Your documents in no collection" if name == OWN_COLLECTION else name
    return f"{shown} ({sizes.get(name, 0):,})"


def collection_choice(sizes: dict[str, int] | None) -> str | None:
    """Which documents to ask: yours first (the default), all, or one collection (``sizes`` per
    collection; None: an API from before collections, asked as it does by default)."""
    if sizes is None:
        return None
    names = [YOURS_FIRST, ALL_COLLECTIONS, *(c for c in sorted(sizes) if c)]
    choice = st.selectbox(
        "Documents to ask",
        names,
        format_func=lambda name: collection_label(name, sizes),
        key="collection",
        help="Your documents are asked as soon as there are any; the bundled articles are the "
        f"'{DEMO_COLLECTION}' collection, asked when there is nothing else or when chosen here.",
    )
    return None if choice == YOURS_FIRST else choice


def add_text(source: Backend, title: str, text: str, metadata: dict[str, Any]) -> AddedDocument | None:
    """Add one document; a refused one (empty, too long) is said on the page, not raised."""
    try:
        return source.add_document(document_id(title, text), title, text, metadata)
    except InvalidInputError as exc:
        st.error(f"Not added: {exc.field} {exc.problem}.")
    except VerityRAGError as exc:
        st.error(f"Not added: {type(exc).__name__}: {exc}")
    return None


def added_line(doc: AddedDocument) -> str:
    what = "replaced" if doc.replaced else "added"
    kind = f", {doc.format}" if doc.format else ""
    return (
        f"“{doc.title}” {what}: {plural(doc.n_chunks, 'passage')}{kind}, searchable now (id `{doc.doc_id}`)"
    )


@st.fragment(run_every=2.0)
def index_count() -> None:
    """The index's size, polled: documents added anywhere (here, or through the API) show up."""
    try:
        stats = backend().stats()
    except VerityRAGError as exc:
        st.caption(f"The index is not reachable: {exc}")
        return
    first = st.session_state.setdefault("documents_at_open", stats["documents"])
    arrived = stats["documents"] - first
    st.metric(
        "Documents in the index",
        f"{stats['documents']:,}",
        delta=f"{arrived:+,} since this page opened" if arrived else None,
        help="Updated every 2 seconds, whoever adds them (this page, another one, the API).",
    )


def add_tab() -> None:
    source = backend()
    st.markdown(
        "Add your own documents: they are indexed the moment they arrive and can be asked about "
        "in the Ask tab at once" + (", and through the API." if source.api_url else ".")
    )
    count_slot = st.container()  # filled after the forms: the count includes what they just added
    added: list[str] = st.session_state.setdefault("added", [])
    with st.form("paste", clear_on_submit=True):
        title = st.text_input("Title", key="paste_title", placeholder="e.g. Meeting notes, 3 March")
        text = st.text_area("Text", key="paste_text", height=180, placeholder="Paste the document's text")
        if st.form_submit_button("Add text", type="primary", key="add_paste"):
            if not text.strip():
                st.error("Paste some text first.")
            else:
                doc = add_text(source, title.strip() or text.strip().split("\n")[0][:80], text, {})
                if doc is not None:
                    added.append(added_line(doc))
    with st.form("upload", clear_on_submit=True):
        files = st.file_uploader(
            "Files (PDF, HTML, Markdown, Word .docx, plain text)",
            type=list(UPLOAD_TYPES),
            accept_multiple_files=True,
            key="upload_files",
        )
        if st.form_submit_button("Add these files", type="primary", key="add_files"):
            for upload in files or []:
                try:
                    doc = source.add_file(upload.name, upload.getvalue(), upload.type)
                except InvalidInputError as exc:  # names the file and why
                    st.error(f"Not added: {exc.problem}")
                    continue
                except VerityRAGError as exc:
                    st.error(f"Not added: {upload.name}: {type(exc).__name__}: {exc}")
                    continue
                added.append(added_line(doc))
    with count_slot:
        index_count()
    if len(added) > st.session_state.setdefault("added_shown", 0):
        # The tabs before this one were drawn before these documents came: drawn again with them.
        st.session_state["added_shown"] = len(added)
        st.rerun()
    if added:
        st.markdown("**Added in this session**")
        for line in reversed(added):
            st.success(line)
    demo_removal(source)


def demo_removal(source: Backend) -> None:
    """The bundled articles (the demo collection) can go once you have documents of your own."""
    try:
        demo = source.collections().get(DEMO_COLLECTION, 0)
    except VerityRAGError:
        return
    if not demo:
        return
    with st.expander(f"The bundled demo articles ({plural(demo, 'document')})"):
        st.caption(
            "They are asked only while you have no documents of your own, or when chosen under "
            "Answer settings. Removing them frees the index; they are not loaded again."
        )
        if st.button("Remove the demo articles", key="remove_demo"):
            removed = source.remove_collection(DEMO_COLLECTION)
            st.success(f"Removed {plural(removed, 'demo document')}.")


#: Documents listed per page in the Documents tab.
DOCS_PER_PAGE = 20
ANY_COLLECTION = "(every collection)"


def documents_tab() -> None:
    """The documents in the index: a page at a time, searched by title, filtered by collection;
    one opened as its parsed text and passages, or deleted, or a whole collection deleted."""
    source = backend()
    sizes = reached(source.collections)
    if sizes is None:
        return
    left, right = st.columns([2, 1])
    words = left.text_input("Search by title", key="doc_search", placeholder="words in the title")
    names = [ANY_COLLECTION, *sorted(sizes)]
    chosen = right.selectbox(
        "Collection",
        names,
        key="doc_collection",
        format_func=lambda n: n if n == ANY_COLLECTION else collection_label(n, sizes),
    )
    collection = None if chosen == ANY_COLLECTION else chosen
    page = st.session_state.setdefault("doc_page", 0)
    # A new search or collection starts at the first page.
    wanted = (words.strip(), collection)
    if st.session_state.get("doc_listing") != wanted:
        st.session_state["doc_listing"], page = wanted, 0
    try:
        total, rows = source.list_documents(
            page * DOCS_PER_PAGE, DOCS_PER_PAGE, words.strip() or None, collection
        )
    except VerityRAGError as exc:
        st.error(f"The documents cannot be listed: {exc}")
        return
    pages = max(1, -(-total // DOCS_PER_PAGE))
    if page >= pages:  # the last page emptied by deletes
        page = pages - 1
        total, rows = source.list_documents(
            page * DOCS_PER_PAGE, DOCS_PER_PAGE, words.strip() or None, collection
        )
    st.session_state["doc_page"] = page
    if not rows:
        st.info("No documents match." if words.strip() or collection else "The index holds no documents yet.")
    else:
        st.caption(f"{plural(total, 'document')}; page {page + 1} of {pages}.")
        st.table([document_row(d) for d in rows])
    previous, following, _ = st.columns([1, 1, 4])
    if previous.button("Previous page", key="doc_prev", disabled=page == 0):
        st.session_state["doc_page"] = page - 1
        st.rerun()
    if following.button("Next page", key="doc_next", disabled=page + 1 >= pages):
        st.session_state["doc_page"] = page + 1
        st.rerun()
    if rows:
        one_document(source, rows)
    remove_a_collection(source, sizes)


def document_row(doc: ListedDocument) -> dict[str, str]:
    added = time.strftime("%Y-%m-%d %H:%M", time.gmtime(doc.added)) + " UTC" if doc.added else ""
    return {
        "title": doc.title or doc.doc_id,
        "collection": doc.collection,
        "format": doc.format or "text",
        "size": f"{doc.chars:,} characters",
        "passages": f"{doc.passages:,}",
        "added": added,
        "id": doc.doc_id,
    }


def one_document(source: Backend, rows: list[ListedDocument]) -> None:
    """Pick one of the page's documents: open it in the app, or delete it after a confirmation."""
    by_id = {d.doc_id: d for d in rows}
    doc_id = st.selectbox(
        "A document to open or delete",
        list(by_id),
        index=None,
        key="doc_pick",
        format_func=lambda i: f"{by_id[i].title or i} ({i})",
        placeholder="Choose one of the documents listed",
    )
    if doc_id is None:
        return
    doc = by_id[doc_id]
    if st.session_state.get("doc_confirm") == doc_id:
        st.warning(f"Delete “{doc.title or doc_id}”? It leaves the index and is no longer asked.")
        yes, no, _ = st.columns([1, 1, 4])
        if yes.button("Yes, delete it", key="doc_delete_yes", type="primary"):
            deleted = source.delete_document(doc_id)
            st.session_state.pop("doc_confirm", None)
            st.session_state["doc_deleted"] = doc.title or doc_id if deleted else None
            st.session_state.pop("doc_pick", None)
            st.rerun()
        if no.button("Cancel", key="doc_delete_no"):
            st.session_state.pop("doc_confirm", None)
            st.rerun()
    elif st.button("Delete this document", key="doc_delete"):
        st.session_state["doc_confirm"] = doc_id
        st.rerun()
    st.markdown(f"#### {md_escape(doc.title or doc_id)}")
    show_document(source, doc_id, "picked")


def remove_a_collection(source: Backend, sizes: dict[str, int]) -> None:
    """Delete every document of one collection, once confirmed."""
    deleted = st.session_state.pop("doc_deleted", None)
    if deleted:
        st.success(f"Deleted “{deleted}”.")
    if not sizes:
        return
    with st.expander("Delete a whole collection"):
        name = st.selectbox(
            "Collection to delete",
            sorted(sizes),
            key="collection_pick",
            format_func=lambda n: collection_label(n, sizes),
        )
        sure = st.checkbox(
            f"Yes, delete all {plural(sizes.get(name, 0), 'document')} of “{name}”", key="collection_sure"
        )
        if st.button("Delete the collection", key="collection_delete", disabled=not sure):
            removed = source.remove_collection(name)
            st.session_state.pop("collection_sure", None)
            st.session_state["doc_deleted"] = f"{name}: {plural(removed, 'document')}"
            st.rerun()


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
    st.caption(
        "Answers questions from your documents with the sentence it is quoted from, "
        "and says so when they do not answer."
    )
    ask, documents, add, stream = st.tabs(["Ask", "Documents", "Add documents", "Real-time streaming demo"])
    with ask:
        ask_tab()
    with documents:
        documents_tab()
    with add:
        add_tab()
    with stream:
        streaming_tab()


main()
