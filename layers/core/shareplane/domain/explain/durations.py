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


def start_text(p10: float | None, p50: float | None, p90: float | None) -> str | None:
    """A predicted start, each quantile in seconds from now: ``in 5m00s (p10-p90 2m00s-9m00s)``.

    None when the median is beyond the forecast's horizon (the caller says why). A p90 beyond it is
    ``later``; a range that is one moment is said once; a p10 already past reads as ``0s``.
    """
    if p50 is None:
        return None
    if p10 is not None and round(p10) == round(p50) and p90 is not None and round(p90) == round(p50):
        return relative_text(p50)
    low = duration_text(max(p10 or 0.0, 0.0))
    high = "later" if p90 is None else duration_text(p90)
    return f"{relative_text(p50)} (p10-p90 {low}-{high})"
