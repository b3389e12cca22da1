"""LLMGenerator: numbered evidence in the prompt, [n] markers parsed into citations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from verityrag.errors import InvalidInputError
from verityrag.generation import LLMGenerator
from verityrag.generation.llm import REFUSAL, parse_cited_sentences
from verityrag.llm.completion import Completion
from verityrag.types import Chunk, Hit

pytestmark = pytest.mark.unit


def _hit(i: int, text: str, title: str = "") -> Hit:
    return Hit(Chunk(f"d{i}#0", f"d{i}", title or f"Doc {i}", text, 0, 0, len(text)), score=1.0 / (i + 1))


HITS = [
    _hit(1, "The Eiffel Tower was completed in 1889. It is in Paris.", "Eiffel Tower"),
    _hit(2, "Mount Fuji is the highest mountain in Japan.", "Mount Fuji"),
    _hit(3, "The Nile flows north into the Mediterranean.", "Nile"),
]


class Scripted:
    """A complete_fn that returns scripted texts and records every call."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.calls: list[dict[str, Any]] = []

    def __call__(self, prompt: str, **kwargs: Any) -> Completion:
        self.calls.append({"prompt": prompt, **kwargs})
        text = self.texts[min(len(self.calls) - 1, len(self.texts) - 1)]
        return Completion(
            text, "scripted", prompt_tokens=len(prompt.split()), completion_tokens=len(text.split())
        )


def _parse(text: str) -> tuple[list[tuple[str, tuple[str, ...]]], list[int]]:
    sentences, _, invalid = parse_cited_sentences(text, HITS)
    return [(s.text, tuple(c.chunk_id for c in s.citations)) for s in sentences], invalid


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The tower was completed in 1889 [1].", [("The tower was completed in 1889.", ("d1#0",))]),
        ("The tower was completed in 1889.[1]", [("The tower was completed in 1889.", ("d1#0",))]),
        ("Fuji is highest [2][1].", [("Fuji is highest.", ("d2#0", "d1#0"))]),
        ("Both are tall [1, 3].", [("Both are tall.", ("d1#0", "d3#0"))]),
        ("All three [1-3].", [("All three.", ("d1#0", "d2#0", "d3#0"))]),
        (
            "The tower is in Paris. [1] Fuji is in Japan [2].",
            [("The tower is in Paris.", ("d1#0",)), ("Fuji is in Japan.", ("d2#0",))],
        ),
        ("According to [2], Mount Fuji is the highest.", [("Mount Fuji is the highest.", ("d2#0",))]),
        ("Answer: The Nile flows north [3].", [("The Nile flows north.", ("d3#0",))]),
    ],
)
def test_parse_markers_become_citations_and_leave_the_text(
    text: str, expected: list[tuple[str, tuple[str, ...]]]
) -> None:
    assert _parse(text) == (expected, [])


def test_parse_sentence_without_marker_cites_nothing() -> None:
    sentences, invalid = _parse("The tower is in Paris [1]. It is very old.")
    assert sentences == [("The tower is in Paris.", ("d1#0",)), ("It is very old.", ())]
    assert invalid == []


def test_parse_out_of_range_number_is_invalid_not_a_citation() -> None:
    sentences, invalid = _parse("The tower is tall [7]. Fuji too [0][2].")
    assert sentences == [("The tower is tall.", ()), ("Fuji too.", ("d2#0",))]
    assert invalid == [7, 0]


def test_parse_citation_points_at_the_whole_chunk() -> None:
    sentences, _, _ = parse_cited_sentences("Paris [1].", HITS)
    cit = sentences[0].citations[0]
    assert (cit.doc_id, cit.title, cit.start, cit.end) == ("d1", "Eiffel Tower", 0, len(HITS[0].chunk.text))


def test_instruct_prompt_numbers_evidence_and_asks_for_citations() -> None:
    fn = Scripted("Fuji is the highest mountain in Japan [2].")
    answer = LLMGenerator(fn, max_evidence=2).generate("What is the highest mountain in Japan?", HITS)
    call = fn.calls[0]
    assert "[1] (Eiffel Tower) The Eiffel Tower" in call["prompt"]
    assert "[2] (Mount Fuji) Mount Fuji" in call["prompt"]
    assert "[3]" not in call["prompt"]  # max_evidence=2
    assert "square brackets" in call["system"]
    assert answer.text == "Fuji is the highest mountain in Japan."
    assert answer.numbers == ((2,),)
    assert [h.chunk_id for h in answer.evidence] == ["d1#0", "d2#0"]
    assert answer.uncited == ()
    assert answer.completion.completion_tokens == 8


