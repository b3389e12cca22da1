"""The bounded agent: retrieve, rerank, select, gate, reformulate, check, then answer or abstain."""

from verityrag.agent.controller import GROUNDING_THRESHOLDS, AgentController
from verityrag.agent.reformulation import Reformulator, SalientTermExpansion, TitleAnchoredRewrite
from verityrag.agent.sufficiency import GateDecision, SufficiencyGate

__all__ = [
    "GROUNDING_THRESHOLDS",
    "AgentController",
    "GateDecision",
    "Reformulator",
    "SalientTermExpansion",
    "SufficiencyGate",
    "TitleAnchoredRewrite",
]
