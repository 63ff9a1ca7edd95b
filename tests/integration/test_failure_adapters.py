"""The failure path's adapters on moto: alerts through SNS filter policies, ledger conditional items, timer."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws
from shareplane.adapters.alert_ledger import DynamoAlertLedger
from shareplane.adapters.failure_ledger import DynamoFailureLedger
from shareplane.adapters.requeue_timer import QueueRequeueTimer
from shareplane.adapters.sns_alerts import SnsAlerts
from shareplane.adapters.tick_ledger import DynamoTickWatermarks
from shareplane.domain.alerts.alert import AlertKind, job_alert, owned_by
from shareplane.domain.config.failure_rules import FailureClass, Severity
from shareplane.domain.failures.decision import Action
from shareplane.domain.failures.record import Applied, PriorityRaise, RequeueDue, StormFailure
from shareplane.domain.jobs.lifecycle import HistoryEntry, JobStatus, ObservationKind

from tests.aws import create_jobs_table, subscribe_inbox, topic_with_inbox
from tests.fakes.alert_ledger import FakeTickWatermarks
from tests.fakes.failure_ledger import decided
from tests.fakes.failure_world import shares_config
from tests.properties import examples

REGION = "us-east-1"


@pytest.fixture
def aws(aws_credentials: None) -> Any:
    with mock_aws():
        yield


def alert_for(
    share: str, job: str = "arn:aws:batch:us-east-1:123456789012:service-job/j1", kind=AlertKind.FAILURE
):  # noqa: ANN001, ANN201
    return job_alert(
        kind,
        severity=Severity.WARNING,
        share=share,
        queue="search-p4d-queue",
        job_arn=job,
        job_name="bert",
        reason="CUDA out of memory",
        facts={"failure_class": "gpu_oom", "after_failures": "", "class_fix": "smaller batch"},
    )


def received(sqs: Any, url: str) -> list[dict[str, Any]]:
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"])
    return messages.get("Messages", [])


def test_a_team_subscription_receives_only_its_share_alerts(aws: None) -> None:
    # GIVEN the alerts topic, one team subscribed with a filter on team, and an unfiltered audit queue
    sns, sqs = boto3.client("sns", region_name=REGION), boto3.client("sqs", region_name=REGION)
    filter_policy = {"team": ["ProdExp1"], "severity": ["warning", "critical"]}
    topic, team = topic_with_inbox(sns, sqs, "prodexp1", raw_delivery=True, filter_policy=filter_policy)
    audit = subscribe_inbox(sns, sqs, topic, "audit", raw_delivery=True)
    publisher = SnsAlerts(sns, topic)
    # WHEN one alert per share identifier goes out (team x tier: ProdExp1 has two, its share and HIGHPRI's)
    config = shares_config()
    for share in ("ProdExp1HIGHPRI", "ProdExp1", "ProdExp2HIGHPRI"):
        alert = owned_by(
            alert_for(share, job=f"arn:aws:batch:us-east-1:123456789012:service-job/{share}"), config
        )
        publisher.publish(alert.subject, dict(alert.body), alert.attributes)
    # THEN the team sees both of its identifiers' alerts, with every attribute as a String
    mine = sorted(received(sqs, team), key=lambda m: json.loads(m["Body"])["share"])
    assert [json.loads(m["Body"])["share"] for m in mine] == ["ProdExp1", "ProdExp1HIGHPRI"]
    assert mine[0]["MessageAttributes"]["team"]["StringValue"] == "ProdExp1"
    assert {k: (v["DataType"], v["StringValue"]) for k, v in mine[1]["MessageAttributes"].items()} == {
        "severity": ("String", "warning"),
        "team": ("String", "ProdExp1"),
        "tier": ("String", "HIGHPRI"),
        "share": ("String", "ProdExp1HIGHPRI"),
        "kind": ("String", "failure"),
        "queue": ("String", "search-p4d-queue"),
    }
    # ... and the audit queue sees all three
    assert len(received(sqs, audit)) == 3


@pytest.fixture
def jobs_table(aws: None) -> str:
    return create_jobs_table(boto3.client("dynamodb", region_name=REGION))


@pytest.fixture
def ledger(aws: None) -> DynamoFailureLedger:
    client = boto3.client("dynamodb", region_name=REGION)
    return DynamoFailureLedger(client, create_jobs_table(client))


@pytest.fixture
def alert_ledger(aws: None) -> DynamoAlertLedger:
    client = boto3.client("dynamodb", region_name=REGION)
    return DynamoAlertLedger(client, create_jobs_table(client))


def history(key: str) -> HistoryEntry:
    return HistoryEntry(
        key=key,
        status=JobStatus.FAILED,
        at=1773720900000,
        reason="gpu_oom: alert",
        kind=ObservationKind.FAILURE_DECISION,
        digest="d",
    )


def test_a_decision_is_claimed_once_and_applied_once(ledger: DynamoFailureLedger) -> None:
    record = decided(
        "arn:j",
        Action.REQUEUE,
        FailureClass.INTERNAL_ERROR,
        at=1773722900.5,
        mutations={"EnableManagedSpotTraining": False, "StoppingCondition.MaxWaitTimeInSeconds": None},
    )
    failure = StormFailure("ProdExp1", 1773722900.5, "arn:j", failure_class="internal_error")
    assert ledger.claim_decision("DECISION#arn:j#1.0", record, history("1#a"), failure) is None
    # a second claim (another delivery) gets the first decision back, and writes nothing new
    again = ledger.claim_decision(
        "DECISION#arn:j#1.0", decided("arn:j", Action.ALERT, at=1773722900.5), history("1#a"), failure
    )
    assert again is not None and again.decision.action.value == "requeue" and again.applied is False
    assert again.decision.mutations == {
        "EnableManagedSpotTraining": False,
        "StoppingCondition.MaxWaitTimeInSeconds": None,
    }
    assert len(ledger.share_failures("ProdExp1", 1773722000)) == 1
    assert ledger.mark_applied("DECISION#arn:j#1.0", Applied(new_job_arn="arn:new")) is True
    assert ledger.mark_applied("DECISION#arn:j#1.0", Applied(new_job_arn="arn:other")) is False
    assert ledger.load_decision("DECISION#arn:j#1.0").new_job_arn == "arn:new"


def test_an_alert_is_quiet_inside_its_window_and_listed_once_sent(alert_ledger: DynamoAlertLedger) -> None:
    alert = alert_for("ProdExp1")
    assert alert_ledger.claim_alert(alert, now=1000.0, quiet_seconds=600) is True
    # claimed, not yet confirmed: a concurrent sender backs off
    assert alert_ledger.claim_alert(alert, now=1001.0, quiet_seconds=600) is False
    assert alert_ledger.alerts(since=0) == []
    alert_ledger.confirm_alert(alert, now=1002.0)
    assert alert_ledger.claim_alert(alert, now=1500.0, quiet_seconds=600) is False
    assert alert_ledger.alert_sent_at(alert.dedupe_key) == 1002.0
    (listed,) = alert_ledger.alerts(since=0)
    assert listed.kind == "failure" and listed.body["reason"] == "CUDA out of memory"
    # past the window it may alert again
    assert alert_ledger.claim_alert(alert, now=1700.0, quiet_seconds=600) is True


def test_a_stale_unconfirmed_claim_is_taken_over_and_a_released_one_is_free(
    alert_ledger: DynamoAlertLedger,
) -> None:
    alert = alert_for("ProdExp2")
    assert alert_ledger.claim_alert(alert, now=1000.0, quiet_seconds=86400)
    assert alert_ledger.claim_alert(alert, now=1000.0 + 301, quiet_seconds=86400)  # the first sender died
    alert_ledger.release_alert(alert)
    assert alert_ledger.claim_alert(alert, now=1400.0, quiet_seconds=86400)


@pytest.mark.parametrize(
    ("retry_claimed_at", "taken_over"),
    [(5000.0 + 60, False), (5000.0 + 301, True)],
    ids=[
        "a redelivery of the same event a minute later backs off: the first sender may still publish",
        "a redelivery of the same event past the stale limit by the clock takes the dead sender's claim",
    ],
)
def test_a_claims_staleness_runs_on_the_clock_while_its_quiet_window_runs_on_event_time(
    alert_ledger: DynamoAlertLedger, retry_claimed_at: float, taken_over: bool
) -> None:
    # GIVEN an alert claimed for an event at t=1000 by a sender (clock 5000) that died unconfirmed
    alert = alert_for("ProdExp1")
    assert alert_ledger.claim_alert(alert, now=1000.0, quiet_seconds=86400, claimed_at=5000.0)
    # WHEN the same event (same time) is redelivered later by the clock
    retried = alert_ledger.claim_alert(alert, now=1000.0, quiet_seconds=86400, claimed_at=retry_claimed_at)
    # THEN the claim is taken over only once it is stale by the clock, and the alert stays dated 1000
    assert retried is taken_over
    alert_ledger.confirm_alert(alert, now=1000.0)
    assert [a.sent_at for a in alert_ledger.alerts(since=999.0)] == [1000.0]


def test_history_items_are_written_once(ledger: DynamoFailureLedger) -> None:
    assert ledger.add_history("arn:j", history("2#b"), PriorityRaise(50, 55)) is True
    assert ledger.add_history("arn:j", history("2#b"), PriorityRaise(50, 55)) is False


def test_short_waits_are_sqs_delays_and_long_ones_a_self_deleting_schedule(aws: None) -> None:
    sqs, scheduler = boto3.client("sqs", region_name=REGION), boto3.client("scheduler", region_name=REGION)
    url = sqs.create_queue(QueueName="handle-failure")["QueueUrl"]
    timer = QueueRequeueTimer(sqs, scheduler, url, "arn:aws:iam::123456789012:role/scheduler")
    message = {"shareplane": "requeue-due", "decisionKey": "DECISION#arn:j#1.0"}
    due = RequeueDue("DECISION#arn:j#1.0")
    timer.after(due, 0, now=1773722900.0)
    (got,) = received(sqs, url)
    assert json.loads(got["Body"]) == message
    timer.after(due, 3600, now=1773722900.0)
    timer.after(due, 3600, now=1773722900.0)  # a duplicate is the same schedule
    (schedule,) = scheduler.list_schedules()["Schedules"]
    described = scheduler.get_schedule(Name=schedule["Name"])
    assert described["ScheduleExpression"] == "at(2026-03-17T05:48:20)"
    assert described["Target"]["Arn"].endswith(":handle-failure")
    assert json.loads(described["Target"]["Input"]) == message
    assert described["ActionAfterCompletion"] == "DELETE"


@settings(
    max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ticks=st.lists(
        st.datetimes(datetime(2026, 1, 1), datetime(2027, 1, 1)).map(
            lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ")
        ),
        max_size=8,
    )
)
def test_the_tick_watermark_is_the_newest_tick_whatever_the_order_on_the_table_and_the_fakes(
    jobs_table: str, ticks: list[str]
) -> None:
    # GIVEN the table's watermarks and the fake the service tests use (each runner its own watermark)
    client = boto3.client("dynamodb", region_name=REGION)
    watermarks = [DynamoTickWatermarks(client, jobs_table), FakeTickWatermarks()]
    for watermark in watermarks:
        # one runner name per ledger and example, so no ledger reads what another one wrote
        runner = f"{type(watermark).__name__}-{len(ticks)}-{'-'.join(ticks)}"
        # WHEN ticks are handled in any order, with repeats
        for tick in ticks:
            watermark.advance_tick(runner, tick)
        # THEN the watermark is the newest of them (None before the first)
        assert watermark.last_tick(runner) == (max(ticks) if ticks else None)
