"""File arguments read with a bound: never more than a cap, whatever the path names.

A path may name an endless stream (``/dev/zero``, a pipe) or a file of many gigabytes; reading it
whole before checking its size would exhaust memory (``submit --dry-run /dev/zero`` did, until the
kernel's OOM killer ended it). Each reader here stops one byte past its cap.
"""

from __future__ import annotations

from pathlib import Path

from .errors import CliError, ExitCode


def read_head(path: Path, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of ``path``: one byte past the limit tells a caller it is too large."""
    with path.open("rb") as handle:
        return handle.read(limit + 1)


def read_capped(path: Path, limit: int, what: str, fix: str) -> bytes:
    """The whole of ``path`` when it holds at most ``limit`` bytes; else exit 2 naming the cap."""
    try:
        data = read_head(path, limit)
    except OSError as exc:
        raise CliError(
            f"{what} {path} cannot be read ({exc.strerror or exc})", fix, ExitCode.BAD_INPUT
        ) from exc
    if len(data) > limit:
        raise CliError(
            f"{what} {path} is larger than {limit} bytes (or an endless stream)", fix, ExitCode.BAD_INPUT
        )
    return data
