"""The adapters for detectors users bring, loaded by their real code from tiny models built here.

Token classification (LettuceDetect style) and seq2seq (MiniCheck style) use randomly initialised
tiny BERT / T5 weights saved to a tmp folder with the all-MiniLM-L6-v2 WordPiece tokenizer; the
custom-code pair model (HHEM style) is a tiny model whose own code (written to the folder, loaded
through ``auto_map``) has a ``predict(pairs)`` method.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from models._tiny_bert import TINY_BERT

from verityrag.errors import InvalidInputError, ModelLoadError
from verityrag.verify.detectors import (
    RemoteCodePairScorer,
    Seq2SeqSupportScorer,
    TokenHallucinationDetector,
    merge_spans,
    sentence_windows,
)
from verityrag.verify.nli_verifier import NLIVerifier
from verityrag.verify.protocols import NLIScorer
from verityrag.verify.stack import VerifierStack

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

pytestmark = pytest.mark.integration

EVIDENCE = "James Watt improved the steam engine in 1769. He added a separate condenser. Paris is in France."
LONG_EVIDENCE = " ".join(f"Filler sentence number {i} says nothing at all about engines." for i in range(40))


def _minilm_tokenizer() -> object:
    from verityrag.train.cross_encoder import minilm_path

    return transformers.AutoTokenizer.from_pretrained(str(minilm_path()))


@pytest.fixture(scope="module")
def token_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two tiny token classifiers: one marks every token unsupported, one none (bias-forced)."""
    tokenizer = _minilm_tokenizer()
    out = {}
    for name, favour in (("flags_all", 1), ("flags_none", 0)):
        folder = tmp_path_factory.mktemp(name)
        config = transformers.BertConfig(**TINY_BERT, num_labels=2)
        torch.manual_seed(0)
        model = transformers.BertForTokenClassification(config)
        with torch.no_grad():
            model.classifier.weight.zero_()
            model.classifier.bias.fill_(-4.0)
            model.classifier.bias[favour] = 4.0
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)  # type: ignore[attr-defined]
        out[name] = folder
    return out


def test_merge_spans_joins_runs_of_flagged_tokens_into_character_spans() -> None:
    answer = "Watt built it in 1780 in Paris."
    tokens = [
        (0, 4, 0.1),
        (5, 10, 0.2),
        (11, 13, 0.1),
        (14, 16, 0.7),
        (17, 21, 0.9),
        (22, 24, 0.2),
        (25, 30, 0.6),
    ]
    spans = merge_spans(answer, tokens, threshold=0.5)
    assert [(s.text, s.confidence) for s in spans] == [("in 1780", 0.9), ("Paris", 0.6)]
    assert merge_spans(answer, tokens, threshold=0.95) == []


def test_sentence_windows_keep_whole_sentences_within_the_budget_with_overlap() -> None:
    text = "One two three. Four five six. Seven eight nine. Ten eleven twelve."
    windows = sentence_windows(text, 6, lambda ts: [len(t.split()) for t in ts], overlap=1)
    assert windows == [
        "One two three. Four five six.",
        "Four five six. Seven eight nine.",
        "Seven eight nine. Ten eleven twelve.",
    ]
    assert sentence_windows("Short text.", 6, lambda ts: [len(t.split()) for t in ts]) == ["Short text."]
    # A sentence longer than a window is cut between words, nothing dropped.
    long = sentence_windows("a b c d e f g h i j", 4, lambda ts: [len(t.split()) for t in ts], overlap=0)
    assert " ".join(long).split() == list("abcdefghij")
    assert all(len(w.split()) <= 4 for w in long)


def test_token_detector_flags_every_answer_token_as_one_span_and_scores_low(
    token_models: dict[str, Path],
) -> None:
    detector = TokenHallucinationDetector(token_models["flags_all"])
    assert isinstance(detector, NLIScorer)
    answer = "Watt built it in 1780."
    found = detector.detect(EVIDENCE, answer, question="Who built it?")
    assert len(found.spans) == 1
    span = found.spans[0]
    assert answer[span.start : span.end] == span.text == answer
    assert span.confidence > 0.99
    assert found.score < 0.01
    assert [answer[s:e] for s, e, _ in found.token_probabilities][:2] == ["Watt", "built"]
    assert detector.score_pairs([(EVIDENCE, answer)]) == pytest.approx([found.score])


