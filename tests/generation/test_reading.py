"""EvidenceReader: what it puts in front of the reader, and how the span comes back to its chunk."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from verityrag.generation.reading import (
    LOGIT_CLIP,
    NOTHING_READ,
    EvidenceReader,
    answer_sentences,
    comparable,
    disagree,
)
from verityrag.generation.sentence_selector import ScoredSentence
from verityrag.models.span_reader import ReaderResult, ReaderSpan
from verityrag.text.answer_types import AnswerType
from verityrag.text.sentences import sentence_spans
from verityrag.types import Chunk, Citation, CitedSentence, Hit

pytestmark = pytest.mark.unit

TEXT_A = "Halcyon was founded in 1891 by Mara Lind. In the same year, she patented a steel kettle. It holds 1.7 litres."
TEXT_B = "The factory stands in Ostby. It employs 40 people."


def _chunk(chunk_id: str, text: str) -> Chunk:
    return Chunk(chunk_id, chunk_id.split("#")[0], "Halcyon", text, 0, 0, len(text))


def _ranked(chunks: Sequence[Chunk], order: Sequence[tuple[int, int]]) -> list[ScoredSentence]:
    """Sentences ``(chunk index, sentence index)`` in the given rank order."""
    out = []
    for rank, (c, i) in enumerate(order):
        chunk = chunks[c]
        s, e = sentence_spans(chunk.text)[i]
        cited = CitedSentence(chunk.text[s:e], (Citation(chunk.chunk_id, chunk.doc_id, chunk.title, s, e),))
        out.append(ScoredSentence(cited, 10.0 - rank, c, np.zeros(1, dtype=np.float32)))
    return out


class _FakeModel:
    """Finds ``answer`` in the evidence it is given (None: no span), with a fixed answer logit."""

    def __init__(self, answer: str | None, logit: float = 3.0) -> None:
        self.answer = answer
        self.logit = logit
        self.seen: list[tuple[str, str]] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def read_batch(self, pairs: Sequence[tuple[str, str]], k: int = 1) -> list[ReaderResult]:
        self.seen.extend(pairs)
        out = []
        for _, evidence in pairs:
            at = evidence.find(self.answer) if self.answer else -1
            spans = []
            if self.answer is not None and at >= 0:  # the span's score less no-answer's (0): the logit
                spans = [ReaderSpan(self.answer, at, at + len(self.answer), self.logit, 1.0)]
            out.append(ReaderResult(spans, 0.0))
        return out


def _setup() -> tuple[list[Chunk], list[Hit]]:
    chunks = [_chunk("a#0", TEXT_A), _chunk("b#0", TEXT_B)]
    return chunks, [Hit(c, 1.0) for c in chunks]


def test_the_span_maps_back_to_its_chunk_exactly_and_brings_the_sentence_beside_it() -> None:
    chunks, hits = _setup()
    # The selector ranks "In the same year, she patented..." first; the year is in the sentence before.
    ranked = _ranked(chunks, [(0, 1), (1, 0), (0, 0)])
    model = _FakeModel("1891")
    reading = EvidenceReader(model, evidence_tokens=40).read("When did she patent a kettle?", hits, ranked)
    short = reading.short_answer
    assert short is not None
    assert (short.chunk_id, TEXT_A[short.start : short.end]) == ("a#0", "1891")
    assert [s.text for s in reading.sentences] == [
        "Halcyon was founded in 1891 by Mara Lind.",
        "In the same year, she patented a steel kettle.",
    ]
    assert reading.expected is AnswerType.DATE
    assert reading.type_ok
    assert reading.answer_probability == pytest.approx(1 / (1 + math.exp(-3.0)))


def test_sentences_of_one_chunk_are_read_in_their_order_within_the_budget() -> None:
    chunks, hits = _setup()
    ranked = _ranked(chunks, [(0, 2), (1, 1), (0, 0), (1, 0), (0, 1)])
    model = _FakeModel(None)
    reader = EvidenceReader(model, evidence_tokens=20)
    text, passages, used = reader.passages(hits, ranked)
    # Best first until 20 words: a#0's third and first sentences (in order), then b#0's second.
    assert text == "Halcyon was founded in 1891 by Mara Lind. It holds 1.7 litres. It employs 40 people."
    assert used <= 20
    assert [p.chunk.chunk_id for p in passages] == ["a#0", "a#0", "b#0"]
    for p in passages:
        assert text[p.offset : p.offset + p.end - p.start] == p.chunk.text[p.start : p.end]


def test_no_span_is_no_answer_and_a_span_of_the_wrong_kind_is_flagged() -> None:
    chunks, hits = _setup()
    ranked = _ranked(chunks, [(0, 2), (0, 0)])
    none = EvidenceReader(_FakeModel(None)).read("How much does the kettle cost?", hits, ranked)
    assert none.short_answer is None
    assert none.answer_logit == -LOGIT_CLIP
    wrong = EvidenceReader(_FakeModel("1.7 litres")).read("How much does the kettle cost?", hits, ranked)
    assert wrong.short_answer is not None
    assert wrong.expected is AnswerType.MONEY
    assert not wrong.type_ok


PRICE_ROW = "Treatment: Scale and polish; Needs: general anaesthetic; Price: £240."


def test_the_best_span_of_the_kind_asked_is_the_answer_with_its_own_logit() -> None:
    chunk = _chunk("p#0", PRICE_ROW)
    ranked = _ranked([chunk], [(0, 0)])
    model = _SpansModel([("general anaesthetic", 4.0), ("£240", 2.5)])
    reading = EvidenceReader(model).read(
        "What do you charge for a scale and polish?", [Hit(chunk, 1.0)], ranked
    )
    assert reading.expected is AnswerType.MONEY
    assert reading.short_answer is not None
    assert reading.short_answer.text == "£240"
    assert reading.type_ok
    assert reading.answer_logit == pytest.approx(2.5)
    # The quoted sentence holds the short answer: they never disagree.
    assert any("£240" in s.text for s in reading.sentences)
    # No span of the kind asked: the best one stays, flagged (the agent refuses it).
    none = EvidenceReader(_SpansModel([("general anaesthetic", 4.0)])).read(
        "What do you charge for a scale and polish?", [Hit(chunk, 1.0)], ranked
    )
    assert none.short_answer is not None
    assert none.short_answer.text == "general anaesthetic"
    assert not none.type_ok
    assert none.answer_logit == pytest.approx(4.0)


def test_nothing_to_read_and_a_nan_logit_read_as_no_answer() -> None:
    chunks, hits = _setup()
    empty = EvidenceReader(_FakeModel("1891")).read("When?", hits, [])
    assert empty.short_answer is None
    assert empty.answer_logit == -LOGIT_CLIP
    nan = EvidenceReader(_FakeModel("1891", logit=float("nan"))).read(
        "When?", hits, _ranked(chunks, [(0, 0)])
    )
    assert nan.answer_logit == -LOGIT_CLIP


def test_a_span_over_a_sentence_boundary_cites_both_sentences() -> None:
    text = "Tesla was born on 10 July [O.S. 28 June] 1856 in Smiljan. He studied in Graz."
    chunk = _chunk("t#0", text)
    start = text.index("10 July")
    end = text.index(" in Smiljan")
    cited = answer_sentences(chunk, start, end, [])
    assert " ".join(s.text for s in cited).startswith("Tesla was born on 10 July [O.S. 28 June] 1856")


def test_the_same_question_over_the_same_sentences_is_read_once() -> None:
    chunks, hits = _setup()
    ranked = _ranked(chunks, [(0, 0), (0, 1)])
    model = _FakeModel("1891")
    reader = EvidenceReader(model, cache_size=1)
    first = reader.read("When?", hits, ranked)
    again = reader.read("When?", hits, ranked)
    assert again == first
    assert len(model.seen) == 1
    reader.read("Who?", hits, ranked)  # another question: read, and the cache of one forgets "When?"
    reader.read("When?", hits, ranked)
    assert len(model.seen) == 3


class _SpansModel:
    """Returns the given answers, where found in the evidence, as its spans in this order."""

    def __init__(self, answers: Sequence[tuple[str, float]]) -> None:
        self.answers = answers

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def read_batch(self, pairs: Sequence[tuple[str, str]], k: int = 1) -> list[ReaderResult]:
        out = []
        for _, evidence in pairs:
            spans = [
                ReaderSpan(a, evidence.find(a), evidence.find(a) + len(a), score, 0.5)
                for a, score in self.answers
                if a in evidence
            ]
            out.append(ReaderResult(spans[:k], 0.0))
        return out


SHIPS = [
    Chunk(
        "bell#0",
        "bell",
        "MV Corran Bell",
        "The ship is 88 metres long. Her captain is Ewan Tolley.",
        0,
        0,
        55,
    ),
    Chunk(
        "wren#0", "wren", "Ferries", "The MV Lissa Wren is 64 metres long. She was built in 1998.", 0, 0, 58
    ),
]


def _ship_ranked() -> list[ScoredSentence]:
    return _ranked(SHIPS, [(0, 0), (1, 0), (0, 1), (1, 1)])


def test_the_best_span_whose_passage_names_the_subject_is_the_answer() -> None:
    hits = [Hit(c, 1.0) for c in SHIPS]
    model = _SpansModel([("88 metres", 4.0), ("64 metres", 2.0)])
    reading = EvidenceReader(model).read("How long is the MV Lissa Wren?", hits, _ship_ranked())
    assert reading.short_answer is not None
    assert reading.short_answer.text == "64 metres"
    assert reading.answer_logit == pytest.approx(2.0)  # that span's own score less no-answer's
    assert reading.missing_subjects == ()
    # The title names the ship for a passage that says "the ship" / "her".
    bell = EvidenceReader(model).read("How long is the MV Corran Bell?", hits, _ship_ranked())
    assert bell.short_answer is not None
    assert bell.short_answer.text == "88 metres"


def test_no_passage_naming_the_subject_is_no_answer_and_says_which_name() -> None:
    hits = [Hit(c, 1.0) for c in SHIPS]
    model = _SpansModel([("88 metres", 4.0), ("64 metres", 2.0)])
    reading = EvidenceReader(model).read("How long is the MV Skarra Star?", hits, _ship_ranked())
    assert reading.short_answer is None
    assert reading.missing_subjects == ("MV Skarra Star",)
    assert reading.answer_logit == pytest.approx(4.0)  # the model's decision value, kept for the gate
    off = EvidenceReader(model).read(
        "How long is the MV Skarra Star?", hits, _ship_ranked(), require_subjects=False
    )
    assert off.short_answer is not None
    assert off.short_answer.text == "88 metres"


@pytest.mark.parametrize(
    ("a", "b", "differ"),
    [
        ("88 metres", "64 metres", True),
        ("88 metres", "88 m", False),
        ("Ewan Tolley", "Captain Ewan", False),
        ("Ewan Tolley", "Mara Lind", True),
        ("the", "a", False),  # nothing said either way
    ],
)
def test_what_counts_as_a_different_answer(a: str, b: str, differ: bool) -> None:
    assert disagree(a, b) is differ


def test_another_documents_different_answer_is_an_alternative() -> None:
    chunks = [*SHIPS, Chunk("log#0", "log", "Harbour log", "The MV Lissa Wren is 70 metres long.", 0, 0, 36)]
    hits = [Hit(c, 1.0) for c in chunks]
    ranked = _ranked(chunks, [(1, 0), (2, 0), (0, 0)])
    model = _SpansModel([("64 metres", 4.0), ("70 metres", 3.0), ("88 metres", 2.5), ("64", 2.0)])
    reading = EvidenceReader(model).read("How long is the MV Lissa Wren?", hits, ranked)
    assert reading.short_answer is not None
    assert reading.short_answer.text == "64 metres"
    # The Corran Bell's 88 metres is not about this ship; "64" is the same answer.
    assert [(a.text, a.doc_id, a.answer_logit) for a in reading.alternatives] == [("70 metres", "log", 3.0)]


def test_a_run_under_a_heading_is_read_after_it_and_no_answer_comes_from_the_heading() -> None:
    text = "Opening hours\n\nDay: Saturday; Brackenford: 7am to 4pm\n\nDay: Sunday; Brackenford: Closed"
    chunk = _chunk("h#0", text)
    ranked = _ranked([chunk], [(0, 1)])
    reader = EvidenceReader(_FakeModel(None), evidence_tokens=40)
    read, passages, _ = reader.passages([Hit(chunk, 1.0)], ranked)
    assert read == "Opening hours Day: Saturday; Brackenford: 7am to 4pm"
    assert [p.heading for p in passages] == [True, False]
    # A span in the heading is passed over: the reader's next span is the answer.
    heading_only = EvidenceReader(_FakeModel("Opening hours")).read(
        "When do you open?", [Hit(chunk, 1.0)], ranked
    )
    assert heading_only.short_answer is None
    found = EvidenceReader(_FakeModel("7am to 4pm")).read("When do you open?", [Hit(chunk, 1.0)], ranked)
    assert found.short_answer is not None
    assert [s.text for s in found.sentences] == ["Day: Saturday; Brackenford: 7am to 4pm"]


def _lengths_reader() -> tuple[EvidenceReader, list[Hit], list[ScoredSentence]]:
    """The answer's chunk, two copies of it under other ids (an attacker's), and the register
    whose 70 metres the selector ranked no sentence of: the first read never sees it."""
    filler = "The MV Lissa Wren sails from Hollin Isle every morning. " * 3
    texts = {
        "post#0": "The MV Lissa Wren is 64 metres long.",
        "copy1#0": "Update: the MV Lissa Wren is 64 metres long.",
        "copy2#0": "Notice: the MV Lissa Wren is 64 metres long.",
        "register#0": filler + "The MV Lissa Wren is 70 metres long.",
    }
    chunks = [
        Chunk(cid, cid.split("#")[0], "MV Lissa Wren", text, 0, 0, len(text)) for cid, text in texts.items()
    ]
    hits = [Hit(c, 1.0) for c in chunks]
    ranked = _ranked(chunks, [(0, 0), (1, 0), (2, 0)])
    model = _SpansModel([("64 metres", 6.0), ("70 metres", 5.0)])
    return EvidenceReader(model, evidence_tokens=30), hits, ranked


def test_other_sources_are_read_on_their_own_for_a_value_the_first_read_missed() -> None:
    reader, hits, ranked = _lengths_reader()
    question = "How long is the MV Lissa Wren?"
    first = reader.read(question, hits, ranked)
    assert first.short_answer is not None
    assert first.short_answer.text == "64 metres"
    assert first.alternatives == ()  # the register's sentence was never in front of the model
    found = reader.read_other_sources(question, hits, ranked, first)
    # The copies say the answer too and are passed over; the register is read and disagrees.
    assert [(a.text, a.doc_id, a.answer_logit) for a in found.alternatives] == [
        ("70 metres", "register", 5.0)
    ]
    assert found.short_answer == first.short_answer
    assert found.answer_logit == first.answer_logit


def test_a_declared_source_is_one_source_for_the_second_read() -> None:
    reader, hits, ranked = _lengths_reader()
    question = "How long is the MV Lissa Wren?"
    first = reader.read(question, hits, ranked)
    one = {"post": "source:ship register", "register": "source:ship register"}
    found = reader.read_other_sources(question, hits, ranked, first, lambda d: one.get(d, f"doc:{d}"))
    assert found.alternatives == ()
    assert reader.read_other_sources(question, hits, ranked, NOTHING_READ) is NOTHING_READ


@pytest.mark.parametrize(
    ("answer", "rival", "same_kind"),
    [
        ("£8 an hour", "£10 an hour", True),
        ("£18 per night", "£45", True),  # one says its unit: amounts of one order
        ("Wednesday 3 September", "Thursday 4 September", True),
        ("3 Pier Road, Oban", "14 Castle Street, Fort William", True),
        ("Ewan Tolley", "Mara Lind", True),
        ("£35 a year", "£22,500", False),  # another question's amount in the same newsletter
        ("7am to 4pm", "5 April", False),  # a time of day and a date
        ("within 1 hour", "within 5 business days", False),
        ("Ruth Ellery", "the treasurer or to our welfare officer", False),
        ("£15 compensation", "text reminder", False),
    ],
)
def test_only_values_of_one_kind_can_disagree(answer: str, rival: str, same_kind: bool) -> None:
    assert comparable(answer, rival) is same_kind


def test_names_disagree_by_their_names_not_their_common_nouns() -> None:
    assert disagree("the Ashby family", "the Penrose family")
    assert not disagree("Ewan Tolley", "Captain Ewan")
