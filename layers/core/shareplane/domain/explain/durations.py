"""One way to print a span of time, for every view: ``45s``, ``12m05s``, ``3h07m``, ``2d04h``.

Two units at most, the larger first, rounded to the smaller: a wait, an age and a predicted start
read the same in `jobs`, `why`, `top` and the reports.
"""

from __future__ import annotations

_UNITS = ((86400, "d"), (3600, "h"), (60, "m"), (1, "s"))


def duration_text(seconds: float) -> str:
    """``seconds`` (>= 0; a negative span prints as 0s) in at most two units, the larger first."""
    total = max(0, round(seconds))
    for (size, unit), (small, small_unit) in zip(_UNITS, _UNITS[1:], strict=False):
        if total >= size:
            big, rest = divmod(total, size)
            return f"{big}{unit}{rest // small:02d}{small_unit}"
    return f"{total}s"


def relative_text(seconds: float) -> str:
    """A moment ``seconds`` from now: ``in 5m00s``, ``now``, or ``3m10s ago``."""
    if round(seconds) == 0:
        return "now"
    return f"in {duration_text(seconds)}" if seconds > 0 else f"{duration_text(-seconds)} ago"
