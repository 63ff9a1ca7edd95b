"""ShareStore (adapters/share_store.py) in memory: the state item and audit records in the adapter's layout."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from shareplane.adapters.share_items import audit_from_item, audit_item, state_from_item, state_item
from shareplane.domain.errors import ConcurrentUpdateError
from shareplane.domain.jobs.lifecycle import JobState
from shareplane.domain.shares.state import PlanAudit, SharesState

from tests.fakes.job_store import newest_of


@dataclass
class FakeShareStore:
    """The state item and audit records in memory, with the adapter's conditions."""

    jobs: list[JobState] = field(default_factory=list)
    state: dict[str, Any] | None = None
    records: dict[tuple[float, str], dict[str, Any]] = field(default_factory=dict)
    conflicts: int = 0  # the next N state writes find the version moved
    writes: int = 0

    def load_state(self) -> SharesState | None:
        return None if self.state is None else state_from_item(copy.deepcopy(self.state))

    def _check(self, previous_version: int | None) -> None:
        if self.conflicts:
            self.conflicts -= 1
            raise ConcurrentUpdateError("moved")
        current = None if self.state is None else self.state["version"]
        if current != previous_version:
            raise ConcurrentUpdateError(f"version {current}, not {previous_version}")

    def save_state(self, state: SharesState, previous_version: int | None) -> None:
        self._check(previous_version)
        self.state = state_item(state)
        self.writes += 1

    def begin_plan(self, audit: PlanAudit, state: SharesState | None, previous_version: int | None) -> bool:
        key = (audit.plan.created_at, audit.plan_id)
        if key in self.records:
            return False
        if state is not None:
            self._check(previous_version)
            self.state = state_item(state)
        self.records[key] = audit_item(audit)
        self.writes += 1
        return True

    def mark_applied(self, audit: PlanAudit, applied_at: float) -> bool:
        record = self.records[(audit.plan.created_at, audit.plan_id)]
        if record["status"] != "PENDING":
            return False
        record.update(status="APPLIED", appliedAt=applied_at)
        return True

    def audit_at(self, created_at: float, plan_id: str) -> PlanAudit | None:
        record = self.records.get((float(created_at), plan_id))
        return None if record is None else audit_from_item(copy.deepcopy(record))

    def audit(self, plan_id: str) -> PlanAudit | None:
        """The record of a plan id, or of the one plan id it is a prefix of (as the adapter finds it)."""
        matches = [r for r in self.records.values() if str(r["planId"]).startswith(plan_id)]
        exact = [r for r in matches if r["planId"] == plan_id]
        if exact:
            return audit_from_item(copy.deepcopy(exact[0]))
        return audit_from_item(copy.deepcopy(matches[0])) if len(matches) == 1 else None

    def oldest_created_ms(self, status: str) -> int | None:
        return min((j.created_at or 0 for j in self.jobs if j.status.value == status), default=None)

    def jobs_in_status(self, status: str, created_after_ms: int | None = None) -> list[JobState]:
        return [
            j
            for j in self.jobs
            if j.status.value == status
            and (created_after_ms is None or (j.created_at or 0) >= created_after_ms)
        ]

    def newest_in_status(self, status: str, created_after_ms: int, limit: int) -> list[JobState]:
        return newest_of(self.jobs, status, created_after_ms, limit)
