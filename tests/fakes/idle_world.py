"""The idle detector's world: its fakes wired into DetectIdlePorts, running jobs and their GPU metrics."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from shareplane.adapters.idle_items import COUNTED_SK, idle_item, idle_pk, idle_record_of, idle_sk
from shareplane.domain.config.shares import SharesConfig
from shareplane.domain.idle.policy import GpuSample
from shareplane.domain.idle.record import IdleRecord
from shareplane.domain.jobs.lifecycle import CapacityUsage, JobState, JobStatus
from shareplane.domain.jobs.training import TrainingJobState, TrainingJobStatus
from shareplane.service.detect_idle import DetectIdlePorts, IdleSettings

from tests.fakes.alert_ledger import FakeAlertLedger, sender_of
from tests.fakes.alerts import FakeAlerts
from tests.fakes.checkpoints import FakeCheckpoints
from tests.fakes.clock import Clock, delivery_clock
from tests.fakes.job_store import FakeJobStore
from tests.fakes.metrics import FakeMetrics
from tests.fakes.reclaim_world import P4, QUEUE_ARN, reclaim_config, service_job, share_of
from tests.fakes.service_jobs import FakeServiceJobs


@dataclass
class FakeIdleLedger:
    """IdleLedger (adapters/idle_ledger.py) in memory: items in the table's layout, conditional puts."""

    items: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def decisions(self, job_id: str) -> list[IdleRecord]:
        found = [
            idle_record_of(i)
            for (pk, sk), i in self.items.items()
            if pk == idle_pk(job_id) and sk != COUNTED_SK
        ]
        return sorted(found, key=lambda r: (r.decided_at, r.act.value))

    def record(self, record: IdleRecord) -> bool:
        key = (idle_pk(record.job_id), idle_sk(record))
        if key in self.items:
            return False
        self.items[key] = idle_item(record)
        return True

    def since(self, since: float) -> list[IdleRecord]:
        found = [
            idle_record_of(i)
            for (_, sk), i in self.items.items()
            if sk != COUNTED_SK and i["decidedAt"] >= since
        ]
        return sorted(found, key=lambda r: (r.decided_at, r.job_id, r.act.value))

    def count_idle(self, job_id: str, until: float) -> float | None:
        key = (idle_pk(job_id), COUNTED_SK)
        old = self.items.get(key, {}).get("countedUntil")
        if old is not None and old >= until:
            return until
        self.items[key] = {"countedUntil": until}
        return old


@dataclass
class FakeGpuMetrics:
    """CloudWatch's training-job GPU metrics: samples by ``<job>/algo-N`` dimension, and every read."""

    by_dimension: dict[str, list[GpuSample]] = field(default_factory=dict)
    reads: list[tuple[tuple[str, ...], float, float]] = field(default_factory=list)

    def put(self, training_job: str, host: str, at: float, gpu_utilization: float) -> None:
        """One minute's datapoint of one host."""
        self.by_dimension.setdefault(f"{training_job}/{host}", []).append(
            GpuSample(host, at, gpu_utilization)
        )

    def gpu_samples(self, dimensions: Sequence[str], start: float, end: float) -> dict[str, list[GpuSample]]:
        self.reads.append((tuple(dimensions), start, end))
        # In time order, as GetMetricData answers with ScanBy=TimestampAscending.
        return {
            d: sorted((s for s in self.by_dimension.get(d, []) if start <= s.at <= end), key=lambda s: s.at)
            for d in dimensions
        }


def idle_config(**idle: Any) -> SharesConfig:
    """The reclaim scenarios' cluster with an idle policy (``idle`` as the config's ``idle:`` mapping)."""
    config = reclaim_config()
    return SharesConfig.model_validate({**config.model_dump(mode="json"), "idle": idle})


def running_job(
    job_id: str,
    team: str = "ProdExp2",
    tier: str = "LOWPRI",
    *,
    started: float,
    instances: int = 1,
    instance_type: str = P4,
    quota: bool = False,
    recorded_priority: bool = True,
) -> tuple[JobState, TrainingJobState]:
    """A RUNNING job as the jobs table holds it, and its training job (named after the job id).

    ``quota``: on a quota-share queue, where the job has a quota share name and no share identifier.
    ``recorded_priority``: False for a record without schedulingPriority (AWS's sample event has none).
    """
    training_arn = f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{job_id.lower()}"
    state = JobState(
        job_arn=f"arn:aws:batch:us-east-1:123456789012:service-job/{job_id}",
        status=JobStatus.RUNNING,
        seq="0",
        job_id=job_id,
        job_name=f"name-{job_id}",
        job_queue=QUEUE_ARN,
        share_identifier=None if quota else share_of(team, tier),
        quota_share_name=team if quota else None,
        scheduling_priority={"HIGHPRI": 90, "MIDPRI": 50, "LOWPRI": 10}[tier] if recorded_priority else None,
        started_at=int(started * 1000),
        latest_training_job_arn=training_arn,
        capacity_usage=(CapacityUsage(instance_type, instances),),
        instance_type=instance_type,
    )
    training = TrainingJobState(
        training_job_arn=training_arn,
        status=TrainingJobStatus.IN_PROGRESS,
        seq="0",
        training_job_name=job_id,
        instance_type=instance_type,
        instance_count=instances,
    )
    return state, training


@dataclass
class IdleWorld:
    """Every fake, and the ports over them."""

    config: SharesConfig = field(default_factory=idle_config)
    store: FakeJobStore = field(default_factory=FakeJobStore)
    gpu: FakeGpuMetrics = field(default_factory=FakeGpuMetrics)
    batch: FakeServiceJobs = field(default_factory=FakeServiceJobs)
    checkpoints: FakeCheckpoints = field(default_factory=FakeCheckpoints)
    ledger: FakeIdleLedger = field(default_factory=FakeIdleLedger)
    alerts: FakeAlerts = field(default_factory=FakeAlerts)
    alert_ledger: FakeAlertLedger = field(default_factory=FakeAlertLedger)
    metrics: FakeMetrics = field(default_factory=FakeMetrics)
    clock: Clock = field(default_factory=delivery_clock)
    enabled: bool = True

    @property
    def ports(self) -> DetectIdlePorts:
        return DetectIdlePorts(
            store=self.store,
            gpu_metrics=self.gpu,
            batch=self.batch,
            checkpoints=self.checkpoints,
            ledger=self.ledger,
            sender=sender_of(self),
            metrics=self.metrics,
            config=self.config,
            settings=IdleSettings(enabled=self.enabled),
            clock=self.clock,
        )

    def run_job(
        self, job_id: str, team: str = "ProdExp2", tier: str = "LOWPRI", *, started: float, **kw: Any
    ) -> None:
        """A job running since ``started``: in the jobs table, its training job, and in Batch."""
        checkpoint = kw.pop("checkpoint", True)
        state, training = running_job(job_id, team, tier, started=started, **kw)
        self.store.put_states(state)
        self.store.training_states[training.training_job_arn] = training
        self.batch.add(service_job(job_id, team, tier, "RUNNING", dispatched=started, checkpoint=checkpoint))

    def gpu_minutes(self, job_id: str, first: float, last: float, value: float, host: str = "algo-1") -> None:
        """One datapoint a minute from ``first`` to ``last`` (epoch seconds), all of ``value``."""
        at = first
        while at <= last:
            self.gpu.put(job_id, host, at, value)
            at += 60
