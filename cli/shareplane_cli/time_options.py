"""Time as options take it: a span back from now (``90s``, ``15m``, ``6h``, ``7d``) or an ISO time."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import typer

_SPAN = re.compile(r"^(\d+)([smhd])$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """``90s``, ``15m``, ``6h``, ``7d`` as seconds."""
    found = _SPAN.match(text.strip())
    if not found:
        raise typer.BadParameter(f"{text!r} is not a duration; use a number and s, m, h or d (e.g. 6h)")
    return int(found.group(1)) * _SECONDS[found.group(2)]


def since_ms(since: str, now: float, option: str = "--since") -> int:
    """Epoch ms: ``since`` back from ``now`` (epoch s), or an ISO 8601 time (UTC unless it says)."""
    if _SPAN.match(since.strip()):
        return round((now - parse_duration(since)) * 1000)
    try:
        moment = datetime.fromisoformat(since)
    except ValueError:
        raise typer.BadParameter(
            f"{since!r} is neither a span back (90s, 15m, 6h, 7d) nor an ISO time (2026-12-04T09:30)",
            param_hint=option,
        ) from None
    return round((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp() * 1000)
