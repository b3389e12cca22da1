"""LightGBM training parameters shared by every learned part (reranker, sentence selector, gate)."""

from __future__ import annotations

from typing import Any


def lightgbm_params(
    objective: str,
    *,
    num_leaves: int,
    learning_rate: float,
    min_child_samples: int,
    seed: int,
    **extra: Any,
) -> dict[str, Any]:
    """Deterministic, single-threaded (the pipeline serves requests on few cores), silent."""
    return {
        "objective": objective,
        "num_leaves": num_leaves,
        "learning_rate": learning_rate,
        "min_child_samples": min_child_samples,
        "seed": seed,
        "deterministic": True,
        "num_threads": 1,
        "verbosity": -1,
        **extra,
    }
