"""File arguments read with a bound: never more than a cap, whatever the path names.

A path may name an endless stream (``/dev/zero``, a pipe) or a file of many gigabytes; reading it
whole before checking its size would exhaust memory (``submit --dry-run /dev/zero`` did, until the
kernel's OOM killer ended it). Each reader here stops one byte past its cap.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer

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


def find_upward(relative: Path, start: Path | None = None) -> Path | None:
    """``relative`` in ``start`` (default: the current folder) or the nearest folder above that has it.

    The search stops at the filesystem root, or at the folder holding ``.git``: a repository's root,
    above which nothing is the project's.
    """
    folder = (start or Path.cwd()).resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / relative).exists():
            return candidate / relative
        if (candidate / ".git").exists():
            return None
    return None


def given_or_found(find: Callable[[], Path]) -> Callable[[typer.Context, typer.CallbackParam, Path], Path]:
    """An option callback: the path the user passed (on the command line), else the one ``find`` finds.

    The option keeps its plain default in the signature (a direct call gets it); only the CLI's parse
    replaces a value that came from that default.
    """

    def resolve(ctx: typer.Context, param: typer.CallbackParam, value: Path) -> Path:
        # By name: typer's click and the click package each have their own ParameterSource.
        source = ctx.get_parameter_source(param.name) if param.name else None
        return find() if source is not None and source.name == "DEFAULT" else value

    return resolve
