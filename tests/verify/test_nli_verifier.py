"""The HF NLI scorer and verifier on tiny randomly initialised BERT heads saved to tmp folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from verityrag.errors import InvalidInputError, ModelLoadError
from verityrag.verify.nli_verifier import (
    CrossEncoderNLIVerifier,
    HFSequenceClassificationScorer,
    NLIVerifier,
    supported_class,
)
from verityrag.verify.protocols import NLIScorer, Verifier

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")


WORDS = (
    "the a engine steam watt improved design in 1769 newcomen built first pump water mines "
    "paris is capital of france coal piston . , moon made cheese berlin"
).split()


def save_tiny_bert(
    folder: Path, id2label: dict[int, str], favour: int | None = None, max_pos: int = 48
) -> Path:
    """A 1-layer BERT head with a WordPiece vocab; ``favour`` biases one class to ~certainty."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *dict.fromkeys(WORDS)]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = transformers.BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), model_max_length=max_pos)
    tokenizer.save_pretrained(folder)
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=max_pos,
        num_labels=len(id2label),
        id2label=id2label,
        label2id={v: k for k, v in id2label.items()},
    )
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config)
    if favour is not None:
        with torch.no_grad():
            model.classifier.weight.zero_()
            model.classifier.bias.fill_(-5.0)
            model.classifier.bias[favour] = 5.0
    model.save_pretrained(folder)
    return folder


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.delenv("VERIFIER_MODEL", raising=False)
    monkeypatch.delenv("VERIFIER_TRUST_REMOTE_CODE", raising=False)


@pytest.fixture(scope="session")
def binary_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_bert(tmp_path_factory.mktemp("bin"), {0: "LABEL_0", 1: "LABEL_1"})


# ------------------------------------------------------------------ label resolution (pure)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("id2label", "num", "expected"),
    [
        ({0: "contradiction", 1: "entailment", 2: "neutral"}, 3, 1),
        ({0: "ENTAILMENT", 1: "NEUTRAL", 2: "CONTRADICTION"}, 3, 0),
        ({0: "hallucinated", 1: "consistent"}, 2, 1),
        ({0: "supported", 1: "unsupported"}, 2, 0),
        ({"0": "0", "1": "1"}, 2, 1),
        ({0: "LABEL_0", 1: "LABEL_1"}, 2, 1),
        ({0: "LABEL_0"}, 1, None),
        ({0: "SUPPORTS", 1: "REFUTES"}, 2, 0),
        ({0: "REFUTES", 1: "SUPPORTS"}, 2, 1),
        ({0: "SUPPORTS", 1: "REFUTES", 2: "NOT ENOUGH INFO"}, 3, 0),
    ],
)
def test_supported_class_reads_id2label_layouts(
    id2label: dict[int, str], num: int, expected: int | None
) -> None:
    assert supported_class(id2label, num) == expected


@pytest.mark.unit
def test_supported_class_three_unnamed_classes_raises() -> None:
    with pytest.raises(ValueError, match="cannot tell which"):
        supported_class({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}, 3)


@pytest.mark.unit
@pytest.mark.parametrize(
    "id2label",
    [
        {0: "REFUTES", 1: "NOT ENOUGH INFO"},
        {0: "positive", 1: "negative"},
        {0: "LABEL_0", 1: "contradiction"},
    ],
)
def test_supported_class_binary_head_with_unknown_names_raises_listing_them(id2label: dict[int, str]) -> None:
    # Falling back to class 1 would read e.g. "negative" as supported: refuse instead.
    with pytest.raises(ValueError, match="cannot tell which") as info:
        supported_class(id2label, 2)
    for name in id2label.values():
        assert repr(name) in str(info.value)


# ------------------------------------------------------------------ real (tiny) models


