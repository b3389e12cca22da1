"""Compiled code where numba finds no writable cache folder: a read-only install run by a user
whose HOME is not writable once failed at import until ``NUMBA_CACHE_DIR`` was set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# The in-tree locator (``__pycache__`` beside the source) left out, as on a read-only install.
WITHOUT_IN_TREE = "UserProvidedCacheLocator,UserWideCacheLocator"
PROBE = """
import numpy as np
from verityrag.index import _scan_compiled
target = np.zeros(2, dtype=np.float32)
block = np.ones((2, 2), dtype=np.float32)
_scan_compiled.add_rows(block, np.array([0, 1]), np.array([1.0, 2.0], dtype=np.float32), 2, target)
print(target.tolist())
"""


@pytest.mark.integration
def test_an_unwritable_home_and_install_still_import_and_cache_in_the_temporary_folder(
    tmp_path: Path,
) -> None:
    not_a_folder = tmp_path / "home-is-a-file"
    not_a_folder.write_text("")  # no folder can be made under it, whoever runs the test
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "XDG_"))}
    env |= {
        "HOME": str(not_a_folder),
        "TMPDIR": str(tmp_path),
        "NUMBA_CACHE_LOCATOR_CLASSES": WITHOUT_IN_TREE,
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[3.0, 3.0]"
    cached = list(tmp_path.glob("verityrag-numba-cache-*/**/*.nbi"))
    assert cached, "the compiled code was not cached in the fallback folder"
