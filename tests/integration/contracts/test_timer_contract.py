"""RequeueTimer: the fake and QueueRequeueTimer (SQS DelaySeconds, EventBridge Scheduler past 900 s) agree.

On moto a delayed SQS message stays hidden until moto's clock passes its delay; the cases move that
clock (``moto.sqs.models.unix_time_millis``) instead of sleeping. Moto keeps a one-time schedule but
never runs it: a schedule counts as arrived once its ``at()`` time has come, provided it targets the
failure path's queue with the timer's role, as EventBridge Scheduler would then send its input there.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import moto.sqs.models
import pytest
from moto import mock_aws
from shareplane.adapters.due_messages import due_body
from shareplane.adapters.requeue_timer import SQS_MAX_DELAY, QueueRequeueTimer
from shareplane.domain.failures.record import RequeueDue
from shareplane.domain.reclaim.record import ReclaimDue

from tests.fakes.timer import FakeTimer

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/shareplane-scheduler"


@dataclass
class TimerUnderTest:
    """A timer and how to see what has arrived on the failure path's queue ``seconds`` after ``now``."""

    timer: Any
    now: float
    arrived_by: Callable[[float], list[dict[str, Any]]]

    def arrived(self, seconds: float) -> list[dict[str, Any]]:
        """Messages due by ``now + seconds`` (each taken once), sorted for comparison."""
        return sorted(self.arrived_by(seconds), key=lambda m: json.dumps(m, sort_keys=True))


def on_the_fake() -> TimerUnderTest:
    fake = FakeTimer()

    def arrived_by(seconds: float) -> list[dict[str, Any]]:
        due = [entry for entry in fake.pending if entry[1] <= seconds]
        for entry in due:
            fake.pending.remove(entry)
        return [message for message, _ in due]

    return TimerUnderTest(fake, time.time(), arrived_by)


def on_moto(monkeypatch: pytest.MonkeyPatch) -> TimerUnderTest:
    sqs = boto3.client("sqs", region_name=REGION)
    scheduler = boto3.client("scheduler", region_name=REGION)
    url = sqs.create_queue(QueueName="shareplane-handle-failure")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    now = time.time()
    moto_clock = moto.sqs.models.unix_time_millis

    def on_the_queue(seconds: float) -> list[dict[str, Any]]:
        monkeypatch.setattr(
            moto.sqs.models, "unix_time_millis", lambda dt=None: moto_clock(dt) + seconds * 1000
        )
        try:
            messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        finally:
            monkeypatch.setattr(moto.sqs.models, "unix_time_millis", moto_clock)
        for message in messages:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return [json.loads(m["Body"]) for m in messages]

    def by_schedule(seconds: float) -> list[dict[str, Any]]:
        found = []
        for summary in scheduler.list_schedules()["Schedules"]:
            schedule = scheduler.get_schedule(Name=summary["Name"])
            at = datetime.strptime(schedule["ScheduleExpression"], "at(%Y-%m-%dT%H:%M:%S)")
            assert schedule["ScheduleExpressionTimezone"] == "UTC"
            target = schedule["Target"]
            if at.replace(tzinfo=UTC).timestamp() > now + seconds:
                continue
            if target["Arn"] != queue_arn or target["RoleArn"] != ROLE:
                continue  # it would not reach the failure path
            found.append(json.loads(target["Input"]))
            if schedule["ActionAfterCompletion"] == "DELETE":
                scheduler.delete_schedule(Name=summary["Name"])
        return found

    timer = QueueRequeueTimer(sqs, scheduler, url, ROLE)
    return TimerUnderTest(timer, now, lambda seconds: on_the_queue(seconds) + by_schedule(seconds))


@pytest.fixture(params=["fake", "on moto"])
def under_test(request: pytest.FixtureRequest, aws_credentials: None) -> Iterator[TimerUnderTest]:
    if request.param == "fake":
        yield on_the_fake()
        return
    with mock_aws():
        yield on_moto(request.getfixturevalue("monkeypatch"))


def due(n: int = 1) -> RequeueDue:
    return RequeueDue(f"DECISION#j{n}#1", f"arn:j{n}", 1773720900.5)


def body(message: RequeueDue | ReclaimDue) -> dict[str, Any]:
    """The message as it arrives: its JSON body."""
    return json.loads(json.dumps(due_body(message)))


@pytest.mark.parametrize(
    "delay",
    [30, SQS_MAX_DELAY, SQS_MAX_DELAY + 1, 6 * 3600],
    ids=["on SQS", "SQS's longest", "scheduled", "hours"],
)
def test_a_message_arrives_at_its_delay_and_not_before(under_test: TimerUnderTest, delay: int) -> None:
    under_test.timer.after(due(), delay, under_test.now)
    assert under_test.arrived(delay - 1) == []
    assert under_test.arrived(delay) == [body(due())]
    assert under_test.arrived(delay + 7 * 3600) == []


def test_no_delay_or_a_negative_one_arrives_at_once(under_test: TimerUnderTest) -> None:
    under_test.timer.after(due(1), 0, under_test.now)
    under_test.timer.after(due(2), -60, under_test.now)
    assert under_test.arrived(0) == [body(due(1)), body(due(2))]


def test_a_long_wait_asked_twice_arrives_once(under_test: TimerUnderTest) -> None:
    under_test.timer.after(due(), 3600, under_test.now)
    under_test.timer.after(due(), 3600, under_test.now + 5)
    assert under_test.arrived(3605) == [body(due())]


def test_a_short_wait_asked_twice_arrives_twice_for_the_failure_path_to_dedupe(
    under_test: TimerUnderTest,
) -> None:
    under_test.timer.after(due(), 60, under_test.now)
    under_test.timer.after(due(), 60, under_test.now)
    assert under_test.arrived(60) == [body(due()), body(due())]


def test_the_message_arrives_as_its_json_and_others_are_not_confused_with_it(
    under_test: TimerUnderTest,
) -> None:
    recheck = ReclaimDue("arn:j1", "j1", 1773720900.5, 1773720000.0)
    under_test.timer.after(recheck, 3600, under_test.now)
    under_test.timer.after(due(2), 3600, under_test.now)
    requeue = {"shareplane": "requeue-due", "decisionKey": "DECISION#j2#1", "jobArn": "arn:j2"}
    reclaim = {"shareplane": "reclaim-due", "jobArn": "arn:j1", "jobId": "j1", "hopAt": 1773720000.0}
    assert under_test.arrived(3600) == [
        {**requeue, "dueAt": 1773720900.5},
        {**reclaim, "dueAt": 1773720900.5},
    ]
