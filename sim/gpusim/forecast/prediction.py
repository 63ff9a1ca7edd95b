"""One start forecast made in a backtest, and which of them the measures count."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

MIN_WAIT_SECONDS = 600.0


@dataclass(frozen=True)
class Prediction:
    """One job's forecast at its submission, the baseline's guess, and (after the run) what happened."""

    job: str
    submitted_at: float
    tier: str
    #: Every run's start, sorted; runs that never started it within the horizon are left out.
    starts: tuple[float, ...]
    samples: int
    baseline_wait: float
    actual_start: float | None = None
    #: The forecast's horizon: a job fewer than the low quantile's share of runs started starts later.
    horizon_seconds: float = math.inf

    def at(self, q: float) -> float:
        """The q-quantile of the runs' starts (inf when fewer than that share started it)."""
        k = max(1, math.ceil(q * self.samples))
        return self.starts[k - 1] if k <= len(self.starts) else math.inf

    def raw(self, q: float) -> float | None:
        """``at`` as the forecast reports it: None beyond the horizon."""
        value = self.at(q)
        return None if value == math.inf else value

    @property
    def actual_wait(self) -> float | None:
        return None if self.actual_start is None else self.actual_start - self.submitted_at


def measured(predictions: Sequence[Prediction]) -> list[Prediction]:
    """The predictions the measures count: jobs that started after waiting at least 10 minutes."""
    return [p for p in predictions if p.actual_wait is not None and p.actual_wait >= MIN_WAIT_SECONDS]
