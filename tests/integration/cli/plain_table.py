"""Read a table as a command prints it into a pipe: plain rows aligned under a header line."""

from __future__ import annotations

import re
from collections.abc import Sequence


def plain_rows(output: str, columns: Sequence[str]) -> list[dict[str, str]]:
    """The rows under the first header line naming ``columns`` (all of them, in order), cut at its offsets.

    Rows end at the first blank line. A cell is the text under its column name, stripped.
    """
    lines = output.splitlines()
    headers = [(i, starts) for i, line in enumerate(lines) if (starts := _offsets(line, columns)) is not None]
    if not headers:
        raise AssertionError(f"no header line naming {list(columns)} in:\n{output}")
    index, starts = headers[0]
    rows = []
    for line in lines[index + 1 :]:
        if not line.strip():
            break
        ends = [*starts[1:], None]
        rows.append({c: line[a:b].strip() for c, a, b in zip(columns, starts, ends, strict=True)})
    return rows


def _offsets(line: str, columns: Sequence[str]) -> list[int] | None:
    """Where each column name starts in ``line``, in order, as whole words; None if one is missing."""
    starts, at = [], 0
    for column in columns:
        found = re.compile(rf"(?<!\S){re.escape(column)}(?!\S)").search(line, at)
        if found is None:
            return None
        starts.append(found.start())
        at = found.end()
    return starts
