"""FailureLedger decisions, history and storm-guard items: the fake and the table agree."""

from __future__ import annotations

from typing import Any

import pytest
from shareplane.adapters.failure_ledger import DynamoFailureLedger
from shareplane.domain.lifecycle import HistoryEntry, JobStatus, ObservationKind

from tests.fakes.failure_ledger import FakeFailureLedger

JOB = "arn:aws:batch:us-east-1:123456789012:service-job/j1"


@pytest.fixture(params=["fake", "on the table"])
def ledger(request: pytest.FixtureRequest) -> Any:
    if request.param == "fake":
        return FakeFailureLedger()
    return request.getfixturevalue("on_the_table")(DynamoFailureLedger)


def entry(n: int) -> HistoryEntry:
    return HistoryEntry(
        key=f"FAILURE#{n}",
        status=JobStatus.FAILED,
        at=1773720900000 + n,
        reason="gpu_oom: alert",
        kind=ObservationKind.FAILURE_DECISION,
        digest="d",
    )


def test_a_decision_is_claimed_once_and_a_second_claim_reads_the_first(ledger: Any) -> None:
    record = {"decision": "requeue", "decidedAt": 1000.0, "jobArn": JOB}
    assert ledger.claim_decision("DECISION#j1#1", record, entry(1), JOB, None) is None
    again = ledger.claim_decision("DECISION#j1#1", {**record, "decision": "drop"}, entry(1), JOB, None)
    assert again is not None and again["decision"] == "requeue" and again["applied"] is False
    assert ledger.load_decision("DECISION#j1#1")["decision"] == "requeue"
    assert ledger.load_decision("DECISION#j1#2") is None


def test_a_decision_is_marked_applied_once(ledger: Any) -> None:
    ledger.claim_decision("DECISION#j1#1", {"decision": "requeue", "decidedAt": 1000.0}, entry(1), JOB, None)
    assert ledger.mark_applied("DECISION#j1#1", {"newJobArn": "arn:new"}) is True
    assert ledger.mark_applied("DECISION#j1#1", {"newJobArn": "arn:other"}) is False
    stored = ledger.load_decision("DECISION#j1#1")
    assert stored["applied"] is True and stored["newJobArn"] == "arn:new"
    assert ledger.mark_applied("DECISION#never", {}) is False


def test_a_history_item_is_put_once(ledger: Any) -> None:
    assert ledger.add_history(JOB, entry(5), {}) is True
    assert ledger.add_history(JOB, entry(5), {}) is False
    assert ledger.add_history(JOB, entry(6), {}) is True


def test_storm_guard_failures_are_counted_after_a_time_per_share(ledger: Any) -> None:
    for i, at in enumerate((100.0, 200.0, 300.0)):
        failure = {"share": "ProdExp1", "at": at, "job": f"{JOB}-{i}"}
        ledger.claim_decision(f"DECISION#j{i}", {"decidedAt": at}, entry(i), f"{JOB}-{i}", failure)
    assert [float(f["at"]) for f in ledger.share_failures("ProdExp1", since=150.0)] == [200.0, 300.0]
    assert ledger.share_failures("ProdExp2", since=0.0) == []
