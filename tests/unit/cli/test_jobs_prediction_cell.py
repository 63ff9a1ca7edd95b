"""`shareplane jobs`' predicted start column: the stored prediction in one cell."""

from __future__ import annotations

from typing import Any

import pytest
from shareplane_cli.commands.jobs import predicted_start

HOUR_MS = 3_600_000
BASE = 1_773_720_000_000  # 2026-03-17 04:00:00 UTC


@pytest.mark.parametrize(
    ("prediction", "cell"),
    [
        (None, None),
        (
            {"startP10": BASE, "startP50": BASE + HOUR_MS, "startP90": BASE + 2 * HOUR_MS},
            "2026-03-17 05:00:00 (2026-03-17 04:00:00 - 2026-03-17 06:00:00)",
        ),
        (
            {"startP10": BASE, "startP50": BASE + HOUR_MS, "startP90": None},
            "2026-03-17 05:00:00 (2026-03-17 04:00:00 - later)",
        ),
        (
            {"startP10": None, "startP50": None, "startP90": None, "startedFraction": 0.3},
            "beyond horizon (30% started)",
        ),
    ],
    ids=["never predicted", "p50 then the p10-p90 range", "p90 past the horizon", "most runs never start it"],
)
def test_the_cell_shows_p50_then_the_range(prediction: dict[str, Any] | None, cell: str | None) -> None:
    assert predicted_start(prediction) == cell
