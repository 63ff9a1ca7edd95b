"""`shareplane jobs`' predicted start column: the stored prediction in one cell."""

from __future__ import annotations

import pytest
from shareplane.domain.forecast.prediction import StartPrediction
from shareplane_cli.commands.jobs import predicted_start

HOUR_MS = 3_600_000
BASE = 1_773_720_000_000  # 2026-03-17 04:00:00 UTC


def stored(p10: int | None, p50: int | None, p90: int | None, started: float = 1.0) -> StartPrediction:
    """A start prediction as a watch tick stored it."""
    return StartPrediction(BASE, p10, p50, p90, started_fraction=started, samples=100)


@pytest.mark.parametrize(
    ("prediction", "cell"),
    [
        (None, None),
        (
            stored(BASE, BASE + HOUR_MS, BASE + 2 * HOUR_MS),
            "2026-03-17 05:00:00 (2026-03-17 04:00:00 - 2026-03-17 06:00:00)",
        ),
        (
            stored(BASE, BASE + HOUR_MS, None),
            "2026-03-17 05:00:00 (2026-03-17 04:00:00 - later)",
        ),
        (
            stored(None, None, None, 0.3),
            "beyond horizon (30% started)",
        ),
    ],
    ids=["never predicted", "p50 then the p10-p90 range", "p90 past the horizon", "most runs never start it"],
)
def test_the_cell_shows_p50_then_the_range(prediction: StartPrediction | None, cell: str | None) -> None:
    assert predicted_start(prediction) == cell
