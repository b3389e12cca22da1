"""The confidence recipe: refits what a fresh pipeline's ``confidence`` means, as shipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verityrag.agent.confidence import ConfidenceModel, shipped_confidence
from verityrag.train import confidence_recipe

pytestmark = pytest.mark.integration


def test_the_recipe_refits_the_shipped_model_from_the_calibration_replies(tmp_path: Path) -> None:
    out = tmp_path / "confidence.json"
    assert confidence_recipe.main(["--out", str(out)]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["trained_on"]["questions"] == data["answer"]["rows"] + data["refusal"]["rows"] == 550
    model = ConfidenceModel.from_dict(data)
    shipped = shipped_confidence()
    assert shipped is not None
    # The replies are deterministic: the recipe rebuilds the shipped file's decisions exactly.
    assert model.answer.rows == shipped.answer.rows
    assert model.answer.bias == pytest.approx(shipped.answer.bias, abs=1e-6)
    assert model.refusal.weights == pytest.approx(shipped.refusal.weights, abs=1e-6)