def test_uncited_sentence_is_listed_as_unsupported() -> None:
    answer = LLMGenerator(Scripted("Fuji is in Japan [2]. It erupted in 2020.")).generate("q?", HITS)
    assert [s.text for s in answer.uncited] == ["It erupted in 2020."]


def test_base_prompt_opens_the_answer_with_a_citation_and_keeps_one_sentence() -> None:
    fn = Scripted("2], Mount Fuji is the highest mountain in Japan. Then it went on and on")
    gen = LLMGenerator(fn, style="base", max_sentences=1)
    answer = gen.generate("What is the highest mountain in Japan?", HITS)
    assert fn.calls[0]["system"] is None
    assert fn.calls[0]["prompt"].endswith(
        "Question: What is the highest mountain in Japan?\nAnswer: According to ["
    )
    assert [(s.text, n) for s, n in zip(answer.sentences, answer.numbers, strict=True)] == [
        ("Mount Fuji is the highest mountain in Japan.", (2,))
    ]


def test_feedback_names_the_claim_and_evidence_in_the_next_prompt() -> None:
    from verityrag.generation.llm import Feedback

    fn = Scripted("x [1].")
    LLMGenerator(fn).generate(
        "q?", HITS, feedback=[Feedback("The tower is 900 m tall.", (1,), "a number is wrong")]
    )
    prompt = fn.calls[0]["prompt"]
    assert '"The tower is 900 m tall." (cited [1]): a number is wrong' in prompt
    assert "rejected" in prompt


def test_refusal_is_recognised() -> None:
    answer = LLMGenerator(Scripted(REFUSAL)).generate("Who won in 1950?", HITS)
    assert answer.refused
    assert answer.sentences == ()


def test_refusal_after_an_answer_label_is_recognised() -> None:
    fn = Scripted(f"Answer: {REFUSAL}")
    answer = LLMGenerator(fn).generate("Who won in 1950?", HITS)
    assert answer.refused
    assert answer.sentences == ()


def test_generate_completion_with_a_lone_surrogate_gives_valid_unicode_sentences() -> None:
    # Any complete_fn, not only the bundled providers: the answer is what the API serialises.
    answer = LLMGenerator(Scripted("The tower is in Paris \ud83c [1].")).generate("Where?", HITS)
    assert [s.text for s in answer.sentences] == ["The tower is in Paris \ufffd."]
    answer.raw_text.encode("utf-8")


