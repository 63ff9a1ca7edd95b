"""The idle detector: find running GPU jobs whose GPUs stay idle (or that hang), and act per team policy.

On each schedule tick (and at the tick's time, never the clock's):

1. The RUNNING jobs of the jobs table (ByStatus index) on GPU instance types.
2. Their hosts' ``GPUUtilization`` and ``GPUMemoryUtilization`` from CloudWatch
   (``/aws/sagemaker/TrainingJobs``, ``Host`` = ``<training job>/algo-N``), batched GetMetricData of
   plain metric queries, over the longest lookback any team's policy needs.
3. ``domain.idle.decide`` per job with its team and tier's policy (``domain.idle.policy_for``), and
   the job's last recorded decision at or before the tick as its previous notice. A job busy past its
   team's hung interval is described (its CheckpointConfig) and its newest checkpoint read (S3), for
   the hung check.
4. What the decision says: an SNS alert (kind ``idle`` or ``hung``, team and tier attributes, links to
   the job's metrics and logs), a warning, a stop (TerminateServiceJob with a ``shareplane idle:``
   reason, which the failure path does not retry) or, for a hung job whose team asks for it, a stop
   with a ``shareplane hung:`` reason, which the failure path requeues from the last checkpoint.
5. One ledger item per decision that acted (a conditional put: a re-delivered tick writes nothing
   new, and its alerts are deduplicated), and the metrics: idle GPU-hours per share (counted once
   through a per-job watermark that only moves up), jobs flagged and stopped, reclaimed GPU-hours.

Switch: the template's IdleEnabled (IDLE_ENABLED), the one kill switch, read before anything else (a
deployment switch, so not in the shares config, which holds policy).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote

from ..domain.alerts.alert import FailureMetricEvent, job_alert, logs_link
from ..domain.alerts.kinds import AlertKind
from ..domain.config.shares import SharesConfig, Tier
from ..domain.errors import RejectedByServiceError
from ..domain.idle.policy import (
    METRICS_NAMESPACE,
    Act,
    GpuSample,
    IdleDecision,
    IdlePolicy,
    Notice,
    Signal,
    Verdict,
    decide,
    host_dimension,
    hosts_of,
    lookback_seconds,
    policy_for,
    stop_reason,
)
from ..domain.idle.record import IdleRecord
from ..domain.jobs.arns import job_id_of, queue_name, training_job_name
from ..domain.jobs.lifecycle import JobState, JobStatus, gpus_per_instance
from ..schemas.idle import IdleRun, parse_idle_message
from ..schemas.scheduled import check_tick_lead
from .alerting import AlertSender
from .ports import (
    CheckpointReader,
    GpuMetricsReader,
    IdleLedger,
    JobStore,
    MetricsSink,
    ReclaimBatch,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class IdleSettings:
    """The deployment's kill switch and the region the alerts' console links point at."""

    enabled: bool = True
    region: str = "us-east-1"


@dataclass(frozen=True)
class DetectIdlePorts:
    """Everything the idle detector talks to; built once per cold start by bootstrap."""

    store: JobStore
    gpu_metrics: GpuMetricsReader
    batch: ReclaimBatch
    checkpoints: CheckpointReader
    ledger: IdleLedger
    #: The idle and hung alerts go out through it (deduplicated, listed).
    sender: AlertSender
    metrics: MetricsSink
    config: SharesConfig
    settings: IdleSettings
    #: Only a manual run (no tick time) reads it (and the sender, for its claims' lease).
    clock: Callable[[], float]


@dataclass
class IdleOutcome:
    """What one tick did, for logs and tests."""

    result: str
    now: float | None = None
    #: Verdict by job id, for every running GPU job judged.
    verdicts: dict[str, str] = field(default_factory=dict)
    #: Act by job id, for the jobs something was done to.
    acted: dict[str, str] = field(default_factory=dict)
    stopped: list[str] = field(default_factory=list)
    alerts: int = 0


@dataclass(frozen=True)
class _Job:
    state: JobState
    job_id: str
    team: str | None
    #: None: neither the share nor the priority names a tier; the most lenient policy judges the job.
    tier: Tier | None
    instance_type: str
    instances: int
    training_job_name: str
    started_at: float
    policy: IdlePolicy

    @property
    def dimensions(self) -> list[str]:
        return [host_dimension(self.training_job_name, h) for h in hosts_of(self.instances)]

    @property
    def gpus(self) -> int:
        return gpus_per_instance(self.instance_type) * self.instances


# ------------------------------------------------------------------------------------------------
# Entry point
# ------------------------------------------------------------------------------------------------
def handle_message(raw: Any, ports: DetectIdlePorts) -> IdleOutcome:
    """Parse one queue message and run it: the handler's whole path, for callers holding a raw message."""
    return detect_idle(parse_idle_message(raw), ports)