def test_token_detector_without_flags_finds_no_span_and_passes_in_the_verifier(
    token_models: dict[str, Path],
) -> None:
    detector = TokenHallucinationDetector(token_models["flags_none"])
    found = detector.detect([EVIDENCE, "Another passage."], "Watt added a separate condenser.")
    assert found.spans == ()
    assert found.score > 0.99
    results = NLIVerifier(detector, threshold=0.5).verify(["Watt added a separate condenser."], [EVIDENCE])
    assert results[0].supported
    stack = VerifierStack.default(nli=NLIVerifier(detector), deterministic=False)
    assert stack.verify(["Watt added a condenser."], [EVIDENCE])[0].stage == "nli"


def test_token_detector_windows_evidence_longer_than_the_model(token_models: dict[str, Path]) -> None:
    detector = TokenHallucinationDetector(token_models["flags_all"])
    detector.warm_up()
    assert detector.max_length_ == 128
    answer = "Watt built it."
    prompts: list[int] = []
    original = detector._token_probabilities

    def spy(texts: list[str], ans: str) -> list[tuple[int, int, float]]:
        prompts.append(len(texts))
        return original(texts, ans)

    detector._token_probabilities = spy  # type: ignore[method-assign]
    found = detector.detect(LONG_EVIDENCE, answer)
    assert prompts[0] > 1  # several windows, each within the model
    assert found.spans[0].text == answer


def test_token_detector_refuses_a_bad_threshold_and_names_a_missing_model(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="threshold"):
        TokenHallucinationDetector("x", threshold=1.5)
    with pytest.raises(ModelLoadError) as info:
        TokenHallucinationDetector(tmp_path / "nothing-here", local_files_only=True).warm_up()
    assert "local folder" in info.value.attempts[0][0]


CONFIG_CODE = """
from transformers import PretrainedConfig


class TinyHHEMConfig(PretrainedConfig):
    model_type = "tiny_hhem"

    def __init__(self, max_words=50, **kwargs):
        super().__init__(**kwargs)
        self.max_words = max_words
"""

MODEL_CODE = """
import torch
from transformers import PreTrainedModel

from .configuration_tiny_hhem import TinyHHEMConfig


class TinyHHEMForSequenceClassification(PreTrainedModel):
    config_class = TinyHHEMConfig

    def __init__(self, config):
        super().__init__(config)
        self.bias = torch.nn.Parameter(torch.zeros(1))
        self.post_init()

    def _init_weights(self, module):
        pass

    def predict(self, pairs):
        # P(consistent): the share of the hypothesis words in the premise, and nothing read past
        # max_words (a stand-in for a model with a limited window).
        out = []
        for premise, hypothesis in pairs:
            words = premise.lower().replace(".", " ").split()
            hyp = set(hypothesis.lower().replace(".", " ").split())
            seen = len(hyp & set(words)) / max(1, len(hyp)) if len(words) <= self.config.max_words else 0.0
            out.append(seen + float(self.bias.detach()))
        return torch.tensor(out)
"""


@pytest.fixture(scope="module")
def remote_code_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from safetensors.torch import save_file

    folder = tmp_path_factory.mktemp("tiny_hhem")
    (folder / "configuration_tiny_hhem.py").write_text(CONFIG_CODE)
    (folder / "modeling_tiny_hhem.py").write_text(MODEL_CODE)
    config = {
        "model_type": "tiny_hhem",
        "architectures": ["TinyHHEMForSequenceClassification"],
        "max_words": 50,
        "auto_map": {
            "AutoConfig": "configuration_tiny_hhem.TinyHHEMConfig",
            "AutoModelForSequenceClassification": "modeling_tiny_hhem.TinyHHEMForSequenceClassification",
        },
    }
    (folder / "config.json").write_text(json.dumps(config))
    save_file({"bias": torch.zeros(1)}, str(folder / "model.safetensors"))
    return folder