@pytest.mark.integration
@pytest.mark.parametrize(
    ("id2label", "favour"),
    [
        ({0: "contradiction", 1: "entailment", 2: "neutral"}, 1),
        ({0: "entailment", 1: "neutral", 2: "contradiction"}, 0),
        ({0: "hallucinated", 1: "consistent"}, 1),
        ({0: "LABEL_0", 1: "LABEL_1"}, 1),
    ],
)
def test_scorer_reads_the_supported_class_of_each_layout(
    tmp_path: Path, id2label: dict[int, str], favour: int
) -> None:
    folder = save_tiny_bert(tmp_path / "m", id2label, favour=favour)
    scorer = HFSequenceClassificationScorer(folder)
    high = scorer.score_pairs([("the steam engine", "watt improved the engine")])
    assert scorer.support_index_ == favour
    assert high[0] > 0.99
    # The same head biased towards another class must read as unsupported.
    other = save_tiny_bert(tmp_path / "o", id2label, favour=(favour + 1) % len(id2label))
    assert HFSequenceClassificationScorer(other).score_pairs([("the steam engine", "watt")])[0] < 0.01


@pytest.mark.integration
def test_scorer_unresolvable_head_raises_model_load_error(tmp_path: Path) -> None:
    folder = save_tiny_bert(tmp_path / "m", {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})
    with pytest.raises(ModelLoadError, match="cannot tell which"):
        HFSequenceClassificationScorer(folder).warm_up()


@pytest.mark.integration
def test_scorer_binary_head_with_unknown_names_raises_model_load_error(tmp_path: Path) -> None:
    folder = save_tiny_bert(tmp_path / "m", {0: "REFUTES", 1: "NOT ENOUGH INFO"}, favour=1)
    with pytest.raises(ModelLoadError, match="cannot tell which") as info:
        HFSequenceClassificationScorer(folder).warm_up()
    assert "'REFUTES'" in str(info.value)
    assert "'NOT ENOUGH INFO'" in str(info.value)


@pytest.mark.integration
def test_scorer_supports_refutes_head_is_not_inverted(tmp_path: Path) -> None:
    # {0: SUPPORTS, 1: REFUTES}: a head sure of REFUTES must read as unsupported.
    folder = save_tiny_bert(tmp_path / "m", {0: "SUPPORTS", 1: "REFUTES"}, favour=1)
    scorer = HFSequenceClassificationScorer(folder)
    assert scorer.score_pairs([("the steam engine", "watt improved the engine")])[0] < 0.01
    assert scorer.support_index_ == 0


@pytest.mark.integration
def test_scorer_is_lazy_and_an_nli_scorer(binary_model: Path) -> None:
    scorer = HFSequenceClassificationScorer(binary_model)
    assert isinstance(scorer, NLIScorer)
    assert scorer._model is None  # nothing loads in the constructor
    assert scorer.score_pairs([]) == []
    assert scorer._model is None


def _windows_that_fit(scorer: HFSequenceClassificationScorer, premise: str, hypothesis: str) -> list[str]:
    """The scorer's windows of ``premise``: more than one, each fitting the model next to ``hypothesis``."""
    scorer.warm_up()
    windows = scorer._windows(premise, hypothesis)
    assert len(windows) > 1
    for window in windows:
        pair = scorer._tokenizer(window, hypothesis, truncation=False)["input_ids"]
        assert len(pair) <= scorer.max_length_
    return windows


@pytest.mark.integration
def test_scorer_long_premise_scored_in_windows_max_over_windows(binary_model: Path) -> None:
    scorer = HFSequenceClassificationScorer(binary_model, max_length=24, window_overlap_sentences=1)
    sentences = [
        "newcomen built the first steam engine in 1769 .",
        "watt improved the design .",
        "the engine pump water in mines .",
        "paris is the capital of france .",
        "the moon is made of cheese .",
        "berlin is a capital .",
    ]
    premise = " ".join(s[0].upper() + s[1:] for s in sentences)
    hypothesis = "watt improved the engine"
    windows = _windows_that_fit(scorer, premise, hypothesis)
    # Overlap: consecutive windows share a sentence.
    assert windows[0].split(" . ")[-1].strip(" .") in windows[1]
    per_window = scorer._predict([(w, hypothesis) for w in windows])
    assert scorer.score_pairs([(premise, hypothesis)]) == [pytest.approx(max(per_window))]
    # A short premise is one window.
    assert scorer._windows("Watt improved the engine.", hypothesis) == ["Watt improved the engine."]


