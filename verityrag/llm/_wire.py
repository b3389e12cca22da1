"""A provider's wire format: the request it sends, the answer it parsed, and the helpers to read both."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from verityrag.errors import LLMConfigError


@dataclass(frozen=True, slots=True)
class Request:
    url: str
    headers: dict[str, str]
    body: dict[str, Any]


# Why a provider ended an answer before the model finished it (see :mod:`verityrag.llm`).
CutKind = Literal["max_tokens", "context_window", "stopped"]


@dataclass(frozen=True, slots=True)
class CutOff:
    kind: CutKind
    reason: str  # the provider's field and value, e.g. "stop_reason max_tokens"


@dataclass(frozen=True, slots=True)
class Parsed:
    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cut_off: CutOff | None = None  # set when the answer is partial


# A provider's wire format: build the request, parse the answer.
BuildFn = Callable[[str, str | None, float, int, bool], Request]
ParseFn = Callable[[dict[str, Any], bool], Parsed]


def short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def env(name: str, given: str | None, default: str | None = None) -> str | None:
    if given:
        return given
    return os.environ.get(name) or default


def require(provider: str, value: str | None, what: str, env_names: str) -> str:
    if not value:
        raise LLMConfigError(provider, f"no {what}: set {env_names} (or pass it explicitly)")
    return value


def json_path(payload: Any, *keys: str | int) -> Any:
    """``payload[k1][k2]...`` or ``None`` when any step is missing or of the wrong type."""
    for key in keys:
        if isinstance(key, int):
            if not isinstance(payload, list) or len(payload) <= key:
                return None
        elif not isinstance(payload, dict) or key not in payload:
            return None
        payload = payload[key]
    return payload


def cut_off_by(kinds: Mapping[str, CutKind], field: str, value: Any) -> CutOff | None:
    kind = kinds.get(value) if isinstance(value, str) else None
    return CutOff(kind, f"{field} {value}") if kind is not None else None


def int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
