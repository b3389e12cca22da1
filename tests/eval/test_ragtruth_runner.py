"""The RAGTruth / HaluEval runner: data, splits, baselines, metrics, and the CLI flag."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from verityrag.errors import InvalidInputError, NotFittedError
from verityrag.eval.__main__ import main
from verityrag.eval.ragtruth import (
    TRAINED_SOURCES_KEY,
    GroundingScorer,
    LexicalEntityScorer,
    PairExample,
    ScoredRun,
    TfidfLogisticScorer,
    best_f1_threshold,
    build_scorer,
    ensemble_runs,
    evaluate_scores,
    guard_work_folders,
    load_halueval,
    load_ragtruth,
    render_table,
    run_ragtruth,
    score_dataset,
    split_ragtruth,
    stacked_run,
    table_notes,
    top_members,
    trained_sources,
)

pytestmark = pytest.mark.unit

PREMISE = "Question: who improved the engine?\n\nJames Watt improved the steam engine in 1769 in Glasgow."


def test_ragtruth_data_counts_and_fixed_source_split() -> None:
    rows = load_ragtruth()
    assert len(rows) == 829
    assert sum(e.unsupported for e in rows) == 160  # responses with any hallucination span
    fit, test = split_ragtruth(rows)
    assert len(fit) + len(test) == 829
    assert not {e.group for e in fit} & {e.group for e in test}
    assert split_ragtruth(rows) == (fit, test)  # fixed, not random


def test_halueval_splits_are_disjoint_and_balanced() -> None:
    train, fit, test = load_halueval(train_items=30, fit_items=10, report_items=10)
    assert (len(train), len(fit), len(test)) == (60, 20, 20)
    assert min(int(e.group) for e in test) == 8000  # the guard cross-encoder's unseen items
    assert {int(e.group) for e in fit} == set(range(7500, 7510))
    assert max(int(e.group) for e in train) < 7500
    groups = [{e.group for e in part} for part in (train, fit, test)]
    assert not groups[0] & groups[1]
    assert not groups[1] & groups[2]
    assert not groups[0] & groups[2]
    assert sum(e.unsupported for e in test) == 10
    # Paragraphs are set apart as in training ("...century.First for Women" -> "century. First").
    assert not any(re.search(r"[a-z]\.[A-Z]", e.premise) for e in train + fit + test)
    with pytest.raises(InvalidInputError, match=r"needs 1\.\.2000"):
        load_halueval(report_items=5000)


def test_lexical_baseline_penalises_new_numbers_and_names() -> None:
    scorer = LexicalEntityScorer()
    good, number, name = scorer.score_pairs(
        [
            (PREMISE, "James Watt improved the steam engine in 1769."),
            (PREMISE, "James Watt improved the steam engine in 1781."),
            (PREMISE, "James Watt improved the steam engine in Paris."),
        ]
    )
    assert good == pytest.approx(1.0)
    assert number < good
    assert name < good


def test_grounding_scorer_wraps_the_checker() -> None:
    good, bad = GroundingScorer().score_pairs(
        [(PREMISE, "Watt improved the steam engine in 1769."), (PREMISE, "Watt improved it in 1781.")]
    )
    assert good > 0.9 > bad


def test_tfidf_lr_learns_novel_words_and_needs_fit() -> None:
    pairs, labels = [], []
    for i in range(40):
        pairs.append((PREMISE, f"Watt improved the engine in 1769 case {i}."))
        labels.append(1)
        pairs.append((PREMISE, f"Watt invented television in Berlin case {i}."))
        labels.append(0)
    with pytest.raises(NotFittedError):
        TfidfLogisticScorer().score_pairs(pairs[:1])
    scorer = TfidfLogisticScorer().fit(pairs, labels)
    ok, bad = scorer.score_pairs(
        [
            (PREMISE, "Watt improved the engine in 1769 case 99."),
            (PREMISE, "Watt invented television in Berlin case 99."),
        ]
    )
    assert ok > 0.5 > bad
    oof = scorer.out_of_fold(pairs, labels)
    assert len(oof) == len(pairs)


def test_evaluate_scores_threshold_from_fit_half() -> None:
    # Perfect separation: unsupported pairs score low P(supported).
    fit_s, fit_y = [0.9, 0.8, 0.2, 0.1], [0, 0, 1, 1]
    test_s, test_y = [0.95, 0.7, 0.3, 0.05], [0, 0, 1, 1]
    figures = evaluate_scores(fit_s, fit_y, test_s, test_y)
    assert figures["auroc"] == 1.0
    assert figures["f1"] == 1.0
    assert figures["balanced_accuracy"] == 1.0
    # Inverted scores on the report half: the threshold from the fit half does not adapt.
    flipped = evaluate_scores(fit_s, fit_y, [0.05, 0.3, 0.7, 0.95], test_y)
    assert flipped["auroc"] == 0.0
    assert flipped["recall"] == 0.0
    assert best_f1_threshold([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1]) == pytest.approx(0.5)


def test_ensembles_are_calibrated_aggregates() -> None:
    fit = [
        PairExample(PREMISE, h, y, str(i))
        for i, (h, y) in enumerate([("Watt improved it.", 0), ("Pigs fly.", 1)] * 5)
    ]
    runs, notes = score_dataset(["lexical", "grounding"], fit, fit, None, progress=False, dataset="t")
    assert notes == []
    ens = ensemble_runs(runs, [e.unsupported for e in fit])
    assert [r.name for r in ens] == ["ens-min", "ens-mean", "ens-max"]
    assert ens[0].ms_per_pair == pytest.approx(sum(r.ms_per_pair for r in runs))
    labels = [e.unsupported for e in fit]
    assert [r.name for r in top_members(runs, labels, k=1)] in (["lexical"], ["grounding"])


def test_stacked_run_learns_to_trust_the_informative_member_and_fits_its_threshold_out_of_fold() -> None:
    rng = np.random.default_rng(0)
    labels = [int(v) for v in rng.integers(0, 2, 200)]  # 1 = unsupported
    informative = [float(np.clip(0.8 - 0.6 * y + rng.normal(0, 0.1), 0, 1)) for y in labels]
    noise = [float(v) for v in rng.uniform(0, 1, 200)]
    runs = [ScoredRun("good", informative, informative, 1.0), ScoredRun("noise", noise, noise, 2.0)]
    stacked = stacked_run(runs, labels)
    assert stacked is not None
    assert stacked.name == "ens-lr"
    assert stacked.ms_per_pair == 3.0
    weights = dict(part.rsplit(" ", 1) for part in stacked.note.split("weights: ")[1].split(", "))
    assert float(weights["good"]) > 5 * abs(float(weights["noise"]))
    # Fitting-half scores are cross-fitted: they differ from the full model's scores on the same pairs.
    assert stacked.fit != pytest.approx(stacked.test)
    assert evaluate_scores(stacked.fit, labels, stacked.test, labels)["auroc"] > 0.95
    assert stacked_run(runs[:1], labels) is None


def test_unknown_or_missing_verifiers() -> None:
    with pytest.raises(InvalidInputError, match="unknown verifier"):
        build_scorer("magic")
    fit = [PairExample(PREMISE, "Watt improved it.", 0, "a"), PairExample(PREMISE, "Pigs fly.", 1, "b")]
    names = ["onnx:/nonexistent/nli", "guard:/nonexistent/guard"]
    runs, notes = score_dataset(names, fit, fit, None, progress=False, dataset="t")
    assert runs == []
    assert "onnx:/nonexistent/nli: skipped" in notes[0]
    assert "guard:/nonexistent/guard: skipped" in notes[1]


def test_guard_work_scan_skips_the_question_side_models(tmp_path: Path) -> None:
    for name in ("answerability", "answer_span", "reader"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "metadata.json").write_text("{}")
    (tmp_path / "guard").mkdir()
    (tmp_path / "guard" / "metadata.json").write_text("{}")
    names, notes = guard_work_folders(tmp_path)
    (tmp_path / "nli").mkdir()
    (tmp_path / "nli" / "metadata.json").write_text("{}")
    assert names == [f"guard:{tmp_path / 'guard'}"]
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "metadata.json").write_text("{}")
    assert guard_work_folders(tmp_path)[0] == [
        f"guard:{tmp_path / 'guard'}",
        f"nli:{tmp_path / 'nli'}",
        f"onnx:{tmp_path / 'other'}",
    ]
    assert [n.split(":")[0] for n in notes] == ["answer_span", "answerability", "reader"]
    assert all("skipped" in n for n in notes)
    assert guard_work_folders(tmp_path / "none")[0] == []


def test_guard_work_scan_skips_answerability_folders_by_their_recorded_name(tmp_path: Path) -> None:
    for folder, name in (("answerability_mpnet6", "answerability"), ("span_try", "reader"), ("mine", "x")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "metadata.json").write_text(json.dumps({"name": name}))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "metadata.json").write_text("not json")
    names, notes = guard_work_folders(tmp_path)
    assert names == [f"onnx:{tmp_path / 'broken'}", f"onnx:{tmp_path / 'mine'}"]
    assert [n.split(":")[0] for n in notes] == ["answerability_mpnet6", "span_try"]


def test_cli_ragtruth_lexical_writes_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rt.json"
    assert main(["--ragtruth", "--verifier", "lexical", "--out", str(out), "--no-progress"]) == 0
    report = json.loads(out.read_text())
    [row] = report["ragtruth"]["rows"]
    assert row["verifier"] == "lexical"
    assert 0.5 < row["auroc"] <= 1.0
    assert row["auroc_low"] < row["auroc"] < row["auroc_high"]  # bootstrap over report-half sources
    assert report["halueval"]["rows"][0]["verifier"] == "lexical"
    assert "| `lexical` |" in capsys.readouterr().out


def test_render_table_from_report() -> None:
    report = run_ragtruth(
        ["lexical", "grounding", "ens-max", "ens-lr"], halueval_report_items=10, progress=False
    )
    table = render_table(report)
    assert [line.split("|")[1].strip() for line in table.splitlines()[2:6]] == [
        "`lexical`",
        "`grounding`",
        "`ens-max`",
        "`ens-lr`",
    ]
    assert "ens-min" not in table
    lexical = report["ragtruth"]["rows"][0]
    assert f"| {lexical['auroc']:.3f} ({lexical['auroc_low']:.3f}-{lexical['auroc_high']:.3f}) |" in table
    assert "bootstrap interval" in table
    # ens2: the two members best on the fitting half (here only two members: no ens2 rows).
    assert "ens2" not in table


def test_table_notes_name_their_dataset_when_a_run_differs_between_them() -> None:
    # A row shows both datasets' figures; tfidf-lr is built differently on each, so an
    # unlabelled RAGTruth note would be read as describing the HaluEval figures too.
    def row(name: str, note: str) -> dict[str, object]:
        return {"verifier": name, "note": note}

    report = {
        "notes": [],
        "ragtruth": {
            "notes": [],
            "rows": [row("lexical", ""), row("same", "x"), row("tfidf-lr", "fitting half")],
        },
        "halueval": {
            "notes": ["nli: skipped"],
            "rows": [row("lexical", ""), row("same", "x"), row("tfidf-lr", "train pairs")],
        },
    }
    assert table_notes(report) == [
        "HaluEval: nli: skipped",
        "`same`: x",
        "`tfidf-lr`: RAGTruth: fitting half; HaluEval: train pairs",
    ]


class _AdaptedScorer:
    """A stand-in for a cross-encoder whose metadata says which RAGTruth sources it trained on."""

    def __init__(self, trained: set[str]) -> None:
        self.metadata = SimpleNamespace(data={TRAINED_SOURCES_KEY: sorted(trained)})

    def score_pairs(self, pairs: list[tuple[str, str]]) -> list[float]:
        return [0.1 if "Pigs" in h else 0.9 for _, h in pairs]


def test_a_model_trained_on_part_of_the_fitting_half_fits_its_threshold_on_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import verityrag.eval.ragtruth as rt

    fit = [
        PairExample(PREMISE, h, y, f"s{i}")
        for i, (h, y) in enumerate([("Watt improved it.", 0), ("Pigs fly.", 1)] * 6)
    ]
    trained = {"s0", "s1", "s2"}
    real_build = rt.build_scorer
    monkeypatch.setattr(
        rt, "build_scorer", lambda name: _AdaptedScorer(trained) if name == "nli:x" else real_build(name)
    )
    runs, _ = score_dataset(
        ["lexical", "grounding", "nli:x"], fit, fit, None, progress=False, dataset="ragtruth"
    )
    adapted = runs[-1]
    assert adapted.fit_keep == [e.group not in trained for e in fit]
    assert "trained on 3 fitting-half responses" in adapted.note
    assert trained_sources(_AdaptedScorer(trained)) == trained
    assert trained_sources(object()) == set()
    # The same run on HaluEval: no RAGTruth sources to hold out.
    runs, _ = score_dataset(["nli:x"], fit, fit, None, progress=False, dataset="halueval")
    assert runs[0].fit_keep is None
    report = rt._dataset_report("ragtruth", ["lexical", "grounding", "nli:x"], fit, fit, None, False, True)
    ens = next(r for r in report["rows"] if r["verifier"] == "ens-min")
    assert "nli:x" not in ens["note"]  # in-sample fitting scores stay out of the ensembles


def test_fold_models_become_one_cross_fitted_run_scored_out_of_fold() -> None:
    from verityrag.eval.ragtruth import ScoredRun, cross_fitted_run

    # Two models, each trained on half of four fitting examples (keep = not trained on).
    a = ScoredRun(
        "nli:guard_work/a", [0.9, 0.9, 0.2, 0.4], [0.1, 0.5], 3.0, fit_keep=[False, False, True, True]
    )
    b = ScoredRun(
        "nli:guard_work/b", [0.3, 0.7, 0.8, 0.8], [0.3, 0.9], 4.0, fit_keep=[True, True, False, False]
    )
    plain = ScoredRun("lexical", [0.5] * 4, [0.5, 0.5], 1.0)
    run = cross_fitted_run([plain, a, b])
    assert run is not None
    assert run.name == "folds:a+b"
    assert run.fit == [0.3, 0.7, 0.2, 0.4]  # each example from the model that never saw it
    assert run.test == pytest.approx([0.2, 0.7])  # the report half: mean of both
    assert run.fit_keep is None  # the held-out parts cover the fitting half
    assert run.ms_per_pair == 7.0
    # A fitting example both models trained on has no out-of-fold score: held out of the threshold.
    c = ScoredRun("nli:c", [0.1] * 4, [0.2, 0.2], 1.0, fit_keep=[False, True, True, True])
    d = ScoredRun("nli:d", [0.2] * 4, [0.2, 0.2], 1.0, fit_keep=[False, True, True, False])
    partial = cross_fitted_run([c, d])
    assert partial is not None
    assert partial.fit_keep == [False, True, True, True]
    assert partial.fit[1:] == pytest.approx([0.15, 0.15, 0.1])
    assert cross_fitted_run([plain, a]) is None


def test_guard_work_scan_tries_hf_nli_folders_but_not_language_model_caches(tmp_path: Path) -> None:
    nli3 = {
        "architectures": ["BertForSequenceClassification"],
        "id2label": {"0": "entailment", "1": "neutral"},
    }
    causal = {"architectures": ["Qwen2ForCausalLM"]}
    other_head = {
        "architectures": ["BertForSequenceClassification"],
        "id2label": {"0": "REFUTES", "1": "NEI"},
    }
    for folder, config in (("nli3", nli3), ("qwen", causal), ("fever", other_head)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "config.json").write_text(json.dumps(config))
    names, _ = guard_work_folders(tmp_path)
    assert names == [f"hf:{tmp_path / 'nli3'}"]


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("lettuce:KRLabsOrg/lettucedect-base-modernbert-en-v1", "TokenHallucinationDetector"),
        ("hhem:vectara/hallucination_evaluation_model", "RemoteCodePairScorer"),
        ("minicheck:lytang/MiniCheck-Flan-T5-Large", "Seq2SeqSupportScorer"),
    ],
)
def test_detector_verifiers_are_built_by_prefix_without_loading(name: str, cls: str) -> None:
    scorer = build_scorer(name)
    assert type(scorer).__name__ == cls
    assert getattr(scorer, "model", None) == name.split(":", 1)[1]
