"""ShareStore (adapters/share_store.py) in memory: the rebalancer's state item, audit records, job queries."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shareplane.domain.errors import ConcurrentUpdateError
from shareplane.domain.lifecycle import JobState


@dataclass
class FakeShareStore:
    """The state item and audit records in memory, with the adapter's conditions."""

    jobs: list[JobState] = field(default_factory=list)
    state: dict[str, Any] | None = None
    records: dict[tuple[float, str], dict[str, Any]] = field(default_factory=dict)
    conflicts: int = 0  # the next N state writes find the version moved
    writes: int = 0

    def load_state(self) -> dict[str, Any] | None:
        return copy.deepcopy(self.state)

    def _check(self, previous_version: int | None) -> None:
        if self.conflicts:
            self.conflicts -= 1
            raise ConcurrentUpdateError("moved")
        current = None if self.state is None else self.state["version"]
        if current != previous_version:
            raise ConcurrentUpdateError(f"version {current}, not {previous_version}")

    def save_state(self, state: Mapping[str, Any], previous_version: int | None) -> None:
        self._check(previous_version)
        self.state = copy.deepcopy(dict(state))
        self.writes += 1

    def begin_plan(
        self, audit: Mapping[str, Any], state: Mapping[str, Any] | None, previous_version: int | None
    ) -> bool:
        key = (float(audit["createdAt"]), audit["planId"])
        if key in self.records:
            return False
        if state is not None:
            self._check(previous_version)
            self.state = copy.deepcopy(dict(state))
        self.records[key] = copy.deepcopy(dict(audit))
        self.writes += 1
        return True

    def mark_applied(self, audit: Mapping[str, Any], applied_at: float) -> bool:
        record = self.records[(float(audit["createdAt"]), audit["planId"])]
        if record["status"] != "PENDING":
            return False
        record.update(status="APPLIED", appliedAt=applied_at)
        return True

    def audit_at(self, created_at: float, plan_id: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.records.get((float(created_at), plan_id)))

    def audit(self, plan_id: str) -> dict[str, Any] | None:
        """The record of a plan id, or of the one plan id it is a prefix of (as the adapter finds it)."""
        matches = [r for r in self.records.values() if str(r["planId"]).startswith(plan_id)]
        exact = [r for r in matches if r["planId"] == plan_id]
        if exact:
            return copy.deepcopy(exact[0])
        return copy.deepcopy(matches[0]) if len(matches) == 1 else None

    def jobs_in_status(self, status: str, created_after_ms: int | None = None) -> list[JobState]:
        return [
            j
            for j in self.jobs
            if j.status.value == status
            and (created_after_ms is None or (j.created_at or 0) >= created_after_ms)
        ]
