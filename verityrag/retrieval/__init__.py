"""Retrieval: fusion of lexical and dense rankings into scored hits."""

from verityrag.retrieval.fusion import FUSION_MODES, FusionMode, rrf, weighted
from verityrag.retrieval.hybrid import HybridRetriever

__all__ = ["FUSION_MODES", "FusionMode", "HybridRetriever", "rrf", "weighted"]
