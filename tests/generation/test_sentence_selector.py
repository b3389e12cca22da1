"""SentenceSelector: features, fitting, persistence, and the shipped model against the baseline."""

from __future__ import annotations

import json
import pickle
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from verityrag import VerityRAGPipeline
from verityrag.errors import InvalidInputError, ModelLoadError, NotFittedError
from verityrag.eval.metrics import contains_gold
from verityrag.generation.extractive import CoverageRanker
from verityrag.generation.sentence_selector import (
    FEATURE_NAMES,
    META_FILENAME,
    MODEL_FILENAME,
    N_FEATURES,
    WH_CATEGORIES,
    SentenceSelector,
    extract_features,
    question_category,
    relative_idf_weights,
)
from verityrag.text.sentences import sentence_spans
from verityrag.types import Chunk, Hit

DATA_DIR = Path(__file__).resolve().parents[2] / "data" / "built"
F = {name: i for i, name in enumerate(FEATURE_NAMES)}

# ------------------------------------------------------------------ helpers


def make_hit(doc_id: str, text: str, title: str = "", bm25: float = 5.0, dense: float = 0.3) -> Hit:
    chunk = Chunk(f"{doc_id}#0", doc_id, title, text, 0, 0, len(text))
    return Hit(chunk=chunk, score=1.0, bm25_score=bm25, dense_score=dense)


def flat_idf(term: str) -> float:
    return 2.0


_PEOPLE = ["Marlow", "Quenby", "Tarrant", "Ulverston", "Bexley", "Corwen", "Dunmore", "Elstow"]
_ACTS = ["founded", "sold", "rebuilt", "painted", "moved", "closed", "opened", "renamed"]
_THINGS = ["mill", "chapel", "bridge", "harbour", "library", "theatre", "tower", "school"]


def when_group(rng: random.Random) -> tuple[str, list[Hit], int]:
    """A 'When did X <act> the Y?' question whose best-covering sentence is NOT the answer.

    The distractor repeats every question word but has no date; the answer sentence
    has a year and covers only part of the question. Returns (question, hits, answer index).
    """
    person, act, thing = rng.choice(_PEOPLE), rng.choice(_ACTS), rng.choice(_THINGS)
    year = rng.randint(1500, 1999)
    sentences = [
        f"The {thing} that {person} {act} is well known.",
        f"{person} {act} it in {year}.",
        "Visitors still come every summer.",
    ]
    answer = 1
    if rng.random() < 0.5:  # answer position varies
        sentences[0], sentences[1] = sentences[1], sentences[0]
        answer = 0
    hits = [make_hit("d0", " ".join(sentences), title=f"{person} history")]
    return f"When did {person} {act} the {thing}?", hits, answer


@pytest.fixture(scope="module")
def tiny_selector() -> SentenceSelector:
    """A selector fitted on synthetic 'when' questions: the answer is the sentence with a year."""
    rng = random.Random(0)
    matrices, labels, groups = [], [], []
    for _ in range(80):
        question, hits, answer = when_group(rng)
        feats = extract_features(question, hits, flat_idf)
        y = np.zeros(len(feats.sentences))
        y[answer] = 1
        matrices.append(feats.matrix)
        labels.append(y)
        groups.append(len(y))
    selector = SentenceSelector(n_estimators=20, num_leaves=4, min_child_samples=2)
    return selector.fit(
        np.concatenate(matrices), np.concatenate(labels), groups, metadata={"data": "synthetic"}
    )


# ------------------------------------------------------------------ unit: model behaviour


@pytest.mark.unit
def test_select_unfitted_raises_not_fitted_with_how_to_fix() -> None:
    with pytest.raises(NotFittedError, match=r"fit\(.*SentenceSelector\.default\(\).*load"):
        SentenceSelector().select("When?", [make_hit("d", "It was in 1990.")], flat_idf)


@pytest.mark.unit
@pytest.mark.parametrize("method", ["save", "score"])
def test_other_methods_unfitted_raise_not_fitted(method: str, tmp_path: Path) -> None:
    selector = SentenceSelector()
    arg: Any = tmp_path if method == "save" else np.zeros((1, N_FEATURES), np.float32)
    with pytest.raises(NotFittedError):
        getattr(selector, method)(arg)


@pytest.mark.unit
def test_init_only_stores_params() -> None:
    selector = SentenceSelector(n_estimators=7, num_leaves=3)
    assert not hasattr(selector, "booster_")
    assert (selector.n_estimators, selector.num_leaves) == (7, 3)
    assert "unfitted" in repr(selector)


