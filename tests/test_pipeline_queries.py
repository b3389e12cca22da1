"""The pipeline's answers through the shipped reader: a question the documents answer, one they do
not, and the hnsw dense backend (the pipeline's unit tests in test_pipeline.py load no model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from verityrag import AbstainReason, Settings, VerityRAGPipeline

pytestmark = pytest.mark.integration

AARDVARK = "The aardvark digs burrows at night. Aardvarks eat ants and termites."
OKAPI = "The okapi lives in the rainforest. Okapis are related to giraffes."
SMALL_CHUNKS = Settings(chunk_max_words=12)


@pytest.fixture
def pipeline(tmp_path: Path) -> VerityRAGPipeline:
    return VerityRAGPipeline(data_dir=tmp_path / "data", settings=SMALL_CHUNKS)


def test_query_covered_question_answers_with_citation_into_chunk(pipeline: VerityRAGPipeline) -> None:
    pipeline.ingest_document("zoo-1", "Aardvark", AARDVARK)
    pipeline.ingest_document("zoo-2", "Okapi", OKAPI)
    result = pipeline.query("What are okapis related to?")
    assert not result.abstained
    assert result.answer == "Okapis are related to giraffes."
    (citation,) = result.citations
    chunk = pipeline.index.get_chunk(citation.chunk_id)
    assert chunk is not None
    assert chunk.text[citation.start : citation.end] == result.answer
    assert 0.5 <= result.grounding.overall_score <= 1.0
    stages = [step.stage for step in result.trace]
    assert stages[0] == "attempt_0"
    assert stages[-2:] == ["grounding", "answer"]


def test_query_unrelated_question_abstains(pipeline: VerityRAGPipeline) -> None:
    question = "Who won the 1998 chess championship in Moscow?"
    pipeline.ingest_document("zoo-1", "Aardvark", AARDVARK)
    # A handful of chunks (under gate_min_chunks): the reader decides, and says which names no
    # passage holds.
    result = pipeline.query(question)
    assert result.abstain_reason is AbstainReason.ANSWERABILITY
    assert "Moscow" in (result.explanation or "")
    # With the gate deciding at every size, its sufficiency refusal comes first.
    gated = VerityRAGPipeline(settings=Settings(gate_min_chunks=0))
    gated.ingest_document("zoo-1", "Aardvark", AARDVARK)
    assert gated.query(question).abstain_reason in (AbstainReason.SUFFICIENCY, AbstainReason.NO_EVIDENCE)


def test_query_hnsw_backend_answers(tmp_path: Path) -> None:
    pytest.importorskip("hnswlib")
    pipeline = VerityRAGPipeline(settings=SMALL_CHUNKS.replace(dense_backend="hnsw"))
    pipeline.ingest_document("zoo-2", "Okapi", OKAPI)
    result = pipeline.query("What are okapis related to?")
    assert result.answer == "Okapis are related to giraffes."
    assert any(h.dense_rank is not None for h in result.evidence)
    assert np.isfinite([h.dense_score for h in result.evidence]).all()


def test_a_date_of_something_else_in_another_document_is_no_conflict() -> None:
    # The question names nothing, so no name ties a rival to it: the tide mill's "restored in
    # 1985" shares none of "harbour wall rebuilt" and was reported as the wall's other date.
    pipeline = VerityRAGPipeline(settings=Settings())
    pipeline.ingest_document(
        "harbour", "Harbour", "Wexcombe harbour\n\nThe harbour wall was rebuilt in 1862 after a storm."
    )
    pipeline.ingest_document(
        "mill",
        "Tide mill",
        "The tide mill at Wexcombe ground corn until 1921. It was restored in 1985 by volunteers.",
    )
    pipeline.ingest_document(
        "engine",
        "Wexcombe engine",
        "The Wexcombe steam engine was built in 1790 by the Ashby family. It pumped water from the mine until 1921.",
    )
    result = pipeline.query("When was the harbour wall rebuilt?")
    assert result.abstain_reason is not AbstainReason.CONFLICT, result.explanation
    assert result.short_answer is not None
    assert result.short_answer.text == "1862"
