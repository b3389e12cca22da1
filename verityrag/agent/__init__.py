"""The bounded agent: retrieve, rerank, select, gate, reformulate, check, then answer or abstain."""

from __future__ import annotations

from typing import TYPE_CHECKING

from verityrag._lazy import lazy_exports

if TYPE_CHECKING:
    from verityrag.agent.controller import GROUNDING_THRESHOLDS as GROUNDING_THRESHOLDS
    from verityrag.agent.controller import AgentController as AgentController
    from verityrag.agent.reformulation import Reformulator as Reformulator
    from verityrag.agent.reformulation import SalientTermExpansion as SalientTermExpansion
    from verityrag.agent.reformulation import TitleAnchoredRewrite as TitleAnchoredRewrite
    from verityrag.agent.sufficiency import GateDecision as GateDecision
    from verityrag.agent.sufficiency import SufficiencyGate as SufficiencyGate
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "verityrag.agent.controller": (
                "GROUNDING_THRESHOLDS",
                "AgentController",
            ),
            "verityrag.agent.reformulation": (
                "Reformulator",
                "SalientTermExpansion",
                "TitleAnchoredRewrite",
            ),
            "verityrag.agent.sufficiency": (
                "GateDecision",
                "SufficiencyGate",
            ),
        },
    )

__all__ = [
    "GROUNDING_THRESHOLDS",
    "AgentController",
    "GateDecision",
    "Reformulator",
    "SalientTermExpansion",
    "SufficiencyGate",
    "TitleAnchoredRewrite",
]
