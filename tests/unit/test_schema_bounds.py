"""Times and counts are bounded at the schemas, so stored ordering keys always sort."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane.domain.errors import InvalidInputError
from shareplane.domain.jobs.lifecycle import JobObservation, history_key, ordering_key
from shareplane.schemas import parse_state_event
from shareplane.schemas.common import MAX_COUNT, MAX_EPOCH_MS

from tests.conftest import load_event
from tests.properties import examples

SERVICE_JOB = load_event("batch_service_job_state_change_succeeded")
TIME_FIELDS = ("createdAt", "scheduledAt", "startedAt", "stoppedAt")


def with_detail(**fields: Any) -> dict[str, Any]:
    event = copy.deepcopy(SERVICE_JOB)
    event["detail"].update(fields)
    return event


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("createdAt", 10**15),
        ("createdAt", -1),
        ("stoppedAt", 10**30),
        ("startedAt", "1000000000000000"),
        ("schedulingPriority", 10**6),
        ("schedulingPriority", -5),
        ("preemptionSummary", {"preemptedAttemptCount": 10**5}),
        ("attempts", [{}] * 1000),
    ],
    ids=[
        "a createdAt of 10^15 ms",
        "a negative createdAt",
        "a stoppedAt of 10^30",
        "a time as an out-of-range string",
        "a priority above Batch's 9999",
        "a negative priority",
        "a preemption count above four digits",
        "a thousand attempts",
    ],
)
def test_out_of_range_values_are_refused_naming_the_field_and_the_range(field: str, value: Any) -> None:
    with pytest.raises(InvalidInputError) as refused:
        parse_state_event(with_detail(**{field: value}))
    assert refused.value.field.startswith(f"detail.{field}")
    assert "0.." in refused.value.fix or "at most" in refused.value.fix


def test_an_envelope_time_past_2286_is_refused() -> None:
    with pytest.raises(InvalidInputError) as refused:
        parse_state_event({**SERVICE_JOB, "time": "9999-12-31T23:59:59Z"})
    assert refused.value.field == "time"


@settings(max_examples=examples(300), deadline=None)
@given(
    times=st.fixed_dictionaries({f: st.integers(-(10**16), 10**16) for f in TIME_FIELDS}),
    priority=st.integers(-(10**5), 10**5),
    preempted=st.integers(-(10**5), 10**5),
)
def test_any_time_or_count_is_either_refused_or_stored_with_sortable_keys(
    times: dict[str, int], priority: int, preempted: int
) -> None:
    # GIVEN a service job event with any times, priority and preemption count
    event = with_detail(
        **times,
        schedulingPriority=priority,
        preemptionSummary={"preemptedAttemptCount": preempted, "recentPreemptedAttempts": []},
    )
    in_range = (
        all(0 <= t <= MAX_EPOCH_MS for t in times.values())
        and 0 <= priority <= MAX_COUNT
        and 0 <= preempted <= MAX_COUNT
    )
    try:
        observation = parse_state_event(event)
    except InvalidInputError as exc:
        # THEN an out-of-range value is refused with the field named and a fix
        assert not in_range and exc.field.startswith("detail.") and exc.fix
        return
    # THEN an accepted one has fixed-width keys, so string order is numeric order
    assert in_range and isinstance(observation, JobObservation)
    assert len(history_key(observation).split("#", 1)[0]) == 13
    final, attempts, preemptions, stamp, *_ = ordering_key(observation).split("|")
    assert (len(attempts), len(preemptions), len(stamp)) == (3, 4, 13)
