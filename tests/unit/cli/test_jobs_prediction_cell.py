"""`shareplane jobs`' predicted start column: the stored prediction in one cell, counted from now."""

from __future__ import annotations

import pytest
from shareplane.domain.forecast.prediction import StartPrediction
from shareplane_cli.commands.jobs import predicted_start

MINUTE_MS = 60_000
BASE = 1_773_720_000_000  # 2026-03-17 04:00:00 UTC
NOW = BASE / 1000


def stored(p10: int | None, p50: int | None, p90: int | None, started: float = 1.0) -> StartPrediction:
    """A start prediction as a watch tick stored it."""
    return StartPrediction(BASE, p10, p50, p90, started_fraction=started, samples=100)


@pytest.mark.parametrize(
    ("prediction", "cell"),
    [
        (None, None),
        (
            stored(BASE + 2 * MINUTE_MS, BASE + 5 * MINUTE_MS, BASE + 9 * MINUTE_MS),
            "in 5m00s (p10-p90 2m00s-9m00s)",
        ),
        (stored(BASE, BASE + 65 * MINUTE_MS, None), "in 1h05m (p10-p90 0s-later)"),
        (stored(BASE + 5 * MINUTE_MS, BASE + 5 * MINUTE_MS, BASE + 5 * MINUTE_MS), "in 5m00s"),
        (stored(BASE - 3 * MINUTE_MS, BASE - 3 * MINUTE_MS, BASE - 3 * MINUTE_MS), "3m00s ago"),
        (stored(None, None, None, 0.3), "beyond horizon (30% started)"),
    ],
    ids=[
        "never predicted",
        "p50 from now, then the p10-p90 range",
        "p90 past the horizon",
        "one moment is said once",
        "a predicted start already past",
        "most runs never start it",
    ],
)
def test_the_cell_shows_p50_from_now_then_the_range(
    prediction: StartPrediction | None, cell: str | None
) -> None:
    assert predicted_start(prediction, NOW) == cell
