"""How commands print: JSON for machines, rich tables for people, plain full-width rows for a pipe."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text


class Output(StrEnum):
    """Output formats of data-printing commands."""

    JSON = "json"
    TABLE = "table"


#: The ``--output`` option of a command printing JSON or a table.
OutputOption = Annotated[Output, typer.Option("--output", "-o", help="json or table.")]


class ListOutput(StrEnum):
    """Output formats of a listing: ``wide`` adds the columns a terminal has no room for by default."""

    TABLE = "table"
    WIDE = "wide"
    JSON = "json"
    CSV = "csv"


#: How wide a table may grow when stdout is a pipe or a file: no row is cut or wrapped below this.
PIPED_WIDTH = 4096


def stdout_console() -> Console:
    """Where a command's output goes: rich's own console on a terminal; piped, one that never cuts a row.

    rich takes 80 columns when stdout is not a terminal, so a piped table would shrink its headers to a
    letter or two and cut names; ``plain`` tables at ``PIPED_WIDTH`` keep every cell whole.
    """
    console = Console()
    return console if console.is_terminal else Console(width=PIPED_WIDTH)


def fit(table: Table, console: Console) -> Table:
    """``table`` as ``console`` shows it: boxed on a terminal; piped, plain rows (no box lines, title
    on the left), which ``grep``, ``awk`` and ``column`` read as the columns they are."""
    if not console.is_terminal:
        table.box = None
        table.show_edge = False
        table.pad_edge = False
        table.title_justify = "left"
    return table


def print_fitted(shown: RenderableType, console: Console | None = None) -> None:
    """Print a table, or a group of them, on ``console`` (default: ``stdout_console``), each boxed or
    plain as ``fit`` chooses."""
    console = console or stdout_console()
    if console.is_terminal:
        console.print(shown)
        return
    parts: list[RenderableType] = []
    for part in shown.renderables if isinstance(shown, Group) else (shown,):
        if isinstance(part, Table) and part.title:
            # Its own line: rich wraps a table's title to the table's width.
            parts.append(Text(str(part.title)) if not isinstance(part.title, Text) else part.title)
            part.title = None
        parts.append(fit(part, console) if isinstance(part, Table) else part)
    # Piped: rich pads every cell to its column's width; trailing blanks only get in a reader's way.
    with console.capture() as captured:
        console.print(Group(*parts))
    console.out("\n".join(line.rstrip() for line in captured.get().splitlines()), highlight=False)


def print_json(data: object) -> None:
    """Machine-readable output on stdout, nothing else."""
    print(json.dumps(data, indent=2, sort_keys=False, default=str))


def print_table(
    title: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[object]],
    console: Console | None = None,
    *,
    headers: bool = True,
    whole: int = 0,
) -> None:
    """A table whose column ``whole`` (the name people look for; the first by default) is never cut; None
    prints as a dash. ``headers=False`` leaves out the title and the column names (``--no-headers``)."""
    widest = max(
        (len(str(row[whole])) for row in rows if len(row) > whole and row[whole] is not None), default=0
    )
    table = Table(title=title if headers else None, show_header=headers, show_lines=False)
    for index, column in enumerate(columns):
        if index == whole:
            table.add_column(column, no_wrap=True, min_width=max(widest, len(column)))
        else:
            table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*("-" if cell is None else str(cell) for cell in row))
    print_fitted(table, console)


#: What a spreadsheet takes for the start of a formula in a cell (OWASP, "CSV Injection":
#: https://owasp.org/www-community/attacks/CSV_Injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A text cell a spreadsheet would run as a formula, prefixed with a single quote (OWASP's advice);
    numbers and other text as they are.

    Text only: the report's own numbers are never negative, and a number must stay a number.
    """
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def print_csv(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> None:
    """Rows as CSV on stdout, a header first, every text cell escaped (``csv_cell``)."""
    writer = csv.DictWriter(sys.stdout, fieldnames=[csv_cell(c) for c in columns], lineterminator="\n")
    writer.writeheader()
    writer.writerows({csv_cell(k): csv_cell(v) for k, v in row.items()} for row in rows)


def epoch_ms(value: int | None) -> str | None:
    """Epoch milliseconds as a UTC timestamp for tables; a value no date can show is printed as is."""
    if value is None:
        return None
    try:
        return datetime.fromtimestamp(value / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError, TypeError):  # a row stored before times were bounded
        return f"{value} ms (out of range)"


def emit(data: object, output: Output, table: Callable[[], None]) -> None:
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
