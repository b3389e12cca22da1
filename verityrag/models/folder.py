"""The folder a trained cross-encoder lives in, and its ``metadata.json``.

    guard_work/<name>/
        metadata.json        base model, data, date, metrics, threshold, file names
        model.int8.onnx      what is served (onnxruntime, dynamic int8)
        model.onnx           fp32 export (kept to check int8 against it)
        tokenizer.json       the WordPiece tokenizer the model was trained with
        torch/               Hugging Face weights (to retrain or re-export)

Only ``metadata.json``, the served ONNX file and ``tokenizer.json`` are needed at
run time. A folder that lacks one of them raises :class:`ModelFilesMissingError`,
which names the missing files and the command that builds them.

Where the folders are: the root ``Settings.models_dir`` names (``VERITYRAG_MODELS_DIR``, read by
the entry points), else the checkout's ``guard_work/`` (where ``make models-*`` builds them), so a
model is found whichever folder a program runs from; never the working directory. Each check's own
setting (``Settings.guard_dir`` and the others) still names one folder. Nothing here reads the
environment.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from verityrag.errors import InvalidInputError, ModelLoadError
from verityrag.errors import ModelFilesMissingError as ModelFilesMissingError
from verityrag.models.encoding import LONG_SIDES, LongSide
from verityrag.models.load_once import LoadsOnce

METADATA_FILE = "metadata.json"
TOKENIZER_FILE = "tokenizer.json"
ONNX_FP32_FILE = "model.onnx"
ONNX_INT8_FILE = "model.int8.onnx"
TORCH_DIR = "torch"
FORMAT = "verityrag-crossencoder/1"
#: The repository checkout this package sits in (the package's parent folder).
CHECKOUT = Path(__file__).resolve().parents[2]
#: The models root when none is configured: where ``make models-*`` builds the folders.
DEFAULT_MODELS_ROOT = CHECKOUT / "guard_work"
#: What the package ships: the trained resources (gate, selector, confidence model, reader).
RESOURCES_DIR = Path(__file__).resolve().parents[1] / "resources"
#: The reader trained here, shipped with the package (``python -m verityrag.train reader --ship``).
SHIPPED_READER_DIR = RESOURCES_DIR / "reader"


def models_root(configured: Path | str = "") -> Path:
    """The ``configured`` root (``Settings.models_dir``), else :data:`DEFAULT_MODELS_ROOT`."""
    return Path(configured) if configured else DEFAULT_MODELS_ROOT


def model_folder(name: str, root: Path | str = "") -> Path:
    """The folder of the model called ``name`` under :func:`models_root` of ``root``."""
    return models_root(root) / name


@dataclass
class ModelMetadata:
    """What ``metadata.json`` holds. ``threshold`` is the decision threshold on the probability."""

    name: str
    base_model: str
    data: dict[str, Any]
    created: str
    max_length: int
    long_side: LongSide
    threshold: float
    onnx_file: str = ONNX_INT8_FILE
    tokenizer_files: list[str] = field(default_factory=lambda: [TOKENIZER_FILE])
    stride: int = 64
    metrics: dict[str, Any] = field(default_factory=dict)
    training: dict[str, Any] = field(default_factory=dict)
    format: str = FORMAT

    def __post_init__(self) -> None:
        # Read from a JSON file a person may edit: a wrong type would otherwise surface as a bare
        # TypeError in the tokenizer or the session (or, for a string tokenizer_files, as every
        # one of its letters "missing"), far from metadata.json.
        for name in ("max_length", "stride"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise InvalidInputError(name, f"must be an integer, got {value!r}")
        if not isinstance(self.threshold, int | float) or isinstance(self.threshold, bool):
            raise InvalidInputError("threshold", f"must be a number, got {self.threshold!r}")
        if not isinstance(self.onnx_file, str) or not self.onnx_file:
            raise InvalidInputError("onnx_file", f"must be a file name, got {self.onnx_file!r}")
        files = self.tokenizer_files
        if not isinstance(files, list) or not files or not all(isinstance(f, str) and f for f in files):
            raise InvalidInputError("tokenizer_files", f"must be a list of file names, got {files!r}")
        if self.long_side not in LONG_SIDES:
            raise InvalidInputError("long_side", f"must be one of {LONG_SIDES}, got {self.long_side!r}")
        if not 0.0 <= self.threshold <= 1.0:
            raise InvalidInputError("threshold", f"must be in [0, 1], got {self.threshold}")

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / METADATA_FILE
        path.write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return path

    @classmethod
    def read(cls, folder: Path) -> ModelMetadata:
        """The folder's metadata; a file that is not a model's metadata is a :class:`ModelLoadError`."""
        path = folder / METADATA_FILE
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            known = set(cls.__dataclass_fields__)
            return cls(**{k: v for k, v in raw.items() if k in known})
        except (
            OSError,
            ValueError,
            TypeError,
            AttributeError,
        ) as exc:  # unreadable, not JSON, fields missing
            raise ModelLoadError(
                f"the model in {folder}", [(str(path), f"not a model's metadata ({exc})")]
            ) from exc


def require_files(folder: Path, what: str, build_command: str, onnx_file: str | None = None) -> ModelMetadata:
    """Check that ``folder`` holds a servable model and return its metadata, else say what to build."""
    missing = [] if (folder / METADATA_FILE).is_file() else [METADATA_FILE]
    meta = ModelMetadata.read(folder) if not missing else None
    served = onnx_file or (meta.onnx_file if meta else ONNX_INT8_FILE)
    tokenizer_files = meta.tokenizer_files if meta else [TOKENIZER_FILE]
    missing += [f for f in (served, *tokenizer_files) if not (folder / f).is_file()]
    if missing or meta is None:
        raise ModelFilesMissingError(what, folder, missing, build_command)
    return meta


class ServedFolder(LoadsOnce):
    """A model folder served from disk: its files checked and its metadata read on first need.

    The base of the ONNX scorers and readers: a session and an encoder, loaded once by their
    ``_load`` (:class:`~verityrag.models.load_once.LoadsOnce`)."""

    def __init__(self, folder: Path, what: str, build_command: str, threads: int, batch_size: int) -> None:
        self.folder = Path(folder)
        self.what = what
        self.build_command = build_command
        self.threads = threads
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._session: Any = None
        self._encoder: Any = None
        self._metadata: ModelMetadata | None = None

    def _is_loaded(self) -> bool:
        return self._session is not None

    def check_files(self) -> ModelMetadata:
        """Raise ModelFilesMissingError unless the folder can be served; return its metadata."""
        return require_files(self.folder, self.what, self.build_command)

    @property
    def metadata(self) -> ModelMetadata:
        if self._metadata is None:
            self._metadata = self.check_files()
        return self._metadata
