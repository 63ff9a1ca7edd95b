"""AlertLedger (claim, confirm, release, when sent, the listing) and TickWatermarks: the fakes and the
table agree.

Every path's alerts are the alert ledger's items, so one set of cases covers them all; the two paths that
alerted outside it before (a rejected drop, a refused call) are listed here through their own senders.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from shareplane.adapters.alert_ledger import DynamoAlertLedger
from shareplane.adapters.tick_ledger import DynamoTickWatermarks
from shareplane.domain.alerts.alert import (
    STALE_CLAIM_SECONDS,
    Alert,
    AlertKind,
    job_alert,
    permission_denied_alert,
    spec_rejected_alert,
)
from shareplane.domain.alerts.kinds import ALERT_SPECS
from shareplane.domain.config.failure_rules import Severity
from shareplane.domain.errors import PermissionDeniedError
from shareplane.service.alerting import AlertSender
from shareplane.service.permission_denied import PermissionAlerts

from tests.fakes.alert_ledger import FakeAlertLedger, FakeTickWatermarks
from tests.fakes.alerts import FakeAlerts
from tests.fakes.failure_world import shares_config
from tests.fakes.metrics import FakeMetrics

LEDGERS = {
    "fake alert ledger": lambda on_the_table: FakeAlertLedger(),
    "alert ledger on the table": lambda on_the_table: on_the_table(DynamoAlertLedger),
}
WATERMARKS = {
    "fake tick watermarks": lambda on_the_table: FakeTickWatermarks(),
    "tick watermarks on the table": lambda on_the_table: on_the_table(DynamoTickWatermarks),
}


@pytest.fixture(params=sorted(LEDGERS))
def ledger(request: pytest.FixtureRequest) -> Any:
    build = LEDGERS[request.param]
    on_the_table = request.getfixturevalue("on_the_table") if "table" in request.param else None
    return build(on_the_table)


ALERT = job_alert(
    AlertKind.FAILURE,
    severity=Severity.WARNING,
    share="ProdExp1",
    queue="search-p4d-queue",
    job_arn="arn:aws:batch:us-east-1:123456789012:service-job/j1",
    job_name="bert",
    reason="CUDA out of memory",
    facts={"failure_class": "gpu_oom", "after_failures": "", "class_fix": "smaller batch"},
)


def test_a_sent_alert_is_quiet_inside_its_window_and_free_after_it(ledger: Any) -> None:
    assert ledger.claim_alert(ALERT, now=1000.0, quiet_seconds=600) is True
    assert ledger.claim_alert(ALERT, now=1001.0, quiet_seconds=600) is False  # in flight
    ledger.confirm_alert(ALERT, now=1002.0)
    assert ledger.claim_alert(ALERT, now=1500.0, quiet_seconds=600) is False  # sent, quiet
    assert ledger.claim_alert(ALERT, now=1601.0, quiet_seconds=600) is True  # the window closed


@pytest.mark.parametrize(
    ("retry_after", "taken_over"),
    [(STALE_CLAIM_SECONDS - 1.0, False), (STALE_CLAIM_SECONDS + 1.0, True)],
    ids=["just inside the stale limit the claim holds", "just past the stale limit the claim is taken over"],
)
def test_an_unconfirmed_claim_goes_stale_at_the_real_ledgers_limit_by_the_clock(
    ledger: Any, retry_after: float, taken_over: bool
) -> None:
    # the event time (now) stays; only the clock (claimed_at) moves on
    assert ledger.claim_alert(ALERT, now=5000.0, quiet_seconds=86400, claimed_at=5000.0)
    retried = ledger.claim_alert(ALERT, now=5000.0, quiet_seconds=86400, claimed_at=5000.0 + retry_after)
    assert retried is taken_over


def test_a_sent_alert_never_goes_stale(ledger: Any) -> None:
    assert ledger.claim_alert(ALERT, now=5000.0, quiet_seconds=86400)
    ledger.confirm_alert(ALERT, now=5000.0)
    assert not ledger.claim_alert(ALERT, now=5000.0, quiet_seconds=86400, claimed_at=5000.0 + 10 * 3600)


def test_a_released_claim_is_free_and_a_sent_alert_cannot_be_released(ledger: Any) -> None:
    assert ledger.claim_alert(ALERT, now=1000.0, quiet_seconds=86400)
    ledger.release_alert(ALERT)
    assert ledger.claim_alert(ALERT, now=1001.0, quiet_seconds=86400)
    ledger.confirm_alert(ALERT, now=1002.0)
    ledger.release_alert(ALERT)
    assert not ledger.claim_alert(ALERT, now=1003.0, quiet_seconds=86400)


def test_only_sent_alerts_are_listed_from_their_time_on_with_what_was_sent(ledger: Any) -> None:
    blocked = job_alert(
        AlertKind.QUEUE_BLOCKED, share="ProdExp2", queue="q", job_arn="arn:job/b", job_name="b", reason="r"
    )
    assert ledger.claim_alert(ALERT, now=1000.0, quiet_seconds=600)
    ledger.confirm_alert(ALERT, now=1000.0)
    assert ledger.claim_alert(blocked, now=2000.0, quiet_seconds=600)  # claimed, never sent
    assert (
        ledger.alert_sent_at(ALERT.dedupe_key) == 1000.0 and ledger.alert_sent_at(blocked.dedupe_key) is None
    )
    (listed,) = ledger.alerts(since=999.0)
    assert (listed.kind, listed.severity, listed.subject, listed.job) == (
        "failure",
        "warning",
        ALERT.subject,
        ALERT.job_arn,
    )
    assert listed.body == dict(ALERT.body) and (listed.team, listed.tier) == ("none", "none")
    assert ledger.alerts(since=1000.001) == []


@pytest.fixture
def confirm_as_an_older_release(
    ledger: Any, request: pytest.FixtureRequest
) -> Callable[[Alert, float], None]:
    """Confirm as releases before each send had its own item did: only the dedupe item's ``sentAt`` (what a
    deployed table may hold)."""
    if isinstance(ledger, FakeAlertLedger):
        return lambda alert, now: ledger.items[alert.dedupe_key].update(sentAt=now)
    client, table = request.getfixturevalue("jobs_table")

    def confirm(alert: Alert, now: float) -> None:
        client.update_item(
            TableName=table,
            Key={"pk": {"S": alert.dedupe_key}, "sk": {"S": "ALERT"}},
            UpdateExpression="SET sentAt = :now",
            ExpressionAttributeValues={":now": {"N": repr(now)}},
        )

    return confirm


def test_a_repeat_after_the_quiet_window_is_listed_beside_the_send_before_it(ledger: Any) -> None:
    assert ledger.claim_alert(ALERT, now=1000.0, quiet_seconds=600)
    ledger.confirm_alert(ALERT, now=1000.0)
    assert ledger.claim_alert(ALERT, now=1700.0, quiet_seconds=600)  # the window closed: sent again
    assert [a.sent_at for a in ledger.alerts(since=999.0)] == [1000.0]  # the repeat is only claimed
    ledger.confirm_alert(ALERT, now=1700.0)
    listed = ledger.alerts(since=999.0)
    assert [(a.sent_at, a.subject, a.job) for a in listed] == [
        (1000.0, ALERT.subject, ALERT.job_arn),
        (1700.0, ALERT.subject, ALERT.job_arn),
    ]
    assert ledger.alert_sent_at(ALERT.dedupe_key) == 1700.0
    assert [a.sent_at for a in ledger.alerts(since=1000.001)] == [1700.0]


def test_a_send_confirmed_twice_is_listed_once(ledger: Any) -> None:
    assert ledger.claim_alert(ALERT, now=1000.0, quiet_seconds=600)
    ledger.confirm_alert(ALERT, now=1000.0)
    ledger.confirm_alert(ALERT, now=1000.0)  # a redelivered confirm
    assert [a.sent_at for a in ledger.alerts(since=999.0)] == [1000.0]


def test_an_alert_confirmed_by_an_older_release_is_listed_once(
    ledger: Any, confirm_as_an_older_release: Callable[[Alert, float], None]
) -> None:
    assert ledger.claim_alert(ALERT, now=1000.0, quiet_seconds=600)
    confirm_as_an_older_release(ALERT, 1000.0)
    (listed,) = ledger.alerts(since=999.0)
    assert (listed.sent_at, listed.subject, listed.body) == (1000.0, ALERT.subject, dict(ALERT.body))
    # AND its quiet window holds as before
    assert not ledger.claim_alert(ALERT, now=1500.0, quiet_seconds=600)
    assert ledger.claim_alert(ALERT, now=1700.0, quiet_seconds=600)


def test_a_rejected_drops_alert_and_a_permission_alert_are_listed_with_their_kinds_windows(
    ledger: Any,
) -> None:
    # GIVEN a rejected drop's alert sent through the sender, and a refused call reported by the guard
    topic = FakeAlerts()
    sender = AlertSender(ledger, topic, FakeMetrics(), shares_config(), clock=lambda: 1000.0)
    rejected = spec_rejected_alert(
        key="submit/ProdExp1/a.yaml",
        partly=False,
        answer="s3://drops/answers/ProdExp1/a.yaml/v1.json",
        details={"problems": [{"path": "file", "message": "is empty", "fix": "write the spec"}]},
        team="ProdExp1",
        tier=None,
        share=None,
        queue=None,
    )
    assert sender.send(rejected, now=1000.0)
    guard_alerts = PermissionAlerts("SubmitJobFunction", lambda: topic, lambda: ledger, clock=lambda: 2000.0)
    denied = PermissionDeniedError("dynamodb:DeleteItem", "arn:t", "arn:role/submit", "not authorized")
    assert guard_alerts.report(denied)
    refused = permission_denied_alert(
        action=denied.action,
        resource=denied.resource,
        role=denied.role,
        function="SubmitJobFunction",
        message=denied.aws_message,
    )
    # WHEN the ledger lists what was sent (`shareplane alerts`)
    listed = ledger.alerts(since=999.0)
    # THEN both are there, oldest first, as published
    assert [(a.kind, a.team, a.sent_at) for a in listed] == [
        ("spec_rejected", "ProdExp1", 1000.0),
        ("permission_denied", "none", 2000.0),
    ]
    assert [a.subject for a in listed] == [subject for subject, _, _ in topic.sent]
    assert listed[0].body["answer"] == "s3://drops/answers/ProdExp1/a.yaml/v1.json"
    assert listed[1].body["action"] == "dynamodb:DeleteItem"
    # AND each stays quiet for its row's window in ALERT_SPECS, and no longer
    for alert, sent_at in ((rejected, 1000.0), (refused, 2000.0)):
        window = ALERT_SPECS[alert.kind].quiet_seconds
        assert window is not None
        assert not ledger.claim_alert(alert, now=sent_at + window - 1, quiet_seconds=1)
        assert ledger.claim_alert(alert, now=sent_at + window + 1, quiet_seconds=1)


@pytest.fixture(params=sorted(WATERMARKS))
def watermarks(request: pytest.FixtureRequest) -> Any:
    build = WATERMARKS[request.param]
    return build(request.getfixturevalue("on_the_table") if "table" in request.param else None)


def test_a_tick_watermark_only_moves_forward(watermarks: Any) -> None:
    assert watermarks.last_tick("reclaim") is None
    watermarks.advance_tick("reclaim", "2026-03-17T10:05")
    watermarks.advance_tick("reclaim", "2026-03-17T10:00")
    assert watermarks.last_tick("reclaim") == "2026-03-17T10:05"
    watermarks.advance_tick("reclaim", "2026-03-17T10:10")
    assert watermarks.last_tick("reclaim") == "2026-03-17T10:10" and watermarks.last_tick("watch") is None
