"""The exit codes reference: every ``ExitCode`` and what it means, from ``shareplane_cli.errors``."""

from __future__ import annotations

import re
from pathlib import Path

from .. import errors
from ..errors import ExitCode
from . import markdown
from .markdown import code, table

__all__ = ["meanings", "page"]

_ITEM = re.compile(r"^- (\d+) ``(\w+)``: (.+?)(?=^- |\Z)", re.S | re.M)


def meanings() -> dict[ExitCode, str]:
    """Each exit code and its meaning, as the errors module's docstring states it."""
    found = {
        int(n): " ".join(text.split("\n\n")[0].split()) for n, _, text in _ITEM.findall(errors.__doc__ or "")
    }
    missing = [c for c in ExitCode if c.value not in found]
    if missing:
        raise ValueError(f"exit codes {missing} are not described in shareplane_cli/errors.py's docstring")
    return {c: found[c.value] for c in ExitCode}


def page(repo: Path) -> str:
    """The exit codes page."""
    rows = [(code(c.value), code(c.name), text) for c, text in meanings().items()]
    intro = (
        "Every command reports a failure the same way: `error: <the problem>` and `fix: <what to do>` "
        "on stderr, and no traceback (put `--debug` before the command, or set `SHAREPLANE_DEBUG=1`, "
        "to see it). `--config` is read with a 1 MiB bound. The codes, from `shareplane_cli.errors.ExitCode`:"
    )
    return markdown.page("Exit codes", intro, table(("code", "name", "meaning"), rows))
