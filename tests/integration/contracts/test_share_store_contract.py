"""ShareStore (the rebalancer's state item and audit records): the fake and the table agree."""

from __future__ import annotations

from typing import Any

import pytest
from shareplane.adapters.dynamodb_items import marshal
from shareplane.adapters.dynamodb_store import job_state_item
from shareplane.adapters.share_store import DynamoShareStore
from shareplane.domain.config.shares import SchedulingMode
from shareplane.domain.errors import ConcurrentUpdateError
from shareplane.domain.jobs.lifecycle import JobState, JobStatus
from shareplane.domain.shares.rebalance import RebalancePlan, ShareChange
from shareplane.domain.shares.state import PlanAudit, SharesState

from tests.fakes.share_store import FakeShareStore


@pytest.fixture(params=["fake", "on the table"])
def store(request: pytest.FixtureRequest) -> Any:
    if request.param == "fake":
        return FakeShareStore()
    return request.getfixturevalue("on_the_table")(DynamoShareStore)


def audit(plan_id: str, created_at: float = 1000.0) -> PlanAudit:
    plan = RebalancePlan(
        created_at, SchedulingMode.FAIRSHARE, (ShareChange("ProdExp1", 1.0, 1.25, "drift"),), "rebalanced"
    )
    return PlanAudit(plan_id, "tick", "plan", "PENDING", "search-p4d-queue", plan)


def state(version: int, tick: str | None = None) -> SharesState:
    return SharesState(version=version, last_tick=tick)


def test_the_state_is_written_at_the_version_read(store: Any) -> None:
    assert store.load_state() is None
    store.save_state(state(1, "a"), previous_version=None)
    store.save_state(state(2, "b"), previous_version=1)
    with pytest.raises(ConcurrentUpdateError):
        store.save_state(state(2, "c"), previous_version=1)
    with pytest.raises(ConcurrentUpdateError):
        store.save_state(state(1, "d"), previous_version=None)
    assert store.load_state().last_tick == "b"


def test_a_plan_begins_once_with_its_state_and_is_applied_once(store: Any) -> None:
    assert store.begin_plan(audit("p-1"), state(1), previous_version=None) is True
    assert store.begin_plan(audit("p-1"), state(2), previous_version=1) is False
    assert store.load_state().version == 1
    assert store.mark_applied(audit("p-1"), applied_at=1010.0) is True
    assert store.mark_applied(audit("p-1"), applied_at=1020.0) is False
    stored = store.audit_at(1000.0, "p-1")
    assert stored.status == "APPLIED" and float(stored.applied_at) == 1010.0


def test_a_plan_whose_state_moved_is_not_begun(store: Any) -> None:
    store.save_state(state(3), previous_version=None)
    with pytest.raises(ConcurrentUpdateError):
        store.begin_plan(audit("p-2"), state(4), previous_version=2)
    assert store.audit_at(1000.0, "p-2") is None


def test_an_audit_is_found_by_its_plan_id_or_a_unique_prefix(store: Any) -> None:
    store.begin_plan(audit("abc123"), None, previous_version=None)
    store.begin_plan(audit("abd456", created_at=2000.0), None, previous_version=None)
    assert store.audit("abc123").plan_id == "abc123"
    assert store.audit("abc").plan_id == "abc123"
    assert store.audit("ab") is None  # two plans start so
    assert store.audit("zzz") is None


def put_jobs(store: Any, *jobs: JobState) -> None:
    """Job states as the jobs store writes them (the ByStatus index's keys included)."""
    if isinstance(store, FakeShareStore):
        store.jobs.extend(jobs)
        return
    for job in jobs:
        store._client.put_item(TableName=store._table, Item=marshal(job_state_item(job)))


def job(name: str, status: JobStatus, created_ms: int) -> JobState:
    arn = f"arn:aws:batch:us-east-1:123456789012:service-job/{name}"
    return JobState(job_arn=arn, status=status, seq="a", job_id=name, created_at=created_ms)


def test_jobs_of_a_status_by_creation_time_and_the_oldest_ones_time(store: Any) -> None:
    put_jobs(
        store,
        job("b", JobStatus.SUCCEEDED, 2_000_000),
        job("a", JobStatus.SUCCEEDED, 1_000_000),
        job("c", JobStatus.SUCCEEDED, 3_000_000),
        job("f", JobStatus.FAILED, 500_000),
    )
    assert sorted(j.job_id for j in store.jobs_in_status("SUCCEEDED", 2_000_000)) == ["b", "c"]
    # The index's first key of the status: one item read, however many jobs it holds.
    assert store.oldest_created_ms("SUCCEEDED") == 1_000_000
    assert store.oldest_created_ms("FAILED") == 500_000
    assert store.oldest_created_ms("RUNNING") is None


def test_the_newest_jobs_of_a_status_are_read_from_the_index_end(store: Any) -> None:
    put_jobs(
        store,
        *[job(f"j{n:02d}", JobStatus.SUCCEEDED, 1_000_000 + n * 1000) for n in range(30)],
        job("f", JobStatus.FAILED, 5_000_000),
    )
    # Newest first, no more than asked, only of the status and after the time
    newest = [j.job_id for j in store.newest_in_status("SUCCEEDED", 1_005_000, 10)]
    assert newest == [f"j{n:02d}" for n in range(29, 19, -1)]
    assert [j.job_id for j in store.newest_in_status("SUCCEEDED", 1_025_000, 10)] == [
        f"j{n:02d}" for n in range(29, 24, -1)
    ]
    assert store.newest_in_status("SUCCEEDED", 0, 0) == []
