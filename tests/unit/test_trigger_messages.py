"""The reclaim and idle queues' messages: each parsed once into its value, or refused naming field and fix."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from shareplane.adapters.due_messages import due_body
from shareplane.domain.errors import InvalidInputError
from shareplane.domain.reclaim.record import ReclaimDue
from shareplane.schemas.idle import MANUAL_RUN as IDLE_MANUAL_RUN
from shareplane.schemas.idle import IdleRun, parse_idle_message
from shareplane.schemas.reclaim import MANUAL_RUN, ReclaimRun, RunnableEvent, parse_reclaim_message

from tests.fakes.reclaim_world import T0, runnable_event, service_job, tick

ARN = "arn:aws:batch:us-east-1:123456789012:service-job/hi"


def _event(**detail: Any) -> dict[str, Any]:
    event = runnable_event(service_job("hi", "ProdExp1", "HIGHPRI", "RUNNABLE", created=T0))
    event["detail"] = {**event["detail"], **detail}
    return event


def test_a_runnable_event_becomes_the_fields_reclaim_decides_on_and_its_time() -> None:
    event = _event(schedulingPriority=90)
    parsed = parse_reclaim_message(event)
    assert isinstance(parsed, RunnableEvent)
    detail = event["detail"]
    assert (parsed.job_arn, parsed.job_id, parsed.status) == (detail["jobArn"], "hi", "RUNNABLE")
    assert (parsed.job_queue, parsed.share_identifier) == (detail["jobQueue"], detail["shareIdentifier"])
    assert (parsed.scheduling_priority, parsed.created_at) == (90, detail["createdAt"])
    # The event's time is its detail's latest epoch-ms time, as every decision on an event is dated.
    assert parsed.at == detail["createdAt"] / 1000


def test_an_event_without_priority_or_creation_time_keeps_them_unknown() -> None:
    event = _event()
    for key in ("schedulingPriority", "createdAt"):
        event["detail"].pop(key, None)
    parsed = parse_reclaim_message(event)
    assert isinstance(parsed, RunnableEvent)
    assert (parsed.scheduling_priority, parsed.created_at) == (None, None)


def test_a_schedule_tick_is_a_run_at_the_tick_and_a_manual_run_has_no_time() -> None:
    assert parse_reclaim_message(tick(T0 + 600)) == ReclaimRun(T0 + 600)
    assert parse_reclaim_message(MANUAL_RUN) == ReclaimRun(None)


@given(due=st.floats(T0, T0 + 10**7), lead=st.floats(0, 900))
def test_a_due_message_reads_back_as_sent(due: float, lead: float) -> None:
    sent = due_body(ReclaimDue(ARN, "hi", due, due - lead))
    assert parse_reclaim_message(sent) == ReclaimDue(ARN, "hi", due, due - lead)


def test_a_due_message_without_a_hop_arrives_at_its_due_time() -> None:
    sent = due_body(ReclaimDue(ARN, "hi", T0, T0))
    del sent["hopAt"]
    assert parse_reclaim_message(sent) == ReclaimDue(ARN, "hi", T0, T0)


@pytest.mark.parametrize(
    ("message", "field", "fix"),
    [
        ("not an object", "message", "send an event or a reclaim-due message"),
        (
            {"detail-type": "Batch Job State Change", "detail": {}},
            "detail-type",
            "route only reclaim triggers",
        ),
        ({"detail-type": "Batch Service Job State Change"}, "detail", "as AWS documents it"),
        (_event(status=None), "detail.status", "as AWS documents it"),
        (_event(schedulingPriority=10**6), "detail.schedulingPriority", "counts in 0..9999"),
        (_event(createdAt="yesterday"), "detail.createdAt", "as AWS documents it"),
        ({"shareplane": "reclaim-due", "jobId": "hi"}, "dueAt", "send reclaim-due messages as sent"),
        ({"shareplane": "reclaim-due", "dueAt": T0, "hopAt": "soon"}, "hopAt", "as sent"),
        ({**tick(T0), "source": "aws.batch"}, "source", "Scheduled Event unchanged"),
    ],
    ids=[
        "a message that is not an object",
        "an event reclaim does not react to",
        "a state change without its detail",
        "a state change without a status",
        "a priority past what Batch accepts",
        "a creation time that is no epoch-ms time",
        "a due message without its due time",
        "a due message whose hop time is no number",
        "a tick from another source",
    ],
)
def test_a_message_that_is_no_reclaim_trigger_is_refused_naming_the_field_and_fix(
    message: Any, field: str, fix: str
) -> None:
    with pytest.raises(InvalidInputError) as refused:
        parse_reclaim_message(message)
    assert refused.value.field == field
    assert fix in refused.value.fix


def test_the_idle_detector_runs_at_a_tick_or_by_hand() -> None:
    assert parse_idle_message(tick(T0 + 300)) == IdleRun(T0 + 300, f"tick-{T0 + 300:.0f}")
    assert parse_idle_message(IDLE_MANUAL_RUN) == IdleRun(None, None)


@pytest.mark.parametrize(
    ("message", "field", "fix"),
    [
        (_event(), "detail-type", "route only the schedule rule's events"),
        (["a", "list"], "detail-type", "route only the schedule rule's events"),
        ({**tick(T0), "time": "noon"}, "time", "Scheduled Event unchanged"),
        ({k: v for k, v in tick(T0).items() if k != "id"}, "id", "Scheduled Event unchanged"),
    ],
    ids=["a job state change", "a list", "a tick whose time is no time", "a tick without its id"],
)
def test_a_message_that_is_no_idle_run_is_refused_naming_the_field_and_fix(
    message: Any, field: str, fix: str
) -> None:
    with pytest.raises(InvalidInputError) as refused:
        parse_idle_message(message)
    assert refused.value.field == field
    assert fix in refused.value.fix