def test_temperature_override_reaches_complete_fn() -> None:
    fn = Scripted("a [1].")
    LLMGenerator(fn, temperature=0.0, max_tokens=33).generate("q?", HITS, temperature=0.9)
    assert fn.calls[0]["temperature"] == 0.9
    assert fn.calls[0]["max_tokens"] == 33


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: LLMGenerator(Scripted("x"), style="chat"), "style"),  # type: ignore[arg-type]
        (lambda: LLMGenerator(Scripted("x"), max_evidence=0), "max_evidence"),
        (lambda: LLMGenerator(Scripted("x"), max_chunk_chars=0), "max_chunk_chars"),
        (lambda: LLMGenerator(Scripted("x"), max_sentences=0), "max_sentences"),
        (lambda: LLMGenerator(Scripted("x"), max_sentences=-1), "max_sentences"),
        (lambda: LLMGenerator(Scripted("x")).generate("", HITS), "question"),
        (lambda: LLMGenerator(Scripted("x")).generate("q?", []), "hits"),
    ],
)
def test_bad_input_is_rejected_with_the_field_named(make: Callable[[], object], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        make()


@pytest.mark.parametrize(
    "text",
    [
        "The tower is in Paris [1]\nFuji is in Japan [2]",
        "The tower is in Paris [1].\n\nFuji is in Japan [2].",
        "The tower is in Paris [1].\r\nFuji is in Japan [2].",
        "- The tower is in Paris [1].\n- Fuji is in Japan [2].",
        "* The tower is in Paris [1].\n* Fuji is in Japan [2].",
        "\u2022 The tower is in Paris [1].\n\u2022 Fuji is in Japan [2].",
        "1. The tower is in Paris [1].\n2. Fuji is in Japan [2].",
        "1) The tower is in Paris [1].\n  2) Fuji is in Japan [2].",
        "Answer:\n- The tower is in Paris [1].\n- Fuji is in Japan [2].",
    ],
    ids=["plain", "blank-line", "crlf", "dash", "star", "bullet", "dot", "paren", "label"],
)
def test_parse_each_line_is_its_own_sentence_with_its_own_citations(text: str) -> None:
    sentences, invalid = _parse(text)
    assert [(s.rstrip("."), c) for s, c in sentences] == [
        ("The tower is in Paris", ("d1#0",)),
        ("Fuji is in Japan", ("d2#0",)),
    ]
    assert invalid == []


def test_parse_lines_are_split_into_sentences_as_before() -> None:
    sentences, _ = _parse(
        "- The tower is in Paris [1]. It is old.\n- Fuji is in Japan. [2] The Nile flows north [3]."
    )
    assert sentences == [
        ("The tower is in Paris.", ("d1#0",)),
        ("It is old.", ()),
        ("Fuji is in Japan.", ("d2#0",)),
        ("The Nile flows north.", ("d3#0",)),
    ]


@pytest.mark.parametrize(
    ("text", "first"),
    [
        (
            "The tower was completed in 1889.[1] Fuji is highest.[2]",
            ("The tower was completed in 1889.", ("d1#0",)),
        ),
        ("The tower is in Paris.[1][3] Fuji is highest.[2]", ("The tower is in Paris.", ("d1#0", "d3#0"))),
        (
            'It is called "the Iron Lady."[1] Fuji is highest.[2]',
            ('It is called "the Iron Lady."', ("d1#0",)),
        ),
    ],
    ids=["one-each", "two-first", "quote"],
)
def test_parse_markers_glued_after_full_stops_each_sentence_keeps_its_own(
    text: str, first: tuple[str, tuple[str, ...]]
) -> None:
    # Wikipedia-style "1889.[1] Fuji": no space after the full stop, so the splitter saw one
    # sentence citing both passages, and each claim was checked against the other's passage too.
    assert _parse(text) == ([first, ("Fuji is highest.", ("d2#0",))], [])


def test_parse_markers_alone_on_a_line_belong_to_the_line_before() -> None:
    sentences, _ = _parse("The tower is in Paris.\n[1]\nFuji is in Japan.\n[2]")
    assert sentences == [("The tower is in Paris.", ("d1#0",)), ("Fuji is in Japan.", ("d2#0",))]


def test_parse_a_marker_opening_a_line_stays_with_that_line() -> None:
    sentences, _ = _parse("- [1] The tower is in Paris.\n- [2] Fuji is in Japan.")
    assert sentences == [("The tower is in Paris.", ("d1#0",)), ("Fuji is in Japan.", ("d2#0",))]


def test_parse_list_marker_is_stripped_only_at_a_line_start() -> None:
    sentences, _ = _parse("1. The tower was completed in 1889 - a long time ago [1].\n2. Fuji is high [2].")
    assert sentences == [
        ("The tower was completed in 1889 - a long time ago.", ("d1#0",)),
        ("Fuji is high.", ("d2#0",)),
    ]


def test_multi_line_answer_gives_one_cited_sentence_per_line() -> None:
    fn = Scripted("- The tower is in Paris [1]\n- Fuji is in Japan [2]")
    answer = LLMGenerator(fn).generate("Where are they?", HITS)
    assert [s.text for s in answer.sentences] == ["The tower is in Paris", "Fuji is in Japan"]
    assert answer.numbers == ((1,), (2,))
    assert answer.uncited == ()


@pytest.mark.parametrize("style", ["instruct", "base"])
def test_reader_hint_shows_the_span_before_the_answer_when_turned_on(style: str) -> None:
    hits = [_hit(1, "The K2 kettle boils a litre in 90 seconds.")]
    shown = LLMGenerator(lambda prompt, **kw: Completion("x"), style=style, reader_hint=True)  # type: ignore[arg-type]
    _, prompt = shown.build_prompt("How fast?", hits, reader_span="  90\nseconds ")
    line = 'Likely answer, found in the evidence: "90 seconds"\n'
    assert line in prompt
    assert prompt.index("How fast?") < prompt.index(line)
    assert style == "instruct" or prompt.index(line) < prompt.rindex("Answer:")  # base: before its answer
    assert "Likely answer" not in shown.build_prompt("How fast?", hits)[1]  # no span: no hint
    hidden = LLMGenerator(lambda prompt, **kw: Completion("x"), style=style)  # type: ignore[arg-type]
    assert "Likely answer" not in hidden.build_prompt("How fast?", hits, reader_span="90 seconds")[1]