@pytest.mark.unit
def test_fit_returns_self_and_sets_learned_state(tiny_selector: SentenceSelector) -> None:
    assert tiny_selector.booster_ is not None
    assert tiny_selector.metadata_ == {"data": "synthetic"}
    assert "fitted" in repr(tiny_selector)


@pytest.mark.unit
def test_select_after_fit_ranks_answer_sentence_first_where_baseline_does_not(
    tiny_selector: SentenceSelector,
) -> None:
    rng = random.Random(99)  # questions not seen in training
    for _ in range(10):
        question, hits, answer = when_group(rng)
        ranked = tiny_selector.select(question, hits, flat_idf)
        answer_text = hits[0].chunk.text[slice(*sentence_spans(hits[0].chunk.text)[answer])]
        assert ranked[0].sentence.text == answer_text
        baseline = CoverageRanker(tiny_selector.analyzer).candidates(question, hits, flat_idf)
        assert baseline[0].sentence.text != answer_text  # the case the model exists for


@pytest.mark.unit
def test_select_returns_every_sentence_of_top_hits_best_first_with_citations(
    tiny_selector: SentenceSelector,
) -> None:
    hits = [
        make_hit(f"d{i}", f"Sentence one of doc {i}. It was built in 19{i}0. Nothing more.", title=f"T{i}")
        for i in range(5)
    ]
    ranked = tiny_selector.select("When was doc 1 built?", hits, flat_idf)
    assert len(ranked) == 3 * tiny_selector.max_hits  # three sentences in each of the top 3 hits
    assert {s.hit_rank for s in ranked} == {0, 1, 2}
    scores = [s.score for s in ranked]
    assert scores == sorted(scores, reverse=True)
    for scored in ranked:
        (cit,) = scored.sentence.citations
        chunk = hits[scored.hit_rank].chunk
        assert (cit.chunk_id, cit.doc_id, cit.title) == (chunk.chunk_id, chunk.doc_id, chunk.title)
        assert chunk.text[cit.start : cit.end] == scored.sentence.text
        assert scored.features.shape == (N_FEATURES,)
        assert scored.feature("hit_rank") == scored.hit_rank


@pytest.mark.unit
def test_select_with_no_hits_returns_empty(tiny_selector: SentenceSelector) -> None:
    assert tiny_selector.select("When?", [], flat_idf) == []


@pytest.mark.unit
def test_fit_rejects_wrong_feature_count() -> None:
    with pytest.raises(InvalidInputError, match=f"expected \\(n, {N_FEATURES}\\)"):
        SentenceSelector().fit(np.zeros((4, 3)), [0, 1, 0, 1], [2, 2])


@pytest.mark.unit
def test_fit_rejects_groups_that_do_not_cover_rows() -> None:
    with pytest.raises(InvalidInputError, match="group"):
        SentenceSelector().fit(np.zeros((4, N_FEATURES)), [0, 1, 0, 1], [2, 1])


@pytest.mark.unit
def test_fit_rejects_unknown_objective() -> None:
    with pytest.raises(InvalidInputError, match="lambdarank, binary"):
        SentenceSelector(objective="regression").fit(  # type: ignore[arg-type]
            np.zeros((2, N_FEATURES)), [0, 1], [2]
        )


# ------------------------------------------------------------------ unit: features


@pytest.mark.unit
@pytest.mark.parametrize(
    "question",
    [
        "When did Marlow found the mill?",
        "Who is he?",  # every question word is a stopword
        "",
        "How many zzyzx qqq?",  # terms the index has never seen (idf 0)
    ],
)
def test_features_have_right_length_and_are_finite(question: str) -> None:
    hits = [
        make_hit("a", "Marlow founded the mill in 1820. It cost $5 million, 20% more.", title="Mill"),
        make_hit("b", "A single sentence without a full stop", title=""),
        Hit(make_hit("c", "He said so.").chunk, 0.5, 0.0, 0.0, rerank_score=-1.5),
    ]

    def idf(term: str) -> float:
        return {"marlow": 5.0, "mill": 1.0, "found": 0.2}.get(term, 0.0)

    feats = extract_features(question, hits, idf)
    assert feats.matrix.shape == (len(feats.sentences), N_FEATURES) == (4, len(FEATURE_NAMES))
    assert feats.matrix.dtype == np.float32
    assert np.isfinite(feats.matrix).all()
    assert len(set(FEATURE_NAMES)) == N_FEATURES


