"""PEP 562 re-exports: a package's public names, imported from their modules on first use.

A package ``__init__`` that imported its modules eagerly made ``import verityrag.errors`` load
the whole pipeline (96 modules): importing any module imports every package above it first.
Each ``__init__`` lists its names' owners here for the interpreter, and imports them under
``TYPE_CHECKING`` for mypy and IDEs::

    if TYPE_CHECKING:
        from verityrag.index.live import LiveIndex as LiveIndex
    else:
        __getattr__, __dir__ = lazy_exports(__name__, {"verityrag.index.live": ("LiveIndex",)})

``__getattr__`` is defined only outside ``TYPE_CHECKING`` so that mypy still reports a name the
package does not have. This module imports nothing of VerityRAG (it sits below ``errors``).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(
    package: str, owners: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``, which re-exports each name in
    ``owners[module]`` from ``module``, importing it on the first look-up of one of its names."""
    owner_of = {name: module for module, names in owners.items() for name in names}

    def module_getattr(name: str) -> Any:
        module = owner_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        # Later look-ups find the name without calling this function. It is bound after the
        # import: importing a submodule named like one of its names (``verityrag.api.app``)
        # binds the submodule on the package, and the name must win.
        setattr(sys.modules[package], name, value)
        return value

    def module_dir() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(owner_of))

    return module_getattr, module_dir