def detect_idle(request: IdleRun, ports: DetectIdlePorts) -> IdleOutcome:
    """One run: at its schedule tick's time, or at the clock's when asked for by hand."""
    if not ports.settings.enabled:
        return IdleOutcome("disabled (IdleEnabled=false)")
    return run(ports, ports.clock() if request.at is None else request.at)


def run(ports: DetectIdlePorts, now: float) -> IdleOutcome:
    """Judge every running GPU job at ``now`` and apply what each decision says."""
    check_tick_lead(now, ports.clock())
    jobs = running_gpu_jobs(ports, now)
    outcome = IdleOutcome("judged", now)
    if not jobs:
        outcome.result = "no running GPU job"
        return outcome
    start = min(max(j.started_at + j.policy.grace_seconds, now - lookback_seconds(j.policy)) for j in jobs)
    dimensions = [d for j in jobs for d in j.dimensions]
    found = ports.gpu_metrics.gpu_samples(dimensions, min(start, now - 60), now)
    use: dict[tuple[str, str, str], list[float]] = {}
    for job in jobs:
        samples = [s for d in job.dimensions for s in found.get(d, [])]
        decision = judge(job, samples, ports, now)
        if job.team is None or job.tier is None:
            unknown = "team" if job.team is None else "tier"
            decision = replace(
                decision, reason=f"{decision.reason} (judged by the most lenient policy: {unknown} unknown)"
            )
        outcome.verdicts[job.job_id] = decision.verdict.value
        count_idle_time(job, decision, ports)
        if decision.mean_percent_per_gpu is not None:
            share = use.setdefault(_share(job), [0.0, 0.0])
            share[0] += decision.mean_percent_per_gpu * job.gpus
            share[1] += job.gpus
        if decision.act is not Act.NONE:
            apply(job, decision, ports, now, outcome)
    publish_true_utilization(use, ports)
    outcome.result = _summary(outcome)
    return outcome


def _share(job: _Job) -> tuple[str, str, str]:
    queue = queue_name(job.state.job_queue) if job.state.job_queue else "unknown"
    return queue, job.team or "none", job.tier.value if job.tier else "none"


def publish_true_utilization(use: Mapping[tuple[str, str, str], list[float]], ports: DetectIdlePorts) -> None:
    """One gauge per share: what its running jobs' GPUs do, GPU-weighted (a re-delivered tick repeats a
    gauge value, which an Average does not count twice)."""
    for (queue, team, tier), (weighted, gpus) in sorted(use.items()):
        if gpus:
            ports.metrics.emit(
                [FailureMetricEvent("TrueGpuUtilization", round(weighted / gpus, 2), "Percent")],
                {"Queue": queue, "Team": team, "Tier": tier},
                {},
            )


# ------------------------------------------------------------------------------------------------
# Read and decide
# ------------------------------------------------------------------------------------------------
def running_gpu_jobs(ports: DetectIdlePorts, now: float) -> list[_Job]:
    """The RUNNING jobs on GPU instance types, with the policy of their team and tier."""
    config = ports.config
    jobs: list[_Job] = []
    for state in ports.store.jobs(JobStatus.RUNNING.value):
        training_arn = state.latest_training_job_arn
        if not training_arn or state.started_at is None:
            continue  # no training job yet: SageMaker publishes nothing to read
        training = ports.store.load_training_job(training_arn)
        # Batch's events carry the instance type only as a capacity unit on quota queues; the
        # training job's own event names it.
        instance_type = (
            state.instance_type or (training.instance_type if training else None) or _typed_unit(state)
        )
        if gpus_per_instance(instance_type) <= 0 or not instance_type:
            continue
        # The Host dimension needs the name as created: SageMaker's own, else Batch's spelling of it.
        spellings = state.training_job_arns
        name = (training.training_job_name if training else None) or training_job_name(
            training_arn, spellings
        )
        count = (training.instance_count if training else None) or state.instance_count or 1
        # A quota-share queue's job has no share identifier: its quota share names the team.
        team = team_of(config, state.share)
        tier = config.job_tier(state.share, state.scheduling_priority)
        started = state.started_at / 1000
        if training and training.training_started_at:
            started = max(started, training.training_started_at / 1000)
        if started > now:
            continue  # started after this tick: not part of the state it decides on
        jobs.append(
            _Job(
                state=state,
                job_id=state.job_id or job_id_of(state.job_arn),
                team=team,
                tier=tier,
                instance_type=instance_type,
                instances=max(1, int(count)),
                training_job_name=name,
                started_at=started,
                policy=policy_for(config.idle, team, tier),
            )
        )
    return jobs


