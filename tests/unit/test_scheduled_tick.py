"""The tick of a Scheduled Event: its id and the time a scheduled run decides at name the same second."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st
from shareplane.schemas.scheduled import parse_scheduled_event, tick_id, tick_time

from tests.conftest import load_event


def _tick(time: str) -> dict[str, object]:
    return {**load_event("scheduled_event_rebalance_shares"), "time": time}


@pytest.mark.parametrize(
    ("time", "expected"),
    [
        ("2026-03-16T20:05:00Z", datetime(2026, 3, 16, 20, 5, tzinfo=UTC).timestamp()),
        ("2026-03-16T20:05:00+00:00", datetime(2026, 3, 16, 20, 5, tzinfo=UTC).timestamp()),
        ("2026-03-16T20:05:00", datetime(2026, 3, 16, 20, 5, tzinfo=UTC).timestamp()),
        ("2026-03-16T20:05:00.999Z", datetime(2026, 3, 16, 20, 5, tzinfo=UTC).timestamp()),
    ],
    ids=[
        "a UTC envelope time is the tick's epoch second",
        "an explicit zero offset reads the same",
        "a time without a zone is read as UTC, as the tick id writes it",
        "a fraction of a second is dropped, as the tick id drops it",
    ],
)
def test_tick_time_reads_the_envelope_time(time: str, expected: float) -> None:
    assert tick_time(parse_scheduled_event(_tick(time))) == expected


#: Fixed offsets, so the property needs no tz database on the machine.
OFFSETS = st.integers(-14 * 60, 14 * 60).map(lambda minutes: timezone(timedelta(minutes=minutes)))


@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=OFFSETS))
def test_the_tick_time_and_the_tick_id_name_the_same_second(at: datetime) -> None:
    event = parse_scheduled_event(_tick(at.isoformat()))
    assert datetime.fromtimestamp(tick_time(event), UTC).strftime("%Y-%m-%dT%H:%M:%SZ") == tick_id(event)


def test_every_redelivery_of_a_tick_decides_at_the_same_time() -> None:
    # GIVEN two deliveries of one tick (EventBridge gives each a new id; the time is the tick's)
    first = parse_scheduled_event({**_tick("2026-03-16T20:05:00Z"), "id": "a"})
    again = parse_scheduled_event({**_tick("2026-03-16T20:05:00Z"), "id": "b"})
    # THEN both decide at the same time, and a later tick at a later one
    later = parse_scheduled_event(_tick("2026-03-16T20:10:00Z"))
    assert tick_time(first) == tick_time(again) < tick_time(later)
    assert tick_time(later) - tick_time(first) == timedelta(minutes=5).total_seconds()


def test_an_offset_envelope_time_is_the_same_instant_and_tick() -> None:
    event = parse_scheduled_event(_tick("2026-03-16T22:05:00+02:00"))
    assert tick_time(event) == datetime(2026, 3, 16, 22, 5, tzinfo=timezone(timedelta(hours=2))).timestamp()
    assert tick_id(event) == "2026-03-16T20:05:00Z"
