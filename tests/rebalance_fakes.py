"""In-memory stand-ins for the rebalancer's ports, with the conditional-write rules of the real ones."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from shareplane.domain.config import SharesConfig
from shareplane.domain.errors import ConcurrentUpdateError
from shareplane.domain.lifecycle import CapacityUsage, JobState, JobStatus

REPO = Path(__file__).resolve().parents[1]
QUEUE_ARN = "arn:aws:batch:us-east-1:123456789012:job-queue/search-p4d-queue"
POLICY_ARN = "arn:aws:batch:us-east-1:123456789012:scheduling-policy/search-gpu-fss-policy"
NOW = 1_773_700_000.0  # 2026-03-16T22:26:40Z


def shares_config(**update: Any) -> SharesConfig:
    """config/shares.yaml (the blog's cluster), with top-level fields replaced.

    One share per team unless ``share_layout`` says otherwise: most rebalancer tests are about the
    plan, which is per team in either layout; the team_tier tests ask for it.
    """
    data = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())
    data["share_layout"] = "team"
    data.update(update)
    return SharesConfig.model_validate(data)


def job(
    n: int,
    share: str,
    status: JobStatus,
    instances: int = 1,
    priority: int = 50,
    created_ago: float = 600,
    started_ago: float | None = None,
    queue: str = QUEUE_ARN,
    quota: bool = False,
    unit: str = "NUM_INSTANCES",
) -> JobState:
    """A job as the jobs table holds it (times relative to NOW, in seconds)."""
    return JobState(
        job_arn=f"arn:aws:batch:us-east-1:123456789012:service-job/j{n}",
        status=status,
        seq=f"{n}",
        job_queue=queue,
        share_identifier=None if quota else share,
        quota_share_name=share if quota else None,
        scheduling_priority=priority,
        created_at=int((NOW - created_ago) * 1000),
        first_started_at=None if started_ago is None else int((NOW - started_ago) * 1000),
        capacity_usage=(CapacityUsage(unit, float(instances)),),
    )


@dataclass
class FakeBatch:
    """Batch holding one fair-share policy or a set of quota shares, and a queue snapshot."""

    policy: dict[str, Any] | None = None
    quota_shares: list[dict[str, Any]] = field(default_factory=list)
    snapshot: dict[str, Any] = field(default_factory=dict)
    updates: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    fail_updates: int = 0

    def describe_scheduling_policy(self, arn: str) -> dict[str, Any]:
        assert self.policy is not None and arn == self.policy["arn"]
        return copy.deepcopy(self.policy)

    def scheduling_policy_of(self, job_queue: str) -> str | None:
        return self.policy["arn"] if self.policy else None

    def update_scheduling_policy(self, request: dict[str, Any]) -> None:
        self._maybe_fail()
        self.updates.append(("UpdateSchedulingPolicy", copy.deepcopy(request)))
        assert self.policy is not None
        self.policy["fairsharePolicy"] = copy.deepcopy(request["fairsharePolicy"])

    def list_quota_shares(self, job_queue: str) -> list[dict[str, Any]]:
        return copy.deepcopy(self.quota_shares)

    def update_quota_share(self, request: dict[str, Any]) -> None:
        self._maybe_fail()
        self.updates.append(("UpdateQuotaShare", copy.deepcopy(request)))
        for share in self.quota_shares:
            if share["quotaShareArn"] == request["quotaShareArn"]:
                share.update(copy.deepcopy({k: v for k, v in request.items() if k != "quotaShareArn"}))

    def get_job_queue_snapshot(self, job_queue: str) -> dict[str, Any]:
        return copy.deepcopy(self.snapshot)

    def _maybe_fail(self) -> None:
        if self.fail_updates:
            self.fail_updates -= 1
            raise ConnectionError("Batch endpoint unreachable")


def fairshare_snapshot(held: Mapping[str, float]) -> dict[str, Any]:
    """GetJobQueueSnapshot of a fair-share queue whose shares hold ``held`` instances."""
    return {
        "frontOfQueue": {"jobs": [], "lastUpdatedAt": int(NOW * 1000)},
        "queueUtilization": {
            "totalCapacityUsage": [{"capacityUnit": "NUM_INSTANCES", "quantity": float(sum(held.values()))}],
            "fairshareUtilization": {
                "activeShareCount": len(held),
                "topCapacityUtilization": [
                    {
                        "shareIdentifier": s,
                        "capacityUsage": [{"capacityUnit": "NUM_INSTANCES", "quantity": q}],
                    }
                    for s, q in held.items()
                ],
            },
        },
    }


def fairshare_policy(weights: Mapping[str, float]) -> dict[str, Any]:
    """A DescribeSchedulingPolicies item."""
    return {
        "name": "search-gpu-fss-policy",
        "arn": POLICY_ARN,
        "fairsharePolicy": {
            "shareDecaySeconds": 3600,
            "computeReservation": 0,
            "shareDistribution": [{"shareIdentifier": s, "weightFactor": w} for s, w in weights.items()],
        },
    }


@dataclass
class FakeStore:
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
        found = [r for r in self.records.values() if r["planId"] == plan_id]
        return copy.deepcopy(found[0]) if found else None

    def jobs_in_status(self, status: str, created_after_ms: int | None = None) -> list[JobState]:
        return [
            j
            for j in self.jobs
            if j.status.value == status
            and (created_after_ms is None or (j.created_at or 0) >= created_after_ms)
        ]


@dataclass
class FakeMetrics:
    """Every measurement as (name, value, dimensions)."""

    emitted: list[tuple[str, float, dict[str, str]]] = field(default_factory=list)

    def emit(
        self, events: Sequence[Any], dimensions: Mapping[str, str], properties: Mapping[str, str]
    ) -> None:
        for event in events:
            self.emitted.append((event.name, event.value, {d: dimensions[d] for d in event.dimensions}))

    def named(self, name: str) -> list[tuple[float, dict[str, str]]]:
        return [(v, d) for n, v, d in self.emitted if n == name]
