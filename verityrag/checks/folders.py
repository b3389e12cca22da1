"""Where the learned checks' model folders are: one root for all, never the working directory.

``VERITYRAG_MODELS_DIR`` when set, else the checkout's ``guard_work/`` (where ``make models-*``
builds them), so a check finds its model whichever folder a program runs from. Each check's own
variable (``VERITYRAG_GUARD_DIR`` and the others) still names one folder. The root is read when
the checks are imported.
"""

from __future__ import annotations

import os
from pathlib import Path

from verityrag.datasets import REPO_ROOT

MODELS_DIR_ENV = "VERITYRAG_MODELS_DIR"


def models_root() -> Path:
    """``VERITYRAG_MODELS_DIR``, else ``<checkout>/guard_work``."""
    return Path(os.environ.get(MODELS_DIR_ENV) or REPO_ROOT / "guard_work")


def model_folder(name: str) -> Path:
    """The folder of the model called ``name`` under :func:`models_root`."""
    return models_root() / name
