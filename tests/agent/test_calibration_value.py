"""What ``calibrate`` fits is one frozen value: saved as JSON, kept beside a persistent index and
opened with it, replaced whole."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import pytest

from verityrag import InvalidInputError, Settings, VerityRAGPipeline
from verityrag.agent.calibration import Calibration
from verityrag.agent.confidence import shipped_confidence
from verityrag.agent.sufficiency import SufficiencyGate
from verityrag.embed.hashing import HashingEmbedder
from verityrag.pipeline import CALIBRATION_FILENAME

pytestmark = pytest.mark.unit

SETTINGS = Settings(reader=False)
DOCS = [
    {"doc_id": "watt", "title": "James Watt", "text": "James Watt improved the steam engine in 1776."},
    {"doc_id": "rhine", "title": "Rhine", "text": "The Rhine flows from the Swiss Alps to the North Sea."},
]


def _fitted() -> Calibration:
    return Calibration(
        gate=SufficiencyGate.default(),
        use_reranker=False,
        reformulate=False,
        reader_logit_threshold=1.25,
        confidence=shipped_confidence(),
        check_thresholds={"guard": 0.7},
    )


def test_it_is_frozen_and_survives_json() -> None:
    calibration = _fitted()
    with pytest.raises(dataclasses.FrozenInstanceError):
        calibration.reader_logit_threshold = 0.0  # type: ignore[misc]
    back = Calibration.from_dict(json.loads(json.dumps(calibration.to_dict())))
    assert back.to_dict() == calibration.to_dict()
    assert (back.reader_logit_threshold, back.check_thresholds) == (1.25, {"guard": 0.7})


def test_a_state_of_another_format_is_refused_and_the_previous_one_read() -> None:
    state = _fitted().to_dict()
    with pytest.raises(InvalidInputError, match="not a calibration state"):
        Calibration.from_dict({**state, "format": "verityrag-calibration/1"})
    older = {k: v for k, v in state.items() if k not in ("check_thresholds", "paired_sufficiency")}
    assert Calibration.from_dict({**older, "format": "verityrag-calibration/2"}).check_thresholds == {}


def test_a_persistent_index_opens_with_its_calibration(tmp_path: Path) -> None:
    with VerityRAGPipeline(data_dir=tmp_path, settings=SETTINGS) as pipeline:
        pipeline.ingest_documents(DOCS)
        assert pipeline.calibration.reader_logit_threshold is None
        pipeline.use_calibration(_fitted())
    assert (tmp_path / CALIBRATION_FILENAME).is_file()
    with VerityRAGPipeline(data_dir=tmp_path, settings=SETTINGS) as reopened:
        assert reopened.calibration.to_dict() == _fitted().to_dict()
        assert reopened.reader_logit_threshold == 1.25
        assert reopened.reformulate is False


def test_a_calibration_of_another_embedder_is_not_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with VerityRAGPipeline(data_dir=tmp_path, settings=SETTINGS) as pipeline:
        pipeline.ingest_documents(DOCS)
        pipeline.use_calibration(_fitted())
    other = HashingEmbedder(dim=256)
    with caplog.at_level(logging.WARNING), VerityRAGPipeline(other, tmp_path, SETTINGS) as reopened:
        assert reopened.calibration.reader_logit_threshold is None
    assert "fitted with another embedder" in caplog.text


def test_a_damaged_saved_calibration_is_said_and_left(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with VerityRAGPipeline(data_dir=tmp_path, settings=SETTINGS) as pipeline:
        pipeline.ingest_documents(DOCS)
    (tmp_path / CALIBRATION_FILENAME).write_text("{not json", encoding="utf-8")
    with (
        caplog.at_level(logging.WARNING),
        VerityRAGPipeline(data_dir=tmp_path, settings=SETTINGS) as reopened,
    ):
        assert reopened.calibration.gate is None
    assert "not used" in caplog.text


def test_attaching_a_check_drops_the_threshold_fitted_for_the_one_before() -> None:
    class _Check:
        threshold = 0.5

        def score(self, *args: str) -> float:
            return 1.0

    pipeline = VerityRAGPipeline(settings=SETTINGS)
    first = _Check()
    pipeline.attach_check("guard", first)
    pipeline.use_calibration(_fitted())
    assert first.threshold == 0.7  # the fitted threshold goes to the check attached
    assert pipeline.learned_checks()["guard"]["threshold_from"] == "calibration"
    pipeline.attach_check("guard", _Check())
    assert pipeline.calibration.check_thresholds == {}
    assert pipeline.learned_checks()["guard"]["threshold_from"] == "metadata"


def test_a_restored_state_is_used_and_not_written_again_beside_the_store(tmp_path: Path) -> None:
    with VerityRAGPipeline(data_dir=tmp_path, settings=SETTINGS) as pipeline:
        pipeline.ingest_documents(DOCS)
        pipeline.load_calibration_state(_fitted().to_dict())
        assert pipeline.calibration.reader_logit_threshold == 1.25
    assert not (tmp_path / CALIBRATION_FILENAME).exists()  # it stays where it was saved
