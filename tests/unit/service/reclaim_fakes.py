"""In-memory fakes of reclaim's ports, with the semantics the real adapters have, and a small cluster."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml
from shareplane.domain.alerts import Alert
from shareplane.domain.config import SharesConfig, Tier
from shareplane.domain.errors import RejectedByServiceError
from shareplane.domain.lifecycle import HistoryEntry
from shareplane.service.reclaim_capacity import ReclaimPorts, ReclaimSettings

from tests.conftest import REPO
from tests.unit.service.failure_fakes import Clock, FakeAlerts, FakeMetrics, FakeTimer

QUEUE = "search-p4d-queue"
QUEUE_ARN = f"arn:aws:batch:us-east-1:123456789012:job-queue/{QUEUE}"
P4 = "ml.p4d.24xlarge"
#: Virtual "now" of the scenarios: the HIGHPRI job is submitted at T0.
T0 = 1_773_738_000.0
AFTER = 300  # HIGHPRI reclaim_after_seconds
PRIORITY = {"HIGHPRI": 90, "MIDPRI": 50, "LOWPRI": 10}


def reclaim_config(**reclaim: Any) -> SharesConfig:
    """config/shares.yaml on 10 instances (ProdExp1 6, ProdExp2 4), team x tier shares, HIGHPRI reclaims."""
    data = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())
    data["instance_types"] = {P4: {"capacity": 10}}
    data["teams"]["ProdExp1"]["entitlement"] = {P4: 6}
    data["teams"]["ProdExp2"]["entitlement"] = {P4: 4}
    data["share_layout"] = "team_tier"
    data["tiers"]["HIGHPRI"].update(weight_multiplier=0.01, reclaim_after_seconds=AFTER)
    data["tiers"]["MIDPRI"].update(weight_multiplier=0.1)
    data["reclaim"] = {"min_runtime_seconds": 600, "cooldown_seconds": 3600, **reclaim}
    return SharesConfig.model_validate(data)


#: The layout every scenario's jobs are submitted in (the reclaim rules do not change identifiers).
LAYOUT = reclaim_config()


def share_of(team: str, tier: str) -> str:
    """The identifier a team's job of ``tier`` carries: HIGHPRI its own (ProdExp1HIGHPRI), else the team's."""
    return LAYOUT.share_for(team, Tier(tier))


def service_job(
    job_id: str,
    team: str,
    tier: str,
    status: str,
    *,
    instances: int = 1,
    created: float = T0 - 7200,
    dispatched: float | None = None,
    checkpoint: bool = True,
    tags: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """DescribeServiceJob of a job in the GPU queue (the team x tier layout's share identifier)."""
    payload: dict[str, Any] = {
        "TrainingJobName": job_id,
        "ResourceConfig": {"InstanceType": P4, "InstanceCount": instances, "VolumeSizeInGB": 100},
    }
    if checkpoint:
        payload["CheckpointConfig"] = {"S3Uri": f"s3://search-ml-training/{team.lower()}/ckpt/{job_id}/"}
    job: dict[str, Any] = {
        "jobArn": f"arn:aws:batch:us-east-1:123456789012:service-job/{job_id}",
        "jobId": job_id,
        "jobName": f"name-{job_id}",
        "jobQueue": QUEUE_ARN,
        "status": status,
        "shareIdentifier": share_of(team, tier),
        "schedulingPriority": PRIORITY[tier],
        "createdAt": int(created * 1000),
        "serviceRequestPayload": json.dumps(payload),
        "tags": dict(tags or {}),
        "attempts": [],
        "isTerminated": False,
    }
    if dispatched is not None:
        job["scheduledAt"] = int(dispatched * 1000)
    return job


@dataclass
class FakeBatch:
    """The GPU queue: jobs by id; terminate ends a job FAILED (or, ``async_stop``, only records the call)."""

    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    terminated: list[tuple[str, str]] = field(default_factory=list)
    async_stop: bool = False
    #: Raise on the n-th terminate call (a Lambda that died mid-apply).
    die_on_call: int | None = None

    def add(self, *jobs: dict[str, Any]) -> None:
        for job in jobs:
            self.jobs[job["jobId"]] = job

    def list_jobs(self, job_queue: str, status: str) -> list[dict[str, Any]]:
        assert job_queue.rsplit("/", 1)[-1] == QUEUE
        # ServiceJobSummary's members (botocore): no schedulingPriority, no payload, no tags.
        keys = ("jobArn", "jobId", "jobName", "status", "createdAt", "scheduledAt", "shareIdentifier")
        return [{k: j.get(k) for k in keys} for j in self.jobs.values() if j["status"] == status]

    def describe(self, job_id: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.jobs.get(job_id))

    def terminate(self, job_id: str, reason: str) -> None:
        if self.die_on_call is not None and len(self.terminated) + 1 == self.die_on_call:
            self.die_on_call = None
            raise ConnectionError("the invocation died while terminating")
        job = self.jobs.get(job_id)
        if job is None or job["status"] in ("SUCCEEDED", "FAILED"):
            raise RejectedByServiceError("TerminateServiceJob", "the job has ended", "re-read it")
        self.terminated.append((job_id, reason))
        if not self.async_stop:
            job.update(status="FAILED", isTerminated=True, statusReason=reason)


@dataclass
class FakeCheckpoints:
    """Newest checkpoint time per S3 prefix."""

    newest_at: dict[str, float] = field(default_factory=dict)
    reads: list[str] = field(default_factory=list)

    def newest(self, s3_uri: str, at_or_before: float | None = None) -> float | None:
        self.reads.append(s3_uri)
        found = self.newest_at.get(s3_uri)
        return found if found is None or at_or_before is None or found <= at_or_before else None


@dataclass
class FakeReclaimLedger:
    """The ledger's conditional-write semantics (one transaction per claim), in memory."""

    decisions: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    victims: dict[str, tuple[str, str]] = field(default_factory=dict)
    per_job: dict[str, int] = field(default_factory=dict)
    per_day: dict[str, int] = field(default_factory=dict)
    history: dict[str, HistoryEntry] = field(default_factory=dict)
    alert_items: dict[str, dict[str, Any]] = field(default_factory=dict)
    ticks: dict[str, str] = field(default_factory=dict)

    def last_tick(self, runner: str) -> str | None:
        return self.ticks.get(runner)

    def advance_tick(self, runner: str, tick: str) -> None:
        if runner not in self.ticks or self.ticks[runner] < tick:
            self.ticks[runner] = tick

    def victims_for(self, beneficiary_id: str) -> int:
        return self.per_job.get(beneficiary_id, 0)

    def victims_on(self, day: str) -> int:
        return self.per_day.get(day, 0)

    def stopping(self) -> dict[str, str]:
        return {v: b for v, (b, _) in self.victims.items()}

    def decision_of(self, victim_id: str) -> str | None:
        return self.victims[victim_id][1] if victim_id in self.victims else None

    def claim(
        self,
        record: Mapping[str, Any],
        histories: Sequence[tuple[str, HistoryEntry]],
        *,
        day: str,
        max_per_job: int,
        max_per_day: int,
    ) -> str:
        key = (record["jobId"], record["decisionId"])
        if key in self.decisions:
            return "exists"
        ids = [v["jobId"] for v in record["victims"]]
        n = len(ids)
        if (
            any(i in self.victims for i in ids)
            or self.per_job.get(record["jobId"], 0) + n > max_per_job
            or ("victimsBefore" in record and self.per_job.get(record["jobId"], 0) != record["victimsBefore"])
            or self.per_day.get(day, 0) + n > max_per_day
            or any(f"{arn}|{e.key}" in self.history for arn, e in histories)
        ):
            return "refused"
        self.decisions[key] = {**copy.deepcopy(dict(record)), "applied": False}
        for i in ids:
            self.victims[i] = (record["jobId"], record["decisionId"])
        self.per_job[record["jobId"]] = self.per_job.get(record["jobId"], 0) + n
        self.per_day[day] = self.per_day.get(day, 0) + n
        for arn, entry in histories:
            self.history[f"{arn}|{entry.key}"] = entry
        return "claimed"

    def load(self, beneficiary_id: str, decision_id: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.decisions.get((beneficiary_id, decision_id)))

    def record_dry_run(self, record: Mapping[str, Any]) -> bool:
        key = (record["jobId"], record["decisionId"])
        if key in self.decisions:
            return False
        self.decisions[key] = {**copy.deepcopy(dict(record)), "applied": False}
        return True

    def mark_applied(self, beneficiary_id: str, decision_id: str, result: Mapping[str, Any]) -> bool:
        item = self.decisions.get((beneficiary_id, decision_id))
        if item is None or item.get("applied"):
            return False
        item.update(applied=True, **result)
        return True

    def claim_alert(
        self, alert: Alert, now: float, quiet_seconds: float, *, claimed_at: float | None = None
    ) -> bool:
        item = self.alert_items.get(alert.dedupe_key)
        if item and item["quietUntil"] >= now:
            return False
        self.alert_items[alert.dedupe_key] = {"quietUntil": now + quiet_seconds}
        return True

    def confirm_alert(self, alert: Alert, now: float) -> None:
        self.alert_items[alert.dedupe_key]["sentAt"] = now

    def release_alert(self, alert: Alert) -> None:
        self.alert_items.pop(alert.dedupe_key, None)


@dataclass
class ReclaimWorld:
    """Every fake, and the ports over them."""

    config: SharesConfig = field(default_factory=reclaim_config)
    batch: FakeBatch = field(default_factory=FakeBatch)
    checkpoints: FakeCheckpoints = field(default_factory=FakeCheckpoints)
    ledger: FakeReclaimLedger = field(default_factory=FakeReclaimLedger)
    alerts: FakeAlerts = field(default_factory=FakeAlerts)
    timer: FakeTimer = field(default_factory=FakeTimer)
    metrics: FakeMetrics = field(default_factory=FakeMetrics)
    clock: Clock = field(default_factory=Clock)
    enabled: bool = True
    dry_run: bool = False

    @property
    def ports(self) -> ReclaimPorts:
        return ReclaimPorts(
            batch=self.batch,
            checkpoints=self.checkpoints,
            ledger=self.ledger,
            alerts=self.alerts,
            timer=self.timer,
            metrics=self.metrics,
            config=self.config,
            settings=ReclaimSettings(QUEUE_ARN, enabled=self.enabled, dry_run=self.dry_run),
            clock=self.clock,
        )


def borrowed_cluster(world: ReclaimWorld) -> None:
    """ProdExp1 runs 4 LOWPRI instances (within its 6); ProdExp2 runs 6 LOWPRI (4 entitled + 2 borrowed).

    The borrowed ones are ProdExp2's two most recent dispatches, ``p2-4`` and ``p2-5``; ``p2-5``
    checkpointed a minute ago, ``p2-4`` ten minutes ago. A HIGHPRI ProdExp1 job of 1 instance, ``hi``,
    was submitted at T0 and has waited ever since.
    """
    for i in range(4):
        world.batch.add(service_job(f"p1-{i}", "ProdExp1", "LOWPRI", "RUNNING", dispatched=T0 - 7000 + i))
    for i in range(6):
        job = service_job(f"p2-{i}", "ProdExp2", "LOWPRI", "RUNNING", dispatched=T0 - 6000 + 10 * i)
        world.batch.add(job)
    world.checkpoints.newest_at["s3://search-ml-training/prodexp2/ckpt/p2-5/"] = T0 - 60
    world.checkpoints.newest_at["s3://search-ml-training/prodexp2/ckpt/p2-4/"] = T0 - 600
    world.batch.add(service_job("hi", "ProdExp1", "HIGHPRI", "RUNNABLE", created=T0))


def runnable_event(job: Mapping[str, Any], at_ms: int | None = None) -> dict[str, Any]:
    """The RUNNABLE ``Batch Service Job State Change`` of a job (no payload or tags, as AWS sends it)."""
    detail = {k: v for k, v in job.items() if k not in ("serviceRequestPayload", "tags")}
    detail["status"] = "RUNNABLE"
    if at_ms is not None:
        detail["createdAt"] = at_ms
    return {
        "version": "0",
        "id": f"evt-{job['jobId']}",
        "detail-type": "Batch Service Job State Change",
        "source": "aws.batch",
        "account": "123456789012",
        "time": "2026-03-17T09:00:00Z",
        "region": "us-east-1",
        "resources": [job["jobArn"]],
        "detail": detail,
    }


def tick(at: float) -> dict[str, Any]:
    """The reclaim schedule's Scheduled Event at epoch second ``at``."""
    from datetime import UTC, datetime

    return {
        "version": "0",
        "id": f"tick-{at:.0f}",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": "us-east-1",
        "resources": ["arn:aws:events:us-east-1:123456789012:rule/shareplane-dev-ReclaimCapacitySchedule-X"],
        "detail": {},
    }
