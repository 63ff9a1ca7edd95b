"""``python -m shareplane_cli.reference [--check] [--repo DIR]``: write or check docs/reference/."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import stale, write


def main(argv: list[str] | None = None) -> int:
    """Write the reference pages (or, with --check, name the stale ones and return 1)."""
    parser = argparse.ArgumentParser(prog="python -m shareplane_cli.reference", description=__doc__)
    parser.add_argument("--repo", type=Path, default=Path.cwd(), help="the repository root (default: here)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a page is stale")
    args = parser.parse_args(argv)
    out = args.repo / "docs" / "reference"
    if args.check:
        names = stale(args.repo, out)
        for name in names:
            print(
                f"docs/reference/{name} is stale: run `python -m shareplane_cli.reference`", file=sys.stderr
            )
        return 1 if names else 0
    for path in write(args.repo, out):
        print(path.relative_to(args.repo))
    return 0


if __name__ == "__main__":
    sys.exit(main())
