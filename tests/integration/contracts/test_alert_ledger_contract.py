"""AlertLedger (claim, confirm, release, when sent, the listing) and TickWatermarks: the fakes and the
table agree.

Every path's alerts are the alert ledger's items, so one set of cases covers them all.
"""

from __future__ import annotations

from typing import Any

import pytest
from shareplane.adapters.alert_ledger import DynamoAlertLedger
from shareplane.adapters.tick_ledger import DynamoTickWatermarks
from shareplane.domain.alerts.alert import STALE_CLAIM_SECONDS, AlertKind, job_alert
from shareplane.domain.config.failure_rules import Severity

from tests.fakes.alert_ledger import FakeAlertLedger, FakeTickWatermarks

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
