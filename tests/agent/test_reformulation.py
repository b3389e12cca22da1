"""Reformulation strategies: what each rewrite adds to the question, and when it declines."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from verityrag.agent.reformulation import Reformulator, SalientTermExpansion, TitleAnchoredRewrite
from verityrag.retrieval.features import ChunkTermCache, QueryTerms
from verityrag.text.analyzer import DEFAULT_ANALYZER
from verityrag.types import Chunk, Hit

pytestmark = pytest.mark.unit

# Analysed terms of the chunk below: aardvark eat ant termit night dig burrow.
CHUNK_TEXT = "Aardvarks eat ants and termites at night. They dig burrows."
IDF = {"aardvark": 1.0, "eat": 0.5, "ant": 2.0, "termit": 3.0, "night": 0.2, "dig": 2.0, "burrow": 1.5}


def _query(text: str) -> QueryTerms:
    return QueryTerms.build(text, DEFAULT_ANALYZER, lambda t: IDF.get(t, 0.0), lambda t: int(t in IDF))


def _hit(chunk: Chunk) -> Hit:
    return Hit(chunk, score=1.0)


def _expansion(n_terms: int = 3) -> SalientTermExpansion:
    return SalientTermExpansion(ChunkTermCache(DEFAULT_ANALYZER), lambda t: IDF.get(t, 0.0), n_terms=n_terms)


@pytest.fixture
def hits(make_chunk: Callable[..., Chunk]) -> list[Hit]:
    return [
        _hit(make_chunk("aardvark", CHUNK_TEXT, title="Aardvark")),
        _hit(make_chunk("otter", "Otters float on their backs.", title="Otter")),
    ]


# ------------------------------------------------------------- salient expansion


def test_salient_expansion_appends_rarest_new_terms_of_top_chunk_as_written(hits: list[Hit]) -> None:
    question = "What do aardvarks eat?"
    # Not in the question: ant 2.0, termit 3.0, night 0.2, dig 2.0, burrow 1.5 -> rarest first,
    # ties broken alphabetically; appended as the words of the chunk, not their stems.
    assert _expansion(3)(_query(question), hits) == f"{question} termites ants dig"


@pytest.mark.parametrize("n_terms", [1, 2, 5])
def test_salient_expansion_n_terms_limits_appended_terms(hits: list[Hit], n_terms: int) -> None:
    question = "What do aardvarks eat?"
    rewritten = _expansion(n_terms)(_query(question), hits)
    assert rewritten is not None
    added = DEFAULT_ANALYZER.analyze(rewritten.removeprefix(question))
    assert len(added) == n_terms
    assert set(added) <= set(IDF) - {"aardvark", "eat"}


def test_salient_expansion_uses_only_the_top_hit(hits: list[Hit]) -> None:
    rewritten = _expansion(10)(_query("What do aardvarks eat?"), hits)
    assert rewritten is not None
    assert "otter" not in rewritten.lower().removeprefix("what do aardvarks eat?")


def test_salient_expansion_no_hits_returns_none() -> None:
    assert _expansion()(_query("What do aardvarks eat?"), []) is None


def test_salient_expansion_question_covers_chunk_returns_none(make_chunk: Callable[..., Chunk]) -> None:
    hit = _hit(make_chunk("a", "Aardvarks eat termites."))
    assert _expansion()(_query("Do aardvarks eat termites?"), [hit]) is None


def test_salient_expansion_appended_terms_reanalyse_to_terms_of_the_chunk(
    make_chunk: Callable[..., Chunk],
) -> None:
    chunk = make_chunk("a", "The Chinese department ran the experiment.")
    expansion = SalientTermExpansion(ChunkTermCache(DEFAULT_ANALYZER), lambda t: 1.0, n_terms=10)
    question = "Who ran it?"
    rewritten = expansion(_query(question), [_hit(chunk)])
    assert rewritten is not None
    added = DEFAULT_ANALYZER.analyze(rewritten.removeprefix(question))
    assert set(added) <= set(DEFAULT_ANALYZER.analyze(chunk.text))


# ---------------------------------------------------------------- title anchored


def test_title_anchored_prefixes_title_of_top_hit(hits: list[Hit]) -> None:
    assert TitleAnchoredRewrite()(_query("What do they eat?"), hits) == "Aardvark: What do they eat?"


def test_title_anchored_title_already_in_question_returns_none(hits: list[Hit]) -> None:
    assert TitleAnchoredRewrite()(_query("What does an AARDVARK eat?"), hits) is None


def test_title_anchored_no_hits_or_no_title_returns_none(make_chunk: Callable[..., Chunk]) -> None:
    rewrite = TitleAnchoredRewrite()
    assert rewrite(_query("What do they eat?"), []) is None
    assert rewrite(_query("What do they eat?"), [_hit(make_chunk("a", CHUNK_TEXT, title=""))]) is None


def test_reformulators_have_distinct_names_and_satisfy_protocol() -> None:
    strategies: list[Reformulator] = [_expansion(), TitleAnchoredRewrite()]
    assert [s.name for s in strategies] == ["salient_expansion", "title_anchored"]