@pytest.mark.integration
def test_verifier_answer_score_is_min_over_sentences(binary_model: Path) -> None:
    verifier = CrossEncoderNLIVerifier(binary_model, threshold=0.5)
    assert isinstance(verifier, Verifier)
    evidence = "Watt improved the design in 1769. Newcomen built the first engine."
    answer = "Watt improved the design. The moon is made of cheese. Paris is the capital of France."
    parts = ["Watt improved the design.", "The moon is made of cheese.", "Paris is the capital of France."]
    singles = verifier.scorer.score_pairs([(evidence, p) for p in parts])
    assert len(set(singles)) > 1  # a random head still tells these apart
    assert verifier.score(evidence, answer) == pytest.approx(min(singles))
    results = verifier.verify(parts, [evidence])
    assert [r.score for r in results] == pytest.approx(singles)
    assert all(r.stage == "nli" and r.supported == (r.score >= 0.5) for r in results)


@pytest.mark.integration
def test_verifier_without_evidence_supports_nothing(binary_model: Path) -> None:
    results = CrossEncoderNLIVerifier(binary_model).verify(["Watt improved it."], ["  "])
    assert results[0].supported is False
    assert results[0].score == 0.0


@pytest.mark.integration
def test_verifier_model_from_env(binary_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERIFIER_MODEL", str(binary_model))
    verifier = CrossEncoderNLIVerifier()
    verifier.warm_up()
    assert verifier.verify(["Watt improved it."], ["Watt improved the design."])[0].stage == "nli"


# ------------------------------------------------------------------ errors


@pytest.mark.unit
def test_no_model_named_raises_model_load_error() -> None:
    with pytest.raises(ModelLoadError, match="VERIFIER_MODEL"):
        HFSequenceClassificationScorer().warm_up()


@pytest.mark.integration
def test_uncached_hub_name_offline_lists_what_was_tried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache
    with pytest.raises(ModelLoadError) as info:
        HFSequenceClassificationScorer("someone/no-such-nli-model").warm_up()
    tried = [source for source, _ in info.value.attempts]
    assert tried[0].startswith("local folder")
    assert "offline" in tried[1]
    assert "someone/no-such-nli-model" in str(info.value)


@pytest.mark.integration
def test_custom_code_needs_trust_env(
    binary_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json
    import shutil

    folder = tmp_path / "custom"
    shutil.copytree(binary_model, folder)
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"] = {"AutoModelForSequenceClassification": "modeling_custom.CustomModel"}
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match="VERIFIER_TRUST_REMOTE_CODE=1"):
        HFSequenceClassificationScorer(folder).warm_up()
    # With the variable set the refusal is lifted (the missing module then fails, and says so).
    monkeypatch.setenv("VERIFIER_TRUST_REMOTE_CODE", "1")
    with pytest.raises(ModelLoadError) as info:
        HFSequenceClassificationScorer(folder).warm_up()
    assert "VERIFIER_TRUST_REMOTE_CODE=1 to allow" not in str(info.value)


@pytest.mark.integration
@pytest.mark.parametrize("device", ["gpu", "no-such-device:0"])
def test_scorer_on_a_device_torch_cannot_use_raises_model_load_error_naming_it(
    binary_model: Path, device: str
) -> None:
    # model.to(device) ran outside the reporting: a bare RuntimeError (or AssertionError for
    # "cuda" on a CPU-only torch), which the API answers as an unexplained 500.
    with pytest.raises(ModelLoadError, match=f"device {device!r}"):
        HFSequenceClassificationScorer(binary_model, device=device).warm_up()


@pytest.mark.unit
@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"batch_size": 0}, "batch_size"),
        ({"max_length": 2}, "max_length"),
        ({"window_overlap_sentences": -1}, "window"),
    ],
)
def test_scorer_bad_parameters_raise(kwargs: dict[str, int], field: str) -> None:
    with pytest.raises(InvalidInputError, match=field):
        HFSequenceClassificationScorer("x", **kwargs)  # type: ignore[arg-type]


