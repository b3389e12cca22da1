"""Retrieval: fusion of lexical and dense rankings into scored hits."""

from __future__ import annotations

from typing import TYPE_CHECKING

from verityrag._lazy import lazy_exports

if TYPE_CHECKING:
    from verityrag.retrieval.fusion import FUSION_MODES as FUSION_MODES
    from verityrag.retrieval.fusion import FusionMode as FusionMode
    from verityrag.retrieval.fusion import rrf as rrf
    from verityrag.retrieval.fusion import weighted as weighted
    from verityrag.retrieval.hybrid import HybridRetriever as HybridRetriever
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "verityrag.retrieval.fusion": (
                "FUSION_MODES",
                "FusionMode",
                "rrf",
                "weighted",
            ),
            "verityrag.retrieval.hybrid": ("HybridRetriever",),
        },
    )

__all__ = ["FUSION_MODES", "FusionMode", "HybridRetriever", "rrf", "weighted"]
