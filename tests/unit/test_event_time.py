"""An event's own time: what the failure path and the watch decide at, instead of the clock."""

from __future__ import annotations

import copy
import random
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from shareplane.schemas.event_time import detail_time, envelope_time, event_time

from tests.conftest import load_event


def at(*parts: int) -> float:
    """Epoch seconds of a UTC date and time."""
    return datetime(*parts, tzinfo=UTC).timestamp()  # type: ignore[misc]


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        ("batch_service_job_state_change_failed_internal_error", 1773722900.0),
        ("sagemaker_training_job_state_change_failed_cuda_oom", 1773742000.0),
        ("batch_service_job_preemption_completed", 1773713660.0),
        ("scheduled_event_watch_jobs", at(2026, 3, 17, 6, 10)),
    ],
    ids=[
        "a FAILED service job happened when its last attempt stopped",
        "a Failed training job happened at its last modification (epoch-ms strings or numbers)",
        "a completed preemption happened when the preempted attempt stopped",
        "a Scheduled Event, whose detail is empty, happened at its envelope time",
    ],
)
def test_an_event_is_dated_by_its_latest_detail_time_else_its_envelope(sample: str, expected: float) -> None:
    assert event_time(load_event(sample)) == expected


@pytest.mark.parametrize(
    ("detail", "expected"),
    [
        ({"stoppedAt": "1773722900123"}, 1773722900.123),
        ({"HyperParameters": {"startTime": "1999999999999"}, "CreationTime": 1773740020000}, 1773740020.0),
        ({"attempts": [{"startedAt": 1773720100000, "isTerminated": True}]}, 1773720100.0),
        ({"timeoutConfig": {"attemptDurationSeconds": 172800}, "retryAt": 86400}, None),
        ({"stoppedAt": None, "statusReason": "Essential container in task exited"}, None),
        ("not a detail", None),
    ],
    ids=[
        "an epoch-ms string keeps its milliseconds",
        "a user's hyperparameter that looks like a time is not the event's time",
        "times nested in attempts count",
        "durations and seconds are not epoch-ms times",
        "a detail with no time has none",
        "something that is not a detail has no time",
    ],
)
def test_detail_times_are_epoch_ms_under_time_like_keys(detail: Any, expected: float | None) -> None:
    assert detail_time(detail) == expected


@pytest.mark.parametrize(
    "event",
    [{"time": "soon"}, {"time": ""}, {}, "2026-03-17T06:10:00Z"],
    ids=[
        "an envelope time that is not a time is none",
        "an empty envelope time is none",
        "an event without an envelope time has none",
        "something that is not an event has none",
    ],
)
def test_an_unreadable_envelope_time_is_none_not_an_error(event: Any) -> None:
    assert envelope_time(event) is None and event_time(event) is None


@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_an_events_time_does_not_depend_on_the_order_of_its_lists_or_keys(seed: int) -> None:
    # GIVEN the same FAILED and training-job events with attempts, transitions and keys reordered
    rng = random.Random(seed)
    for name in (
        "batch_service_job_state_change_failed_internal_error",
        "sagemaker_training_job_state_change_failed_cuda_oom",
    ):
        event = load_event(name)
        shuffled = _shuffle(copy.deepcopy(event), rng)
        # THEN it is dated the same
        assert event_time(shuffled) == event_time(event)


def _shuffle(node: Any, rng: random.Random) -> Any:
    if isinstance(node, dict):
        items = [(k, _shuffle(v, rng)) for k, v in node.items()]
        rng.shuffle(items)
        return dict(items)
    if isinstance(node, list):
        items = [_shuffle(v, rng) for v in node]
        rng.shuffle(items)
        return items
    return node


@pytest.mark.parametrize("value", [10**15, 10**30, float("inf"), "1000000000000000"])
def test_a_time_past_the_schemas_bound_dates_nothing(value: object) -> None:
    # A failure event with one absurd time is decided at its other times, never decades ahead.
    event = {"time": "2026-03-17T05:02:44Z", "detail": {"createdAt": 1773720000000, "stoppedAt": value}}
    assert event_time(event) == 1773720000.0
