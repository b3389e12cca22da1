"""Snapshot reads: a snapshot is one version; writes after it are invisible; replace is atomic."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pytest

from verityrag.embed.hashing import HashingEmbedder
from verityrag.index.live import IndexSnapshot, LiveIndex

DIM = 32
EMBED = HashingEmbedder(dim=DIM)


def _ids_lexical(index: LiveIndex, query: str, snap: IndexSnapshot | None = None) -> set[str]:
    return {h.chunk.chunk_id for h in index.search_lexical(query, 100, snap)}


def _ids_dense(index: LiveIndex, text: str, snap: IndexSnapshot | None = None) -> set[str]:
    return {h.chunk.chunk_id for h in index.search_dense(EMBED.encode([text])[0], 100, snap)}


@pytest.fixture
def index(add_texts: Callable[..., None]) -> LiveIndex:
    idx = LiveIndex(dim=DIM)
    add_texts(
        idx, {f"base{i}": [f"base document {i} about rivers", f"second part {i} mountains"] for i in range(6)}
    )
    return idx


@pytest.mark.unit
def test_snapshot_before_add_does_not_see_it_and_after_does(
    index: LiveIndex, add_texts: Callable[..., None]
) -> None:
    before = index.snapshot()
    add_texts(index, {"new": ["zebrafish swim upstream"]})
    after = index.snapshot()
    assert _ids_lexical(index, "zebrafish", before) == set()
    assert "new#0" not in _ids_dense(index, "zebrafish swim upstream", before)
    assert "new#0" not in index.bm25_scores(["zebrafish"], before)[0]
    assert "new#0" not in {c.chunk_id for c in index.live_chunks(before)}
    assert index.chunks_of("new", before) == []
    assert before.n_live == 12
    assert _ids_lexical(index, "zebrafish", after) == {"new#0"}
    assert "new#0" in _ids_dense(index, "zebrafish swim upstream", after)
    assert [c.chunk_id for c in index.chunks_of("new", after)] == ["new#0"]
    assert after.n_live == 13
    assert after.version == before.version + 1


@pytest.mark.unit
def test_snapshot_before_delete_still_sees_doc_and_after_does_not(index: LiveIndex) -> None:
    before = index.snapshot()
    assert index.delete("base2")
    after = index.snapshot()
    for snap, visible in ((before, True), (after, False)):
        assert ("base2#0" in _ids_lexical(index, "document 2 rivers", snap)) is visible
        assert ("base2#1" in _ids_dense(index, "second part 2 mountains", snap)) is visible
        assert ("base2#0" in index.bm25_scores(["river"], snap)[0]) is visible
        assert (len(index.chunks_of("base2", snap)) == 2) is visible
    assert index.delete("base2") is False


@pytest.mark.unit
def test_snapshot_bm25_statistics_unchanged_by_later_writes(
    index: LiveIndex, add_texts: Callable[..., None]
) -> None:
    before = index.snapshot()
    terms = ["river", "mountain", "3"]
    ids_then, scores_then = index.bm25_scores(terms, before)
    add_texts(index, {f"more{i}": ["rivers and more rivers 3"] for i in range(5)})
    index.delete("base1")
    add_texts(index, {"base4": ["mountains replaced"]})
    ids_now, scores_now = index.bm25_scores(terms, before)
    assert ids_now == ids_then
    assert np.array_equal(scores_now, scores_then)
    assert not np.allclose(index.bm25_scores(terms)[1][: len(scores_then)], scores_then)


@pytest.mark.unit
@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_snapshot_majority_term_after_later_adds_scores_finite(add_texts: Callable[..., None]) -> None:
    index = LiveIndex(dim=DIM)
    add_texts(index, {"a": ["apple one"], "b": ["apple two"], "c": ["cherry three"]})
    before = index.snapshot()  # "apple" in 2 of 3 chunks: negative IDF, epsilon floor
    add_texts(index, {f"more{i}": ["apple again"] for i in range(10)})  # df now exceeds the old N
    ids, scores = index.bm25_scores(["appl", "one"], before)
    assert ids == ["a#0", "b#0", "c#0"]
    assert np.isfinite(scores).all()
    assert scores[0] > scores[1] > 0 == scores[2]


@pytest.mark.unit
def test_snapshot_survives_buffer_growth(index: LiveIndex, add_texts: Callable[..., None]) -> None:
    before = index.snapshot()
    lexical = index.search_lexical("rivers mountains", 5, before)
    dense = index.search_dense(EMBED.encode(["base document 3 about rivers"])[0], 5, before)
    add_texts(index, {f"bulk{i}": [f"rivers flow {i}"] for i in range(3000)})  # reallocates every buffer
    assert index.snapshot().vectors is not before.vectors
    assert index.search_lexical("rivers mountains", 5, before) == lexical
    assert index.search_dense(EMBED.encode(["base document 3 about rivers"])[0], 5, before) == dense


@pytest.mark.unit
def test_replace_snapshots_see_all_old_or_all_new_chunks(
    index: LiveIndex, add_texts: Callable[..., None]
) -> None:
    add_texts(index, {"doc": ["old alpha one", "old alpha two", "old alpha three"]})
    old = index.snapshot()
    add_texts(index, {"doc": ["new omega one", "new omega two"]})
    new = index.snapshot()
    assert [c.text for c in index.chunks_of("doc", old)] == [
        "old alpha one",
        "old alpha two",
        "old alpha three",
    ]
    assert [c.text for c in index.chunks_of("doc", new)] == ["new omega one", "new omega two"]
    assert [c.text for c in index.live_chunks(old) if c.doc_id == "doc"] == [
        "old alpha one",
        "old alpha two",
        "old alpha three",
    ]
    assert [c.text for c in index.live_chunks(new) if c.doc_id == "doc"] == ["new omega one", "new omega two"]
    assert len(_ids_lexical(index, "alpha", old)) == 3
    assert _ids_lexical(index, "omega", old) == set()
    assert _ids_lexical(index, "alpha", new) == set()
    assert len(_ids_lexical(index, "omega", new)) == 2
    assert old.n_live + 2 - 3 == new.n_live


@pytest.mark.integration
def test_replace_under_concurrent_readers_is_never_half_applied(add_texts: Callable[..., None]) -> None:
    index = LiveIndex(dim=DIM)
    versions = {
        "A": ["alpha variant one.", "alpha variant two.", "alpha variant three."],
        "B": ["omega variant one.", "omega variant two."],
    }
    add_texts(index, {"doc": versions["A"]})
    stop = threading.Event()
    errors: list[BaseException] = []
    observed: set[str] = set()
    last: list[str] = ["A"]  # the version the writer wrote last

    def writer() -> None:
        # 400 replaces at least; on a loaded machine the readers may be starved for all of
        # them, so the writer goes on (up to 10x) until they have seen both versions.
        try:
            i = 0
            while i < 400 or (observed != {"A", "B"} and i < 4000):
                last.append("B" if i % 2 == 0 else "A")
                add_texts(index, {"doc": versions[last[-1]]})
                add_texts(index, {f"other{i % 50}": [f"filler text {i}"]})
                i += 1
        except BaseException as exc:
            errors.append(exc)
        finally:
            stop.set()

    def reader() -> None:
        try:
            while not stop.is_set():
                snap = index.snapshot()
                texts = sorted(c.text for c in index.chunks_of("doc", snap))
                assert texts in (sorted(versions["A"]), sorted(versions["B"])), texts
                alpha = _ids_lexical(index, "alpha", snap)
                omega = _ids_lexical(index, "omega", snap)
                assert (len(alpha), len(omega)) in ((3, 0), (0, 2)), (alpha, omega)
                dense = [h.chunk.text for h in index.search_dense(EMBED.encode(["variant"])[0], 200, snap)]
                assert sorted(t for t in dense if "variant" in t) == texts
                observed.add("A" if alpha else "B")
        except BaseException as exc:
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a reader or the writer did not finish"
    assert not errors, errors[0]
    assert observed == {"A", "B"}
    # the version written last: A when the writer stopped at 400 replaces, either when it went on
    assert sorted(c.text for c in index.chunks_of("doc")) == sorted(versions[last[-1]])


@pytest.mark.unit
def test_get_chunk_during_a_replace_returns_the_published_version(
    index: LiveIndex, add_texts: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The writer updates its chunk-id map before it publishes the new version; a reader in that
    # window must still get the chunk the published version holds, never None.
    old = index.get_chunk("base1#0")
    assert old is not None
    paused, resume = threading.Event(), threading.Event()
    publish = index._publish

    def slow_publish(*args: object) -> None:
        paused.set()
        assert resume.wait(10)
        publish(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(index, "_publish", slow_publish)
    writer = threading.Thread(target=add_texts, args=(index, {"base1": ["base document 1 rewritten"]}))
    writer.start()
    try:
        assert paused.wait(10)
        assert index.get_chunk("base1#0") == old
    finally:
        resume.set()
        writer.join(60)
    assert not writer.is_alive(), "the paused replace did not finish"
    new = index.get_chunk("base1#0")
    assert new is not None
    assert new.text == "base document 1 rewritten"
    assert index.get_chunk("base1#1") is None  # the new version has one chunk


@pytest.mark.unit
def test_cosines_on_a_snapshot_from_before_a_replace_use_the_chunks_it_holds(
    index: LiveIndex, add_texts: Callable[..., None]
) -> None:
    query = EMBED.encode(["base document 1 about rivers"])[0]
    before = index.snapshot()
    [old] = index.cosines(query, ["base1#0"], before)
    assert old == pytest.approx(1.0, abs=1e-5)
    add_texts(index, {"base1": ["an unrelated text on volcanoes"]})  # same chunk id, new slot
    assert index.cosines(query, ["base1#0"], before) == [pytest.approx(old)]
    [new] = index.cosines(query, ["base1#0"])
    assert new < 0.5
    assert index.cosines(query, ["base1#1", "nowhere#0"]) == [0.0, 0.0]  # gone in the new version


@pytest.mark.unit
def test_chunks_of_checks_slots_read_in_the_compaction_gap(index: LiveIndex) -> None:
    # Compaction renumbers the slot map just before it publishes the new segment; a reader in
    # that gap holds new slot numbers and the old segment. Simulated: base0's slots pointing at
    # base3's. It must still get base0's chunks, not base3's text.
    real = {d: list(s) for d, s in index._doc_slots.items()}
    index._doc_slots["base0"] = real["base3"]
    chunks = index.chunks_of("base0")
    assert [c.doc_id for c in chunks] == ["base0", "base0"]
    assert [c.position for c in chunks] == [0, 1]