def team_of(config: SharesConfig, share: str | None) -> str | None:
    """A job's team by its share identifier (a team's plain share too)."""
    team = config.team_for_share(share)
    if team is None and share:
        team = next((name for name, t in config.teams.items() if t.share == share), None)
    return team


def _typed_unit(state: JobState) -> str | None:
    units = [u.unit for u in state.capacity_usage if u.unit != "NUM_INSTANCES"]
    return units[0] if units else None


def previous_notice(ports: DetectIdlePorts, job: _Job, now: float) -> Notice | None:
    """The job's newest recorded decision at or before ``now`` in its current run; a stop whenever made.

    A stop is final for the run: a tick older than the stop (delivered late) must not stop it again.
    """
    records = [r for r in ports.ledger.decisions(job.job_id) if r.decided_at >= job.started_at]
    stops = [r for r in records if r.act in (Act.STOP, Act.STOP_AND_REQUEUE)]
    if stops:
        return min(stops, key=lambda r: r.decided_at).notice
    earlier = [r for r in records if r.decided_at <= now]
    return max(earlier, key=lambda r: (r.decided_at, r.act.value)).notice if earlier else None


def judge(job: _Job, samples: list[GpuSample], ports: DetectIdlePorts, now: float) -> IdleDecision:
    """The decision for one job: idle first; the hung check (a describe and an S3 list) only when due."""
    policy = job.policy
    common: dict[str, Any] = {
        "started_at": job.started_at,
        "instance_type": job.instance_type,
        "instance_count": job.instances,
        "samples": samples,
        "now": now,
    }
    decision = decide(policy, **common)
    hung_due = now - (job.started_at + policy.grace_seconds) >= policy.hung_after_seconds
    if decision.verdict is Verdict.BUSY and hung_due:
        uri = checkpoint_uri(ports, job.job_id)
        if uri:
            common.update(checkpointing=True, last_checkpoint_at=ports.checkpoints.newest(uri, now))
            decision = decide(policy, **common)
    if decision.verdict not in (Verdict.IDLE, Verdict.HUNG):
        return decision
    # Only a job that may be acted on reads its previous decision (one query).
    return decide(policy, previous=previous_notice(ports, job, now), **common)


def checkpoint_uri(ports: DetectIdlePorts, job_id: str) -> str | None:
    """The job's CheckpointConfig.S3Uri, from DescribeServiceJob's payload (None: it has none)."""
    described = ports.batch.describe(job_id)
    if described is None:
        return None
    return described.checkpoint_uri


# ------------------------------------------------------------------------------------------------
# Apply
# ------------------------------------------------------------------------------------------------
def apply(
    job: _Job, decision: IdleDecision, ports: DetectIdlePorts, now: float, outcome: IdleOutcome
) -> None:
    """Do what the decision says, then record it (a re-delivery redoes only idempotent steps)."""
    stopped = False
    if decision.act in (Act.STOP, Act.STOP_AND_REQUEUE):
        try:
            ports.batch.terminate(job.job_id, stop_reason(decision))
            stopped = True
            outcome.stopped.append(job.job_id)
        except RejectedByServiceError as exc:  # it ended meanwhile: its capacity is free anyway
            logger.info("idle job not terminated", extra={"job_id": job.job_id, "why": exc.problem})
    record = idle_record(job, decision, ports, now, stopped)
    outcome.acted[job.job_id] = decision.act.value
    outcome.alerts += _alert(record, ports, now)
    if ports.ledger.record(record):
        _measure(record, job, ports)


def idle_record(
    job: _Job, decision: IdleDecision, ports: DetectIdlePorts, now: float, stopped: bool
) -> IdleRecord:
    """The audit record of one decision that acts."""
    signal = decision.signal
    if signal is None or decision.since is None:
        raise ValueError(f"decision {decision.verdict} does not act")
    state = job.state
    gpu_seconds = decision.idle_seconds * job.gpus
    return IdleRecord(
        job_arn=state.job_arn,
        job_id=job.job_id,
        signal=signal,
        act=decision.act,
        decided_at=now,
        since=decision.since,
        until=decision.until,
        reason=decision.reason,
        job_name=state.job_name,
        training_job_name=job.training_job_name,
        queue=queue_name(state.job_queue) if state.job_queue else None,
        share=state.share,
        team=job.team,
        tier=job.tier.value if job.tier else None,
        instance_type=job.instance_type,
        instances=job.instances,
        gpus=job.gpus,
        peak_host_percent=decision.peak_host_percent,
        peak_memory_percent=decision.peak_memory_percent,
        stop_at=decision.stop_at,
        idle_gpu_hours=round(gpu_seconds / 3600, 3),
        stopped=stopped,
    )