@pytest.mark.unit
def test_features_named_values_match_their_meaning() -> None:
    text = "Marlow founded the mill in 1820. The weather was fine."
    hits = [make_hit("a", text, title="Marlow", bm25=10.0, dense=0.4), make_hit("b", "Unrelated words here.")]
    feats = extract_features("When did Marlow found the mill?", hits, flat_idf)
    answer, weather, unrelated = feats.matrix
    assert answer[F["cov_idf"]] == pytest.approx(1.0)
    assert answer[F["cov_plain"]] == pytest.approx(1.0)
    assert weather[F["cov_idf"]] == pytest.approx(0.0)
    assert weather[F["cov_idf_prev"]] == pytest.approx(1.0)
    assert answer[F["cov_idf_title"]] == pytest.approx(1 / 3, abs=1e-4)  # marlow of {marlow, found, mill}
    assert answer[F["wh_when"]] == 1.0
    assert sum(answer[F[f"wh_{c}"]] for c in WH_CATEGORIES) == 1.0
    assert answer[F["has_year"]] == 1.0
    assert answer[F["has_number"]] == 1.0
    assert answer[F["type_match"]] == 1.0
    assert weather[F["has_year"]] == 0.0
    assert answer[F["hit_rank"]] == 0.0
    assert unrelated[F["hit_rank"]] == 1.0
    assert answer[F["bm25_norm"]] == pytest.approx(10.0 / (3 * 2.0 * 2.5))
    assert answer[F["dense_score"]] == pytest.approx(0.4)
    assert answer[F["rerank_score"]] == 0.0
    assert answer[F["cov_idf_minus_best_other"]] == pytest.approx(1.0)
    assert weather[F["cov_idf_minus_best_other"]] == pytest.approx(-1.0)
    assert answer[F["new_terms"]] == 1.0  # "1820" is the only term the question lacks
    assert answer[F["n_candidates"]] == 3.0


@pytest.mark.unit
@pytest.mark.parametrize(
    ("question", "category"),
    [
        ("Who designed the trophy?", "who"),
        ("Whose idea was it?", "who"),
        ("When did it open?", "when"),
        ("Where is the mill?", "where"),
        ("How many people came?", "how_many"),
        ("How much did it cost?", "how_many"),
        ("In what year did it open?", "what_year"),
        ("Which year was it?", "what_year"),
        ("Which team won?", "which"),
        ("What is oxygen?", "what"),
        ("Why did it fail?", "why"),
        ("How does it work?", "how"),
        ("Name the river.", "other"),
    ],
)
def test_question_category(question: str, category: str) -> None:
    assert question_category(question) == category
    assert category in WH_CATEGORIES


@pytest.mark.unit
def test_relative_idf_weights_do_not_move_when_every_idf_shifts() -> None:
    idfs = {"a": 1.2, "b": 3.5, "c": 6.0, "unseen": 0.0}
    shifted = {t: (v + 2.7 if v > 0 else 0.0) for t, v in idfs.items()}
    assert relative_idf_weights(idfs) == pytest.approx(relative_idf_weights(shifted))
    weights = relative_idf_weights(idfs)
    assert weights["a"] == pytest.approx(1.0)  # the question's commonest term
    assert weights["unseen"] == pytest.approx(0.0, abs=1e-5)


# ------------------------------------------------------------------ unit: persistence


@pytest.mark.unit
def test_save_load_round_trip_gives_identical_scores(tiny_selector: SentenceSelector, tmp_path: Path) -> None:
    tiny_selector.save(tmp_path)
    assert (tmp_path / MODEL_FILENAME).exists()
    meta = json.loads((tmp_path / META_FILENAME).read_text(encoding="utf-8"))
    assert meta["feature_names"] == list(FEATURE_NAMES)
    assert meta["training"] == {"data": "synthetic"}
    loaded = SentenceSelector.load(tmp_path)
    assert loaded.metadata_ == {"data": "synthetic"}
    assert (loaded.n_estimators, loaded.num_leaves) == (tiny_selector.n_estimators, tiny_selector.num_leaves)
    rng = random.Random(5)
    for _ in range(5):
        question, hits, _ = when_group(rng)
        before = tiny_selector.select(question, hits, flat_idf)
        after = loaded.select(question, hits, flat_idf)
        assert [s.score for s in before] == [s.score for s in after]
        assert [s.sentence for s in before] == [s.sentence for s in after]


@pytest.mark.unit
def test_pickle_round_trip_gives_identical_scores(tiny_selector: SentenceSelector) -> None:
    copy = pickle.loads(pickle.dumps(tiny_selector))
    question, hits, _ = when_group(random.Random(11))
    before = [s.score for s in tiny_selector.select(question, hits, flat_idf)]
    assert [s.score for s in copy.select(question, hits, flat_idf)] == before