@pytest.mark.unit
def test_nli_verifier_bad_threshold_raises() -> None:
    with pytest.raises(InvalidInputError, match="threshold"):
        NLIVerifier(HFSequenceClassificationScorer("x"), threshold=1.5)


# ------------------------------------------------------------------ long inputs, lazy loading


@pytest.mark.integration
def test_scorer_hypothesis_longer_than_the_window_is_scored_in_parts_min_over_parts(
    binary_model: Path,
) -> None:
    # A hypothesis over the window raised "Truncation error: Sequence to truncate too short".
    scorer = HFSequenceClassificationScorer(binary_model, max_length=24)
    sentence = "Watt improved the steam engine design in 1769."
    hypothesis = " ".join([sentence] * 6)  # ~54 tokens against a 24-token window
    scorer.warm_up()
    parts = scorer._hypothesis_parts(hypothesis)
    assert parts == [sentence] * 6
    premise = "Newcomen built the first steam engine. Watt improved the design."
    [score] = scorer.score_pairs([(premise, hypothesis)])
    assert score == pytest.approx(scorer.score_pairs([(premise, sentence)])[0])
    # A sentence alone over the window (no end punctuation) is cut between words; nothing dropped.
    run_on = " ".join(["watt improved the engine"] * 12)
    pieces = scorer._hypothesis_parts(run_on)
    assert len(pieces) > 1
    assert " ".join(pieces).split() == run_on.split()
    singles = scorer.score_pairs([(premise, p) for p in pieces])
    assert scorer.score_pairs([(premise, run_on)]) == [pytest.approx(min(singles))]


@pytest.mark.integration
def test_scorer_premise_sentence_longer_than_the_window_is_cut_not_truncated(binary_model: Path) -> None:
    # One run-on sentence (a list without end punctuation) was one window, truncated to the
    # model's length: the evidence at its end was never read.
    scorer = HFSequenceClassificationScorer(binary_model, max_length=24)
    premise = " ".join(["watt improved the engine design in 1769"] * 8) + " paris is capital of france"
    hypothesis = "paris is capital"
    windows = _windows_that_fit(scorer, premise, hypothesis)
    assert "france" in windows[-1]


@pytest.mark.integration
def test_scorer_warm_up_publishes_the_model_only_once_its_window_is_set(binary_model: Path) -> None:
    # warm_up() checks _model without the lock: a second thread that saw it set went on with
    # max_length_ still 0 (8-token windows, then a tokenizer call with max_length=0).
    seen: list[int] = []

    class Watching(HFSequenceClassificationScorer):
        def __setattr__(self, name: str, value: object) -> None:
            if name == "_model" and value is not None:
                seen.append(self.max_length_)
            super().__setattr__(name, value)

    scorer = Watching(binary_model)
    scorer.warm_up()
    assert seen == [48]
    assert scorer.model_version
    assert scorer._tokenizer is not None


@pytest.mark.integration
def test_scorer_shared_by_threads_scores_every_call(binary_model: Path) -> None:
    # The fast tokenizer's truncation / padding settings are one shared object that calls
    # with other settings rewrite (windowing counts tokens untruncated, scoring truncates):
    # threads sharing a scorer, as API workers do, raised "Unable to create tensor ...".
    from concurrent.futures import ThreadPoolExecutor

    scorer = HFSequenceClassificationScorer(binary_model, max_length=24, batch_size=2)
    premise = (
        "Newcomen built the first steam engine in 1769. Watt improved the design. "
        "The engine pump water in mines. Paris is the capital of france."
    )
    pairs = [(premise, "watt improved the engine"), ("the steam engine", "paris")]
    expected = scorer.score_pairs(pairs)

    def work(_: int) -> list[list[float]]:
        return [scorer.score_pairs(pairs) for _ in range(40)]

    with ThreadPoolExecutor(8) as pool:
        results = [r for rs in pool.map(work, range(8)) for r in rs]
    assert all(r == pytest.approx(expected) for r in results)