def metrics_link(region: str, training_job_name: str) -> str:
    """The CloudWatch console's metrics view of a training job's hosts (GPU, memory, CPU)."""
    search = quote(f"{{{METRICS_NAMESPACE},Host}} {training_job_name}", safe="")
    return (
        f"https://console.aws.amazon.com/cloudwatch/home?region={region}#metricsV2:graph=~();search={search}"
    )


def _alert(record: IdleRecord, ports: DetectIdlePorts, now: float) -> int:
    region = ports.settings.region
    alert = job_alert(
        AlertKind.HUNG if record.signal is Signal.HUNG else AlertKind.IDLE,
        share=record.share or record.team or "",
        queue=record.queue or "",
        job_arn=record.job_arn,
        job_name=record.job_name,
        reason=record.reason,
        variant=record.act.value,
        extra={
            "act": record.act.value,
            "since": record.since,
            "until": record.until,
            "stopAt": record.stop_at,
            "instanceType": record.instance_type,
            "gpus": record.gpus,
            "peakHostPercent": record.peak_host_percent,
            "peakMemoryPercent": record.peak_memory_percent,
            "idleGpuHours": record.idle_gpu_hours,
            "metrics": metrics_link(region, record.training_job_name or record.job_id),
            "logs": logs_link(region, record.training_job_name),
        },
        team=record.team,
        tier=record.tier,
        # One alert per job, act and period: the subject key names them, so a warning never silences
        # the stop that follows it, and a re-delivered tick sends nothing twice.
        subject_key=f"{record.job_arn}#{record.act.value}#{int(record.since)}",
    )
    return int(ports.sender.send(alert, now))


def _dims(record: IdleRecord) -> dict[str, str]:
    return {"Queue": record.queue or "unknown", "Team": record.team or "none", "Tier": record.tier or "none"}


def _measure(record: IdleRecord, job: _Job, ports: DetectIdlePorts) -> None:
    """Metrics of a decision recorded for the first time (so once, whatever the deliveries)."""
    dims = _dims(record)
    props = {"jobArn": record.job_arn, "act": record.act.value}
    events = [
        FailureMetricEvent("IdleJobsFlagged" if record.signal.value == "idle" else "HungJobsFlagged", 1)
    ]
    if record.stopped:
        name = "IdleJobsStopped" if record.act is Act.STOP else "HungJobsRequeued"
        events.append(FailureMetricEvent(name, 1))
        if record.act is Act.STOP:
            events.append(
                FailureMetricEvent("ReclaimedGpuHours", reclaimed_gpu_hours(job, ports, record), "None")
            )
    ports.metrics.emit(events, dims, props)


def reclaimed_gpu_hours(job: _Job, ports: DetectIdlePorts, record: IdleRecord) -> float:
    """GPU-hours an idle stop gave back: the GPUs x what the job could still have held them.

    A job idle past its window and its warning rarely recovers, and holds its instances until
    StoppingCondition.MaxRuntimeInSeconds ends it; that remaining run time is what the stop frees.
    Without a MaxRuntimeInSeconds (none in the payload), SageMaker's default of one day applies.
    """
    described = ports.batch.describe(job.job_id)
    payload = described.payload_object() if described else {}
    limit = float((payload.get("StoppingCondition") or {}).get("MaxRuntimeInSeconds") or 86400)
    remaining = max(0.0, job.started_at + limit - record.decided_at)
    return round(remaining * job.gpus / 3600, 3)


def count_idle_time(job: _Job, decision: IdleDecision, ports: DetectIdlePorts) -> None:
    """Emit the idle GPU-hours the evidence shows beyond what earlier ticks counted (each hour once)."""
    if (
        decision.verdict not in (Verdict.IDLE, Verdict.IDLING)
        or decision.since is None
        or decision.until is None
    ):
        return
    if decision.until <= decision.since:
        return
    counted = ports.ledger.count_idle(job.job_id, decision.until)
    start = decision.since if counted is None else max(decision.since, counted)
    seconds = max(0.0, decision.until - start)
    if seconds <= 0:
        return
    queue = queue_name(job.state.job_queue) if job.state.job_queue else "unknown"
    ports.metrics.emit(
        [FailureMetricEvent("IdleGpuHours", round(seconds * job.gpus / 3600, 4), "None")],
        {"Queue": queue, "Team": job.team or "none", "Tier": job.tier.value if job.tier else "none"},
        {"jobArn": job.state.job_arn},
    )


def _summary(outcome: IdleOutcome) -> str:
    flagged = sum(1 for v in outcome.verdicts.values() if v in ("idle", "hung"))
    parts = [f"{len(outcome.verdicts)} judged", f"{flagged} idle or hung"]
    if outcome.acted:
        parts.append(f"{len(outcome.acted)} acted on")
    if outcome.stopped:
        parts.append(f"{len(outcome.stopped)} stopped")
    return ", ".join(parts)
