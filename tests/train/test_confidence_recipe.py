"""The confidence recipe: refits what a fresh pipeline's ``confidence`` means, as shipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verityrag.agent.confidence import SHIPPED_PATH, ConfidenceModel, shipped_confidence
from verityrag.train import confidence_recipe

pytestmark = pytest.mark.integration


ROOT = Path(__file__).resolve().parents[2]


def test_the_recipe_refits_the_shipped_model_from_the_calibration_replies(tmp_path: Path) -> None:
    out = tmp_path / "confidence.json"
    shipped_data = json.loads(SHIPPED_PATH.read_text(encoding="utf-8"))
    domains = shipped_data["trained_on"].get("domains", [])  # as the shipped file was fitted
    missing = [d for d in domains if not (ROOT / d).is_dir()]
    if missing:
        pytest.skip(f"the user domains the shipped model was fitted with are not here: {missing}")
    args = ["--out", str(out)] + [arg for d in domains for arg in ("--domains", str(ROOT / d))]
    assert confidence_recipe.main(args) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    decisions = ("answer", "refusal", "conflict")
    assert data["trained_on"]["questions"] == sum(data[name]["rows"] for name in decisions)
    assert data["trained_on"]["sources"]["bundled corpus"] == 550
    model = ConfidenceModel.from_dict(data)
    shipped = shipped_confidence()
    assert shipped is not None
    # The replies are deterministic: the recipe rebuilds the shipped file's decisions exactly.
    assert model.answer.rows == shipped.answer.rows
    assert model.answer.bias == pytest.approx(shipped.answer.bias, abs=1e-6)
    assert model.refusal.weights == pytest.approx(shipped.refusal.weights, abs=1e-6)
    assert model.conflict.rows == shipped.conflict.rows
    assert model.conflict.weights == pytest.approx(shipped.conflict.weights, abs=1e-6)