@pytest.mark.unit
def test_load_missing_directory_raises_model_load_error(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="sentence selector"):
        SentenceSelector.load(tmp_path / "nowhere")


@pytest.mark.unit
def test_load_with_other_feature_names_says_to_retrain(
    tiny_selector: SentenceSelector, tmp_path: Path
) -> None:
    tiny_selector.save(tmp_path)
    meta_path = tmp_path / META_FILENAME
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta["feature_names"] = meta["feature_names"][:-1]
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(ModelLoadError, match=r"verityrag\.train selector"):
        SentenceSelector.load(tmp_path)


# ------------------------------------------------------------------ integration: shipped model, real data


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture(scope="module")
def eval_pipeline() -> VerityRAGPipeline:
    pipeline = VerityRAGPipeline()
    pipeline.ingest_documents(_read_jsonl(DATA_DIR / "corpus.jsonl"), progress=False)
    return pipeline


@pytest.mark.integration
def test_default_loads_shipped_model_with_training_metadata() -> None:
    selector = SentenceSelector.default()
    assert selector.booster_.num_feature() == N_FEATURES
    meta = selector.metadata_
    for key in ("data", "date", "sizes", "metrics"):
        assert key in meta
    assert meta["sizes"]["questions_used"] > 1000


@pytest.mark.integration
def test_default_picks_gold_sentence_at_least_as_often_as_baseline(eval_pipeline: VerityRAGPipeline) -> None:
    questions = [q for q in _read_jsonl(DATA_DIR / "questions" / "calibration.jsonl") if q["answers"]][:40]
    selector = SentenceSelector.default()
    baseline = CoverageRanker(eval_pipeline.analyzer)
    snap = eval_pipeline.index.snapshot()

    def idf(term: str) -> float:
        return eval_pipeline.index.idf(term, snap)

    model_ok = baseline_ok = 0
    for q in questions:
        hits = eval_pipeline.retriever.search(q["question"], 5, snap)
        model_ok += contains_gold(selector.select(q["question"], hits, idf)[0].sentence.text, q["answers"])
        baseline_ok += contains_gold(
            baseline.candidates(q["question"], hits, idf)[0].sentence.text, q["answers"]
        )
    assert model_ok >= baseline_ok
    assert model_ok >= 0.5 * len(questions)


def _noise_documents(n: int, seed: int = 0) -> list[dict[str, str]]:
    """Documents made of invented words: they share no term with any real question."""
    rng = random.Random(seed)
    syllables = ["zor", "blat", "quex", "vin", "trom", "plu", "gark", "mef", "dru", "sna", "wix", "yol"]

    def word() -> str:
        return "".join(rng.choice(syllables) for _ in range(3))

    return [
        {"doc_id": f"noise-{i}", "title": word().title(), "text": " ".join(word() for _ in range(120)) + "."}
        for i in range(n)
    ]


# Features the retriever hands over as they are: BM25's normalisation still follows the collection's
# IDFs and average length, and a hit's dense score is 0 when it falls outside the dense candidate list.
_RETRIEVER_SCORES = ("bm25_norm", "dense_score")


@pytest.mark.integration
def test_features_do_not_change_when_irrelevant_documents_are_added(
    corpus_slice: list[dict[str, str]],
) -> None:
    small = VerityRAGPipeline()
    small.ingest_documents(corpus_slice, progress=False)
    large = VerityRAGPipeline()
    large.ingest_documents([*corpus_slice, *_noise_documents(1000)], progress=False)
    assert len(large.index) >= 5 * len(small.index)
    titles = {d["title"] for d in corpus_slice}
    questions = [
        q["question"]
        for q in _read_jsonl(DATA_DIR / "questions" / "calibration.jsonl")
        if q["answers"] and q["title"] in titles
    ][:30]
    keep = [i for i, name in enumerate(FEATURE_NAMES) if name not in _RETRIEVER_SCORES]
    compared = 0
    for question in questions:
        hits_small = small.retriever.search(question, 5)
        hits_large = large.retriever.search(question, 5)
        if [h.chunk_id for h in hits_small[:3]] != [h.chunk_id for h in hits_large[:3]]:
            continue  # retrieval itself changed; features are not comparable
        a = extract_features(question, hits_small, small.index.idf).matrix[:, keep]
        b = extract_features(question, hits_large, large.index.idf).matrix[:, keep]
        np.testing.assert_allclose(a, b, atol=0.05, err_msg=question)
        compared += 1
    assert compared >= 10
