"""How commands print: JSON for machines, rich tables for people."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from rich.console import Console
from rich.table import Table


class Output(StrEnum):
    """Output formats of data-printing commands."""

    JSON = "json"
    TABLE = "table"


def print_json(data: Any) -> None:
    """Machine-readable output on stdout, nothing else."""
    print(json.dumps(data, indent=2, sort_keys=False, default=str))


def print_table(
    title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], console: Console | None = None
) -> None:
    """A rich table; None prints as a dash."""
    table = Table(title=title, show_lines=False)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*("-" if cell is None else str(cell) for cell in row))
    (console or Console()).print(table)


def epoch_ms(value: int | None) -> str | None:
    """Epoch milliseconds as a UTC timestamp for tables; a value no date can show is printed as is."""
    if value is None:
        return None
    try:
        return datetime.fromtimestamp(value / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError, TypeError):  # a row stored before times were bounded
        return f"{value} ms (out of range)"


def emit(data: Any, output: Output, table: Callable[[], None]) -> None:
    """Print ``data`` as JSON, or call ``table`` to print it for people."""
    if output is Output.JSON:
        print_json(data)
    else:
        table()


def stderr_console() -> Console:
    """Where progress and errors go; soft-wrapped so a path or an ARN is never split across lines."""
    return Console(stderr=True, soft_wrap=True)


def print_error(message: object, fix: str | None = None) -> None:
    """One error line on stderr, and the fix on the next when there is one."""
    from rich.markup import escape

    console = stderr_console()
    console.print(f"[red]error:[/red] {escape(str(message))}", highlight=False)
    if fix:
        console.print(f"  fix: {escape(fix)}", highlight=False)
