"""Alert claims (FailureLedger and ReclaimLedger claim/confirm/release_alert): the fakes and the table agree.

Both real ledgers keep alerts in the failure path's dedupe items, so the four run through one set of cases.
"""

from __future__ import annotations

from typing import Any

import pytest
from shareplane.adapters.failure_ledger import STALE_CLAIM_SECONDS, DynamoFailureLedger
from shareplane.adapters.reclaim_ledger import DynamoReclaimLedger
from shareplane.domain.alerts.alert import AlertKind, simple_alert
from shareplane.domain.config.failure_rules import Severity

from tests.fakes.failure_ledger import FakeFailureLedger
from tests.fakes.reclaim_ledger import FakeReclaimLedger

LEDGERS = {
    "fake failure ledger": lambda on_the_table: FakeFailureLedger(),
    "failure ledger on the table": lambda on_the_table: on_the_table(DynamoFailureLedger),
    "fake reclaim ledger": lambda on_the_table: FakeReclaimLedger(),
    "reclaim ledger on the table": lambda on_the_table: on_the_table(DynamoReclaimLedger),
}


@pytest.fixture(params=sorted(LEDGERS))
def ledger(request: pytest.FixtureRequest) -> Any:
    build = LEDGERS[request.param]
    on_the_table = request.getfixturevalue("on_the_table") if "table" in request.param else None
    return build(on_the_table)


ALERT = simple_alert(
    AlertKind.FAILURE,
    Severity.WARNING,
    share="ProdExp1",
    queue="search-p4d-queue",
    job_arn="arn:aws:batch:us-east-1:123456789012:service-job/j1",
    job_name="bert",
    headline="failed (gpu_oom)",
    reason="CUDA out of memory",
    fix="smaller batch",
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
