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


@pytest.mark.unit
@pytest.mark.parametrize("stem", [True, False])
def test_analyze_gives_each_tokens_term_as_filtering_then_stemming_would(
    stem: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The analyzer remembers each token's term (None for a stopword) and forgets them all
    # past a bound; the terms must be the plain ones, before and after it forgets.
    import json
    from pathlib import Path

    import snowballstemmer

    from verityrag.text import analyzer as analyzer_module

    monkeypatch.setattr(analyzer_module, "_TERM_CACHE", 500)
    stemmer = snowballstemmer.stemmer("english")
    analyzer = Analyzer(stem=stem)
    corpus = Path(__file__).resolve().parents[2] / "data" / "built" / "corpus.jsonl"
    texts = ["The Straße and THE café's 3 ravens were running", "", "of the and"]
    if corpus.exists():
        with corpus.open(encoding="utf-8") as fh:
            texts += [json.loads(line)["text"] for _, line in zip(range(200), fh, strict=False)]
    for text in texts:
        plain = [t for t in analyzer.tokenize(text) if t not in analyzer.stopwords]
        expected = [stemmer.stemWord(t) for t in plain] if stem else plain
        assert analyzer.analyze(text) == expected
    assert len(analyzer._terms) <= 500


@pytest.mark.unit
def test_an_analyzer_sent_to_another_process_leaves_what_it_remembers_behind() -> None:
    import pickle

    analyzer = Analyzer()
    analyzer.analyze("The ravens were running over the hills")
    copy = pickle.loads(pickle.dumps(analyzer))
    assert len(copy._terms) == 0
    assert copy._recent == copy._older == {}
    assert copy.analyze("The ravens were running") == analyzer.analyze("The ravens were running")
    assert copy.fingerprint() == analyzer.fingerprint()


@pytest.mark.unit
def test_ascii_text_is_split_into_the_tokens_the_pattern_finds() -> None:
    import random

    from verityrag.text import analyzer as analyzer_module

    rng = random.Random(5)
    every_ascii = "".join(map(chr, range(128)))
    texts = [every_ascii, "a_b c-d e.f 3.14 x\ty\nz", ""]
    texts += ["".join(rng.choice(every_ascii) for _ in range(rng.randrange(60))) for _ in range(500)]
    for text in texts:
        assert analyzer_module._tokens(text) == analyzer_module._TOKEN_RE.findall(text)
