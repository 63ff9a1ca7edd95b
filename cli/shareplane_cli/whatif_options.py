"""What the commands replaying a trace share (`simulate`, `tune-rebalance`): their options and error exit."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from shareplane.domain.errors import ShareplaneError

TraceOption = Annotated[
    Path, typer.Option("--trace", help="Job trace: Philly CSV or exported jobs as JSON lines.")
]
WhatIfConfigOption = Annotated[
    Path | None,
    typer.Option("--config", help="What-if config (default: built-in; see config/whatif.yaml)."),
]


@contextmanager
def bad_input_exits(err: Console) -> Iterator[None]:
    """A trace, config or policy the replay cannot take: one red line on ``err`` and exit 2."""
    try:
        yield
    except ShareplaneError as exc:
        err.print(f"[red]error:[/red] {exc}", markup=True, highlight=False)
        raise typer.Exit(2) from exc
