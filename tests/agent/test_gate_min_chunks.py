"""``gate_min_chunks``: in an index smaller than that, the sufficiency gate scores but does not
refuse, and the reader decides (the gate's features were learned on ~600 articles)."""

from __future__ import annotations

import pytest

from verityrag import AbstainReason, Settings, VerityRAGPipeline
from verityrag.pipeline import IN_MEMORY

pytestmark = pytest.mark.integration

MILL = "The tide mill at Wexcombe was built by the Ashby family in 1790. It ground corn until 1921."


def _pipeline(gate_min_chunks: int) -> VerityRAGPipeline:
    pipeline = VerityRAGPipeline(data_dir=IN_MEMORY, settings=Settings(gate_min_chunks=gate_min_chunks))
    pipeline.ingest_document("mill", "Wexcombe tide mill", MILL)
    return pipeline


def test_below_the_size_the_reader_decides_where_the_gate_would_refuse() -> None:
    never_enough = 1.01  # a sufficiency threshold no probability reaches
    gated = _pipeline(0).query_with("Who built the tide mill at Wexcombe?", {}, never_enough)
    assert gated.abstain_reason is AbstainReason.SUFFICIENCY
    small = _pipeline(10)  # one chunk: under the size
    answered = small.query_with("Who built the tide mill at Wexcombe?", {}, never_enough)
    assert not answered.abstained
    assert "Ashby" in (answered.answer or "")
    refused = small.query_with("Who designed the MV Corran Bell?", {}, never_enough)
    assert refused.abstain_reason is AbstainReason.ANSWERABILITY  # the reader, not the gate
