"""The shared analyzer: what a term is for BM25, features and grounding."""

from __future__ import annotations

import pytest

from verityrag.text.analyzer import DEFAULT_ANALYZER, Analyzer
from verityrag.text.stopwords import ENGLISH_STOPWORDS

pytestmark = pytest.mark.unit

PLAIN = Analyzer(stem=False)


@pytest.mark.parametrize(
    ("analyzer", "text", "terms"),
    [
        (PLAIN, "Nikola TESLA Invented", ["nikola", "tesla", "invented"]),
        (PLAIN, "Café Müller naïve Ångström", ["cafe", "muller", "naive", "angstrom"]),
        (PLAIN, "well-known, (rock) & roll! 24–10 e-mail...", "well known rock roll 24 10 e mail".split()),
        (PLAIN, "The cat is on the mat and it was there", ["cat", "mat"]),
        (DEFAULT_ANALYZER, "It is what it was, and so on.", []),
        (DEFAULT_ANALYZER, "running runs connected connection", ["run", "run", "connect", "connect"]),
        (PLAIN, "running runs connected connection", ["running", "runs", "connected", "connection"]),
    ],
    ids=[
        "mixed-case-lowercases-every-term",
        "accented-letters-fold-to-ascii",
        "punctuation-strips-it-and-splits-words",
        "stopwords-removed",
        "only-stopwords-gives-no-terms",
        "stemming-on-conflates-inflections",
        "stemming-off-keeps-surface-forms",
    ],
)
def test_analyze_gives_the_terms(analyzer: Analyzer, text: str, terms: list[str]) -> None:
    assert analyzer.analyze(text) == terms


def test_analyze_case_folds_after_decomposing() -> None:
    # Lowercased first, "ℌ" and "𝐀" decomposed into capitals, and "ß" never matched "ss".
    assert PLAIN.analyze("ℌello 𝐀pple Straße ΦΟΡΟΣ") == ["hello", "apple", "strasse", "φοροσ"]
    assert PLAIN.analyze("Straße φορος") == PLAIN.analyze("STRASSE ΦΟΡΟΣ")


def test_analyze_accented_and_plain_spellings_give_same_terms() -> None:
    assert DEFAULT_ANALYZER.analyze("Résumé of Gödel") == DEFAULT_ANALYZER.analyze("resume of godel")


def test_tokenize_keeps_stopwords_and_does_not_stem() -> None:
    assert DEFAULT_ANALYZER.tokenize("The Engines were RUNNING.") == ["the", "engines", "were", "running"]


def test_analyze_custom_stopwords_replaces_default_list() -> None:
    analyzer = Analyzer(stopwords={"cat"}, stem=False)
    assert analyzer.analyze("the cat sat") == ["the", "sat"]


def test_default_stopwords_keep_question_bearing_words() -> None:
    assert {"first", "last", "never"}.isdisjoint(ENGLISH_STOPWORDS)
    assert {"the", "and", "of"} <= ENGLISH_STOPWORDS


def test_fingerprint_stemming_changes_fingerprint() -> None:
    assert Analyzer(stem=True).fingerprint() != Analyzer(stem=False).fingerprint()
    assert Analyzer().fingerprint() == DEFAULT_ANALYZER.fingerprint()


def test_analyze_custom_stopwords_with_capitals_or_accents_removes_them() -> None:
    # Tokens are case- and accent-folded; the stopwords were not, so these never matched.
    analyzer = Analyzer(stopwords={"The", "über", "FÜR"}, stem=False)
    assert analyzer.analyze("The cat über alles für dich") == ["cat", "alles", "dich"]
    assert analyzer.stopwords == {"the", "uber", "fur"}


def test_fingerprint_other_stopwords_of_same_size_changes_fingerprint() -> None:
    # A store built with one list must be recounted under another, even of the same size.
    swapped = (ENGLISH_STOPWORDS - {"not"}) | {"cat"}
    assert len(swapped) == len(ENGLISH_STOPWORDS)
    assert Analyzer(stopwords=swapped).fingerprint() != DEFAULT_ANALYZER.fingerprint()
    assert Analyzer(stopwords=set(swapped)).fingerprint() == Analyzer(stopwords=sorted(swapped)).fingerprint()
    # The default list keeps the fingerprint existing stores and models recorded.
    assert Analyzer(stopwords=sorted(ENGLISH_STOPWORDS)).fingerprint() == "analyzer:v2:stem=1:stop=152"
