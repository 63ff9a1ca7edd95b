"""A waiting job's stored start prediction: what a watch tick forecast, and when it forecast it (pure).

Small on purpose: the job records, the wait alert and the jobs table read it on paths that never run
the forecast, so it imports nothing of ``start_forecast`` (which only the predicting path loads).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any


@dataclass(frozen=True)
class StartPrediction:
    """A job's predicted start as p10/p50/p90 (epoch ms; None: not started within the horizon in that
    share of the runs), made at ``predicted_at`` (epoch ms: the watch tick's time)."""

    predicted_at: int
    p10: int | None
    p50: int | None
    p90: int | None
    #: The share of the forecast's runs that started the job within its horizon.
    started_fraction: float
    samples: int

    def replaces(self, stored: StartPrediction | None) -> bool:
        """Whether this prediction may replace ``stored``: only a strictly later tick's does."""
        return stored is None or self.predicted_at > stored.predicted_at

    def as_record(self) -> dict[str, Any]:
        """The prediction as JSON (the job record's and the wait alert's ``prediction`` field)."""
        return {
            "predictedAt": self.predicted_at,
            "startP10": self.p10,
            "startP50": self.p50,
            "startP90": self.p90,
            "startedFraction": self.started_fraction,
            "samples": self.samples,
        }

    def in_words(self) -> str:
        """``p50 <time> (p10 <time> - p90 <time>)`` in UTC, for an alert's reason or a table cell."""
        if self.p50 is None:
            return f"not within the forecast's horizon in most runs ({self.started_fraction:.0%} started it)"
        return f"p50 {_at(self.p50)} (p10 {_at(self.p10)} - p90 {_at(self.p90)})"


def _at(epoch_ms: int | None) -> str:
    if epoch_ms is None:
        return "later"
    return datetime.fromtimestamp(epoch_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


def prediction_from_record(raw: Any) -> StartPrediction | None:
    """A ``prediction`` field read back (a job record's JSON); None when absent or not a prediction."""
    if not isinstance(raw, Mapping) or raw.get("predictedAt") is None:
        return None

    def ms(name: str) -> int | None:
        value = raw.get(name)
        return None if value is None else int(value)

    return StartPrediction(
        predicted_at=int(raw["predictedAt"]),
        p10=ms("startP10"),
        p50=ms("startP50"),
        p90=ms("startP90"),
        started_fraction=float(raw.get("startedFraction") or 0.0),
        samples=int(raw.get("samples") or 0),
    )
