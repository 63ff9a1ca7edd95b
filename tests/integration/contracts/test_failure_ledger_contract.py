"""FailureLedger decisions, history and storm-guard items: the fake and the table agree."""

from __future__ import annotations

from typing import Any

import pytest
from shareplane.adapters.failure_ledger import DynamoFailureLedger
from shareplane.domain.failures.decision import Action
from shareplane.domain.failures.record import Applied, StormFailure
from shareplane.domain.jobs.lifecycle import HistoryEntry, JobStatus, ObservationKind

from tests.fakes.failure_ledger import FakeFailureLedger, decided

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
    record = decided(JOB, Action.REQUEUE, at=1000.0)
    assert ledger.claim_decision("DECISION#j1#1", record, entry(1), None) is None
    again = ledger.claim_decision("DECISION#j1#1", decided(JOB, Action.IGNORE, at=1000.0), entry(1), None)
    assert again is not None and again.decision.action.value == "requeue" and again.applied is False
    assert ledger.load_decision("DECISION#j1#1").decision.action.value == "requeue"
    assert ledger.load_decision("DECISION#j1#2") is None


def test_a_decision_is_marked_applied_once(ledger: Any) -> None:
    ledger.claim_decision("DECISION#j1#1", decided(JOB, Action.REQUEUE, at=1000.0), entry(1), None)
    assert ledger.mark_applied("DECISION#j1#1", Applied(new_job_arn="arn:new")) is True
    assert ledger.mark_applied("DECISION#j1#1", Applied(new_job_arn="arn:other")) is False
    stored = ledger.load_decision("DECISION#j1#1")
    assert stored.applied is True and stored.new_job_arn == "arn:new"
    assert ledger.mark_applied("DECISION#never", Applied()) is False


def test_a_history_item_is_put_once(ledger: Any) -> None:
    assert ledger.add_history(JOB, entry(5)) is True
    assert ledger.add_history(JOB, entry(5)) is False
    assert ledger.add_history(JOB, entry(6)) is True


def test_storm_guard_failures_are_counted_after_a_time_per_share(ledger: Any) -> None:
    for i, at in enumerate((100.0, 200.0, 300.0)):
        failure = StormFailure("ProdExp1", at, f"{JOB}-{i}")
        ledger.claim_decision(f"DECISION#j{i}", decided(f"{JOB}-{i}", at=at), entry(i), failure)
    assert [float(f.at) for f in ledger.share_failures("ProdExp1", since=150.0)] == [200.0, 300.0]
    assert ledger.share_failures("ProdExp2", since=0.0) == []
