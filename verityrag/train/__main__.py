"""``python -m verityrag.train NAME``: rebuild one of the resources VerityRAG ships.

Names: ``reader`` (the extractive reader, :mod:`verityrag.train.reader`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

RECIPES = ("reader",)


def recipe(name: str) -> Callable[[list[str]], int]:
    if name == "reader":
        from verityrag.train.reader import main

        return main
    raise SystemExit(f"unknown recipe {name!r}; choose one of {', '.join(RECIPES)}")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if args else 2
    return recipe(args[0])(args[1:])


if __name__ == "__main__":
    raise SystemExit(main())
