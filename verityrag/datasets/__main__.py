"""``python -m verityrag.datasets fetch [--all]`` | ``where`` | ``sources``.

- ``fetch``: download what the bundled corpus needs (``--all``: every file with a public
  download) into the datasets root, checksums checked; present files are left alone.
- ``where``: print the datasets root in use.
- ``sources``: where each dataset file comes from, and its licence.
"""

from __future__ import annotations

import argparse
import sys

from verityrag import datasets
from verityrag.datasets import fetch
from verityrag.errors import VerityRAGError


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m verityrag.datasets",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("command", choices=("fetch", "where", "sources"))
    p.add_argument("--all", action="store_true", help="fetch every file that has a public download")
    args = p.parse_args(argv)
    if args.command == "where":
        print(datasets.datasets_root())
        return 0
    if args.command == "sources":
        print(fetch.describe())
        return 0
    files = [n for n, s in fetch.SOURCES.items() if s.url] if args.all else list(fetch.CORPUS_FILES)
    try:
        got = fetch.fetch(files)
    except VerityRAGError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    root = datasets.datasets_root()
    print(f"datasets root {root}: " + (f"fetched {', '.join(got)}" if got else "nothing to fetch"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