def test_remote_code_model_is_refused_without_trust_and_says_how(
    remote_code_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VERIFIER_TRUST_REMOTE_CODE", raising=False)
    with pytest.raises(ModelLoadError, match="VERIFIER_TRUST_REMOTE_CODE=1"):
        RemoteCodePairScorer(remote_code_model).warm_up()


def test_remote_code_model_scores_through_its_own_predict_with_windows(
    remote_code_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERIFIER_TRUST_REMOTE_CODE", "1")
    scorer = RemoteCodePairScorer(remote_code_model, max_premise_words=30)
    supported = "Watt added a separate condenser."
    premise = LONG_EVIDENCE + " He added a separate condenser. " + LONG_EVIDENCE
    # Read whole, the premise is past the model's window: its own predict sees nothing.
    scorer.warm_up()
    assert float(scorer._model.predict([(premise, supported)])[0]) == 0.0
    scores = scorer.score_pairs([(premise, supported), (EVIDENCE, "Berlin hosts dragons.")])
    assert scores[0] == pytest.approx(0.8)  # 4 of 5 words, in the window that holds them
    assert scores[1] == 0.0
    assert NLIVerifier(scorer, threshold=0.5).verify([supported], [premise])[0].supported


def test_a_plain_classifier_is_not_taken_as_a_custom_code_model(
    token_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ModelLoadError, match="predict"):
        RemoteCodePairScorer(token_models["flags_none"], trust_remote_code=True).warm_up()


@pytest.fixture(scope="module")
def tiny_t5(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny_t5")
    config = transformers.T5Config(
        vocab_size=30522,
        d_model=32,
        d_kv=16,
        d_ff=64,
        num_layers=1,
        num_decoder_layers=1,
        num_heads=2,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=102,
    )
    torch.manual_seed(0)
    transformers.T5ForConditionalGeneration(config).save_pretrained(folder)
    _minilm_tokenizer().save_pretrained(folder)  # type: ignore[attr-defined]
    return folder


def _manual_support(folder: Path, premise: str, hypothesis: str) -> float:
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(str(folder)).eval()
    enc = tokenizer([f"premise: {premise} hypothesis: {hypothesis}"], return_tensors="pt")
    with torch.inference_mode():
        logits = model(**enc, decoder_input_ids=torch.zeros((1, 1), dtype=torch.long)).logits[0, 0]
    zero, one = (tokenizer(t, add_special_tokens=False)["input_ids"][0] for t in ("0", "1"))
    return float(torch.softmax(logits[[zero, one]], dim=-1)[1])


def test_seq2seq_checker_reads_the_label_token_probability(tiny_t5: Path) -> None:
    scorer = Seq2SeqSupportScorer(tiny_t5)
    [score] = scorer.score_pairs([(EVIDENCE, "Watt added a condenser.")])
    assert 0.0 < score < 1.0
    assert score == pytest.approx(_manual_support(tiny_t5, EVIDENCE, "Watt added a condenser."), abs=1e-5)
    assert scorer.label_ids_[0] != scorer.label_ids_[1]


def test_seq2seq_checker_keeps_the_best_window_of_long_evidence(tiny_t5: Path) -> None:
    scorer = Seq2SeqSupportScorer(tiny_t5, max_premise_words=40)
    premise = LONG_EVIDENCE + " " + EVIDENCE
    windows = sentence_windows(premise, 40, lambda ts: [len(t.split()) for t in ts])
    assert len(windows) > 1
    expected = max(_manual_support(tiny_t5, w, "Paris is in France.") for w in windows)
    assert scorer.score_pairs([(premise, "Paris is in France.")])[0] == pytest.approx(expected, abs=1e-5)


def test_seq2seq_checker_refuses_a_template_without_its_fields() -> None:
    with pytest.raises(InvalidInputError, match="template"):
        Seq2SeqSupportScorer("x", template="{premise} only")
