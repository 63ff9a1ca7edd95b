"""ShareStore (the rebalancer's state item and audit records): the fake and the table agree."""

from __future__ import annotations

from typing import Any

import pytest
from shareplane.adapters.share_store import DynamoShareStore
from shareplane.domain.errors import ConcurrentUpdateError

from tests.fakes.share_store import FakeShareStore


@pytest.fixture(params=["fake", "on the table"])
def store(request: pytest.FixtureRequest) -> Any:
    if request.param == "fake":
        return FakeShareStore()
    return request.getfixturevalue("on_the_table")(DynamoShareStore)


def audit(plan_id: str, created_at: float = 1000.0) -> dict[str, Any]:
    return {"planId": plan_id, "createdAt": created_at, "status": "PENDING", "why": "drift"}


def test_the_state_is_written_at_the_version_read(store: Any) -> None:
    assert store.load_state() is None
    store.save_state({"version": 1, "tick": "a"}, previous_version=None)
    store.save_state({"version": 2, "tick": "b"}, previous_version=1)
    with pytest.raises(ConcurrentUpdateError):
        store.save_state({"version": 2, "tick": "c"}, previous_version=1)
    with pytest.raises(ConcurrentUpdateError):
        store.save_state({"version": 1, "tick": "d"}, previous_version=None)
    assert store.load_state()["tick"] == "b"


def test_a_plan_begins_once_with_its_state_and_is_applied_once(store: Any) -> None:
    assert store.begin_plan(audit("p-1"), {"version": 1}, previous_version=None) is True
    assert store.begin_plan(audit("p-1"), {"version": 2}, previous_version=1) is False
    assert store.load_state()["version"] == 1
    assert store.mark_applied(audit("p-1"), applied_at=1010.0) is True
    assert store.mark_applied(audit("p-1"), applied_at=1020.0) is False
    stored = store.audit_at(1000.0, "p-1")
    assert stored["status"] == "APPLIED" and float(stored["appliedAt"]) == 1010.0


def test_a_plan_whose_state_moved_is_not_begun(store: Any) -> None:
    store.save_state({"version": 3}, previous_version=None)
    with pytest.raises(ConcurrentUpdateError):
        store.begin_plan(audit("p-2"), {"version": 4}, previous_version=2)
    assert store.audit_at(1000.0, "p-2") is None


def test_an_audit_is_found_by_its_plan_id_or_a_unique_prefix(store: Any) -> None:
    store.begin_plan(audit("abc123"), None, previous_version=None)
    store.begin_plan(audit("abd456", created_at=2000.0), None, previous_version=None)
    assert store.audit("abc123")["planId"] == "abc123"
    assert store.audit("abc")["planId"] == "abc123"
    assert store.audit("ab") is None  # two plans start so
    assert store.audit("zzz") is None
