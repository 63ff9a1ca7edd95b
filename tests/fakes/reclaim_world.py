"""Reclaim's world: its fakes wired into ReclaimPorts, a small borrowed cluster and the events its tests use."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from shareplane.domain.config.shares import SharesConfig, Tier
from shareplane.service.reclaim_capacity import ReclaimPorts, ReclaimSettings

from tests.conftest import REPO
from tests.fakes.alert_ledger import FakeAlertLedger, FakeTickWatermarks, sender_of
from tests.fakes.alerts import FakeAlerts
from tests.fakes.checkpoints import FakeCheckpoints
from tests.fakes.clock import Clock, delivery_clock
from tests.fakes.metrics import FakeMetrics
from tests.fakes.reclaim_ledger import FakeReclaimLedger
from tests.fakes.service_jobs import FakeServiceJobs
from tests.fakes.timer import FakeTimer

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
class ReclaimWorld:
    """Every fake, and the ports over them."""

    config: SharesConfig = field(default_factory=reclaim_config)
    batch: FakeServiceJobs = field(default_factory=FakeServiceJobs)
    checkpoints: FakeCheckpoints = field(default_factory=FakeCheckpoints)
    ledger: FakeReclaimLedger = field(default_factory=FakeReclaimLedger)
    alerts: FakeAlerts = field(default_factory=FakeAlerts)
    alert_ledger: FakeAlertLedger = field(default_factory=FakeAlertLedger)
    ticks: FakeTickWatermarks = field(default_factory=FakeTickWatermarks)
    timer: FakeTimer = field(default_factory=FakeTimer)
    metrics: FakeMetrics = field(default_factory=FakeMetrics)
    clock: Clock = field(default_factory=delivery_clock)
    enabled: bool = True
    dry_run: bool = False

    @property
    def ports(self) -> ReclaimPorts:
        return ReclaimPorts(
            batch=self.batch,
            checkpoints=self.checkpoints,
            ledger=self.ledger,
            sender=sender_of(self),
            timer=self.timer,
            metrics=self.metrics,
            config=self.config,
            settings=ReclaimSettings(QUEUE_ARN, enabled=self.enabled, dry_run=self.dry_run),
            clock=self.clock,
            ticks=self.ticks,
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
    world.checkpoints.write("s3://search-ml-training/prodexp2/ckpt/p2-5/step-900.pt", T0 - 60)
    world.checkpoints.write("s3://search-ml-training/prodexp2/ckpt/p2-4/step-400.pt", T0 - 600)
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
