"""Checkpoint-aware reclaim: stop lower-tier jobs (resuming from checkpoint) for a job waiting too long.

AWS Batch fair-share never preempts. When a job of a tier with ``reclaim_after_seconds`` has waited
that long, this use case reads the GPU queue as it is (ListServiceJobs, DescribeServiceJob, the
newest object under each candidate's CheckpointConfig.S3Uri), lets ``domain.reclaim.plan_reclaim``
pick the victims that can resume and lose the least work, and applies the plan:

1. one transaction writes the decision (``RECLAIM#<waiting job>`` / ``DECISION#<id>``, the id a digest
   of the waiting job and its victims), a victim item per victim (new only: a job is stopped for one
   waiting job at most), a history item on the waiting job and on each victim, and the per-job,
   per-day and per-rate-window victim counters (conditional on the budgets, so racing runs and
   triggers seconds apart cannot overrun them);
2. the waiting job is described again: if it no longer waits (dispatched, cancelled, gone), the claim
   is released in one transaction (decision, victim items, history items, counters) and nobody is
   stopped or told; else TerminateServiceJob of each victim, with a reason that names the waiting
   job; the victim's FAILED
   event then goes through the failure path, which classifies it ``reclaimed`` and requeues the same
   payload at once (CheckpointConfig included, so it resumes) without spending its failure budget,
   tagged with the job it was displaced by so it never reclaims from that job;
3. an alert to each victim's team (kind ``reclaim``), metrics, and the decision marked applied.

Triggers: a GPU-queue job's RUNNABLE event (a job of a reclaiming tier is re-checked when it becomes
due, through a delayed message on this function's own queue carrying the due time), the 5-minute
schedule tick, and a manual run. Every decision is made at its trigger's time (the event's, the due
time, the tick's), never the clock's, so a re-delivered trigger plans the same way; and since the
victims it chose are then recorded as being stopped, a re-delivery stops nobody twice and audits once.

Switches: ``enabled`` (the template's ReclaimEnabled, a kill switch read before anything else) and
``dry_run`` (ReclaimDryRun: plans are audited once each, nothing is stopped). Quota-share queues are
left alone: Batch preempts there itself.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..domain.alerts.alert import FailureMetricEvent, job_alert
from ..domain.alerts.kinds import AlertKind
from ..domain.config.shares import SchedulingMode, SharesConfig, Tier
from ..domain.errors import InvalidInputError, RejectedByServiceError
from ..domain.failures.requeue import ChainState
from ..domain.instance_types.capacity import Capacity
from ..domain.jobs.arns import queue_name
from ..domain.jobs.described_job import DescribedJob
from ..domain.jobs.lifecycle import HistoryEntry, JobStatus, ObservationKind, gpus_per_instance
from ..domain.reclaim.plan import (
    TIER_RANK,
    ClaimBudgets,
    Reclaim,
    ReclaimPlan,
    ReclaimSnapshot,
    RunningJob,
    Victim,
    WaitingJob,
    lost_minutes,
    plan_reclaim,
    rate_window,
    utc_day,
)
from ..domain.reclaim.reason import stop_reason
from ..domain.reclaim.record import ReclaimDue, ReclaimRecord, ReclaimVictimRecord
from ..schemas.reclaim import ReclaimTrigger, RunnableEvent, parse_reclaim_message
from ..schemas.scheduled import check_tick_lead, tick_id_at
from .alerting import AlertSender
from .ports import CheckpointReader, MetricsSink, ReclaimBatch, ReclaimLedger, RequeueTimer, TickWatermarks

logger = logging.getLogger(__name__)

#: The reclaim runs' name in the tick watermark (``TickWatermarks``): the newest time one decided at.
RECLAIM_RUNNER = "reclaim"
#: SQS DelaySeconds maximum: a later due time is reached in hops of at most this.
MAX_HOP_SECONDS = 900
HOLDING = (JobStatus.SCHEDULED, JobStatus.STARTING, JobStatus.RUNNING)
#: A beneficiary in one of these still waits; anything else (dispatched, ended, gone) releases its claim.
WAITING = frozenset({JobStatus.SUBMITTED.value, JobStatus.PENDING.value, JobStatus.RUNNABLE.value})


@dataclass(frozen=True)
class ReclaimSettings:
    """The deployment's switches and the GPU queue (name or ARN) reclaim watches."""

    job_queue: str
    enabled: bool = True
    dry_run: bool = False


@dataclass(frozen=True)
class ReclaimPorts:
    """Everything reclaim talks to; built once per cold start by bootstrap."""

    batch: ReclaimBatch
    checkpoints: CheckpointReader
    ledger: ReclaimLedger
    #: The victims' alerts go out through it (deduplicated, listed).
    sender: AlertSender
    timer: RequeueTimer
    metrics: MetricsSink
    config: SharesConfig
    settings: ReclaimSettings
    #: Only a manual run (no trigger time) reads it (and the sender, for its claims' lease).
    clock: Callable[[], float]
    #: Reclaim's tick watermark (the newest time a run decided at).
    ticks: TickWatermarks


@dataclass
class ReclaimOutcome:
    """What one trigger did, for logs and tests."""

    result: str
    now: float | None = None
    #: Victim job ids stopped by this run, by the waiting job they were stopped for.
    stopped: dict[str, list[str]] = field(default_factory=dict)
    #: Reclaims planned but not applied (dry run), by waiting job.
    planned: dict[str, list[str]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    #: Claims released because their waiting job no longer waited (its status, or "gone").
    released: dict[str, str] = field(default_factory=dict)
    alerts: int = 0


# ------------------------------------------------------------------------------------------------
# Entry point
# ------------------------------------------------------------------------------------------------
def handle_message(raw: Any, ports: ReclaimPorts) -> ReclaimOutcome:
    """Parse one queue message and run it: the handler's whole path, for callers holding a raw message."""
    return reclaim(parse_reclaim_message(raw), ports)


def reclaim(trigger: ReclaimTrigger, ports: ReclaimPorts) -> ReclaimOutcome:
    """Act on one trigger: a RUNNABLE event, a due re-check, a schedule tick or a manual run."""
    settings = ports.settings
    if not settings.enabled:
        return ReclaimOutcome("disabled (ReclaimEnabled=false)")
    if ports.config.mode is SchedulingMode.QUOTA:
        return ReclaimOutcome("quota-share queue: AWS Batch preempts there itself")
    if isinstance(trigger, ReclaimDue):
        return _due(trigger, ports)
    if isinstance(trigger, RunnableEvent):
        return _runnable(trigger, ports)
    return run(ports, ports.clock() if trigger.at is None else trigger.at)


def _runnable(event: RunnableEvent, ports: ReclaimPorts) -> ReclaimOutcome:
    """A job became RUNNABLE: if its tier reclaims, decide now or when it becomes due."""
    if event.status != JobStatus.RUNNABLE.value:
        return ReclaimOutcome(f"status {event.status}: nothing to do")
    if queue_name(event.job_queue) != queue_name(ports.settings.job_queue):
        return ReclaimOutcome("not the GPU queue")
    now = event.at
    if now is None:
        raise InvalidInputError(
            "time", "is missing from the event and its detail", "send the event unchanged"
        )
    config = ports.config
    priority = event.scheduling_priority
    if config.tier_for_share(event.share_identifier) is None and priority is None:
        # AWS does not promise schedulingPriority in events: without it (and a team x tier share) the
        # tier is unknown, so the job is re-checked at the shortest threshold, where it is described.
        thresholds = [
            t.reclaim_after_seconds for t in config.tiers.values() if t.reclaim_after_seconds is not None
        ]
        after: int | None = min(thresholds) if thresholds else None
        label = "no tier"
    else:
        tier = job_tier(config, event.share_identifier, priority)
        after, label = config.tiers[tier].reclaim_after_seconds, tier.value
    if after is None:
        return ReclaimOutcome(f"{label} never reclaims", now)
    created = event.created_at
    due = float(created) / 1000 + after if created is not None else now
    if due - now > 1:
        return _hop(event.job_arn, event.job_id, due, now, ports)
    return run(ports, now)


def _hop(job_arn: str, job_id: str, due: float, now: float, ports: ReclaimPorts) -> ReclaimOutcome:
    hop = min(due, now + MAX_HOP_SECONDS)
    ports.timer.after(ReclaimDue(job_arn, job_id, due, hop), int(round(hop - now)), now)
    return ReclaimOutcome(f"re-check {job_id} in {hop - now:.0f}s (due in {due - now:.0f}s)", now)


def _due(due: ReclaimDue, ports: ReclaimPorts) -> ReclaimOutcome:
    if due.due_at - due.hop_at > 1:
        return _hop(due.job_arn, due.job_id, due.due_at, due.hop_at, ports)
    return run(ports, due.hop_at)


# ------------------------------------------------------------------------------------------------
# Snapshot, plan, apply
# ------------------------------------------------------------------------------------------------
def run(ports: ReclaimPorts, now: float) -> ReclaimOutcome:
    """Read the GPU queue, plan at ``now`` and apply the plan (or only audit it, in dry run).

    Every trigger's time is bounded first (``check_tick_lead``, against this function's clock): a
    tick or event dated ahead would make every waiting job look long past its threshold, and
    capacity would be reclaimed for all of them at once.
    """
    check_tick_lead(now, ports.clock())
    snapshot, described = build_snapshot(ports, now)
    if snapshot is None:
        outcome = ReclaimOutcome("no waiting job is due", now)
    else:
        config = ports.config
        plan = plan_reclaim(snapshot, config.tiers, config.reclaim)
        outcome = apply_plan(plan, snapshot, described, ports)
        finish_interrupted(snapshot, ports, outcome, now)
    ports.ticks.advance_tick(RECLAIM_RUNNER, tick_id_at(now))
    return outcome


def finish_interrupted(
    snapshot: ReclaimSnapshot, ports: ReclaimPorts, outcome: ReclaimOutcome, now: float
) -> None:
    """Finish reclaims whose victims were claimed but whose run died before terminating them all.

    A claimed victim counts as being stopped, so the planner leaves it alone; only this step stops it.
    """
    if ports.settings.dry_run:
        return
    pending = {
        (beneficiary, decision)
        for j in snapshot.running
        if (beneficiary := j.stopping_for) and (decision := ports.ledger.decision_of(j.job_id))
    }
    holding = {j.job_id for j in snapshot.running}
    for beneficiary, decision in sorted(pending):
        stored = ports.ledger.load(beneficiary, decision)
        if stored is None or stored.applied:
            continue
        unstopped = sum(1 for v in stored.victims if v.job_id in holding)
        if not _still_waits(beneficiary, stored, ports, unstopped, outcome):
            continue
        outcome.stopped[beneficiary] = _stop(stored, ports)
        if ports.ledger.mark_applied(beneficiary, decision, now):
            outcome.alerts += _announce(stored, ports, now)
    outcome.result = _summary(outcome)


def _still_waits(
    beneficiary: str, record: ReclaimRecord, ports: ReclaimPorts, unstopped: int, outcome: ReclaimOutcome
) -> bool:
    """Whether the waiting job still waits, described now; if not, its claim is released unapplied."""
    job = ports.batch.describe(beneficiary)
    if job is not None and job.status in WAITING:
        return True
    budgets = ClaimBudgets.at(record.decided_at, ports.config.reclaim)
    histories = reclaim_histories(record, {}, record.decided_at)
    if ports.ledger.release(record, histories, budgets, unstopped):
        status = job.status if job is not None else "gone"
        outcome.released[beneficiary] = status
        logger.info(
            "reclaim released: its job no longer waits", extra={"job_id": beneficiary, "status": status}
        )
    return False


def job_tier(config: SharesConfig, share: str | None, priority: Any) -> Tier:
    """A job's tier: its share's (team x tier layout), else its schedulingPriority's, else LOWPRI."""
    by_share = config.tier_for_share(share)
    if by_share is not None:
        return by_share
    return config.tier_for_priority(priority if isinstance(priority, int) else None) or Tier.LOWPRI


def job_team(config: SharesConfig, share: str | None) -> str | None:
    """A job's team by its share identifier; a team's plain share too (jobs queued before team x tier)."""
    team = config.team_for_share(share)
    if team is None and share:
        team = next((name for name, t in config.teams.items() if t.share == share), None)
    return team


def build_snapshot(ports: ReclaimPorts, now: float) -> tuple[ReclaimSnapshot | None, dict[str, DescribedJob]]:
    """What the planner reads, from Batch, S3 and the ledger; None when no waiting job is due.

    Running jobs and checkpoints are read only when some waiting job is due, so a quiet tick costs
    one ListServiceJobs call per status and nothing else.
    """
    config, queue = ports.config, ports.settings.job_queue
    described: dict[str, DescribedJob] = {}
    waiting: list[WaitingJob] = []
    thresholds = [
        t.reclaim_after_seconds for t in config.tiers.values() if t.reclaim_after_seconds is not None
    ]
    if not thresholds:
        return None, described
    for summary in ports.batch.list_jobs(queue, JobStatus.RUNNABLE.value):
        # ListServiceJobs summaries carry no schedulingPriority: the tier is known here only from a
        # team x tier share; otherwise any job older than the shortest threshold is described.
        tier = config.tier_for_share(summary.share_identifier)
        after = config.tiers[tier].reclaim_after_seconds if tier is not None else min(thresholds)
        created = (summary.created_at or 0) / 1000
        if after is None or now - created < after:
            continue  # not due: the planner would pass it over anyway, so skip the describe
        job = ports.batch.describe(summary.job_id)
        if job is None:
            continue
        waiter = waiting_job(job, config, ports.ledger)
        if waiter is not None:
            described[waiter.job_id] = job
            waiting.append(waiter)
    if not waiting:
        return None, described
    top = min(TIER_RANK[w.tier] for w in waiting)
    stopping = ports.ledger.stopping()
    running: list[RunningJob] = []
    for status in HOLDING:
        for summary in ports.batch.list_jobs(queue, status.value):
            job = ports.batch.describe(summary.job_id)
            if job is None:
                continue
            holder = running_job(job, config, ports.checkpoints, stopping, now, top)
            described[holder.job_id] = job
            running.append(holder)
    snapshot = ReclaimSnapshot(
        now=now,
        capacity=Capacity({t: c.capacity for t, c in config.instance_types.items()}),
        entitlements={name: team.entitled for name, team in config.teams.items()},
        waiting=tuple(sorted(waiting, key=lambda w: w.job_id)),
        running=tuple(sorted(running, key=lambda r: r.job_id)),
        victims_today=ports.ledger.victims_on(utc_day(now)),
        victims_in_window=ports.ledger.victims_in(rate_window(now, config.reclaim.rate_window_seconds)),
    )
    return snapshot, described


def _resources(job: DescribedJob) -> tuple[str, int]:
    resources = job.payload_object().get("ResourceConfig") or {}
    usage = job.capacity_usage
    instance_type = resources.get("InstanceType") or (usage[0].unit if usage else "") or ""
    count = resources.get("InstanceCount") or (usage[0].quantity if usage else 1) or 1
    return str(instance_type), int(count)


def waiting_job(job: DescribedJob, config: SharesConfig, ledger: ReclaimLedger) -> WaitingJob | None:
    """A RUNNABLE job as the planner sees it; None for a job of a share the config does not name."""
    share = job.share_identifier
    team = job_team(config, share)
    if team is None:
        return None
    instance_type, count = _resources(job)
    chain = ChainState.from_tags(job.tags)
    return WaitingJob(
        job_id=job.job_id,
        team=team,
        tier=job_tier(config, share, job.scheduling_priority),
        instance_type=instance_type,
        instances=count,
        waiting_since=float(job.created_at or 0) / 1000,
        displaced_by=frozenset(chain.displaced_by),
        victims_so_far=ledger.victims_for(job.job_id),
    )


def running_job(
    job: DescribedJob,
    config: SharesConfig,
    checkpoints: CheckpointReader,
    stopping: Mapping[str, str],
    now: float,
    top_rank: int,
) -> RunningJob:
    """A dispatched job as the planner sees it (its newest checkpoint read only if it could be a victim)."""
    share = job.share_identifier
    team = job_team(config, share)
    tier = job_tier(config, share, job.scheduling_priority)
    instance_type, count = _resources(job)
    uri = job.checkpoint_uri
    # A job of a share the config does not name holds capacity but is never stopped: reclaim cannot
    # tell whose it is, so it is treated as a job that cannot resume.
    resumable = bool(uri) and team is not None
    newest = None
    if resumable and TIER_RANK[tier] > top_rank:
        # The state as of the decision's time: a checkpoint written since (a late or re-delivered
        # trigger) is left out, so every delivery of one trigger sees the same checkpoint.
        newest = checkpoints.newest(str(uri), now)
    chain = ChainState.from_tags(job.tags)
    stops = [float(chain.reclaimed_at)] if chain.reclaimed_at else []
    stops += [float(a.stopped_at) / 1000 for a in job.recent_preempted_attempts if a.stopped_at is not None]
    attempts = job.attempts or ()
    dispatched = job.scheduled_at or (attempts[-1].started_at if attempts else None)
    return RunningJob(
        job_id=job.job_id,
        team=team or f"?{share}",
        tier=tier,
        instance_type=instance_type,
        instances=count,
        dispatched_at=float(dispatched or job.created_at or 0) / 1000,
        checkpoints=resumable,
        last_checkpoint_at=newest,
        last_stopped_at=max(stops) if stops else None,
        stopping_for=stopping.get(job.job_id),
        displaced_by=frozenset(chain.displaced_by),
    )


def decision_id(reclaim: Reclaim) -> str:
    """A reclaim's id: the waiting job and its victims (the same plan re-delivered has the same id)."""
    text = "|".join([reclaim.job_id, *sorted(v.job_id for v in reclaim.victims)])
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def apply_plan(
    plan: ReclaimPlan,
    snapshot: ReclaimSnapshot,
    described: Mapping[str, DescribedJob],
    ports: ReclaimPorts,
) -> ReclaimOutcome:
    """Apply each reclaim of ``plan`` once (or audit it only, in dry run); report what was done."""
    outcome = ReclaimOutcome("planned", plan.now, skipped={s.job_id: s.reason for s in plan.skipped})
    for skip in plan.skipped:
        _count(
            ports,
            "ReclaimsSkipped",
            {"Queue": queue_name(ports.settings.job_queue), "Reason": _slug(skip.reason)},
        )
    seen = {w.job_id: w.victims_so_far for w in snapshot.waiting}
    for reclaim in plan.reclaims:
        record = replace(
            reclaim_record(reclaim, described, ports, plan.now), victims_before=seen[reclaim.job_id]
        )
        if ports.settings.dry_run:
            if ports.ledger.record_dry_run(record):
                logger.info("reclaim planned (dry run)", extra={"reclaim": asdict(record)})
            outcome.planned[reclaim.job_id] = [v.job_id for v in reclaim.victims]
            continue
        histories = reclaim_histories(record, described, plan.now)
        claimed = ports.ledger.claim(record, histories, ClaimBudgets.at(plan.now, ports.config.reclaim))
        if claimed == "refused":
            outcome.skipped[reclaim.job_id] = "a racing run took a victim or the budget first"
            continue
        if claimed == "exists":
            stored = ports.ledger.load(reclaim.job_id, record.decision_id)
            if stored is None or stored.applied:
                continue
            record = stored
        if not _still_waits(reclaim.job_id, record, ports, len(record.victims), outcome):
            continue
        outcome.stopped[reclaim.job_id] = _stop(record, ports)
        if ports.ledger.mark_applied(reclaim.job_id, record.decision_id, plan.now):
            outcome.alerts += _announce(record, ports, plan.now)
    outcome.result = _summary(outcome)
    return outcome


def reclaim_record(
    reclaim: Reclaim, described: Mapping[str, DescribedJob], ports: ReclaimPorts, now: float
) -> ReclaimRecord:
    """The audit record of one reclaim: who waited and how long, each victim and what it loses."""
    beneficiary = described.get(reclaim.job_id)
    config = ports.config

    def victim(v: Victim) -> ReclaimVictimRecord:
        job = described.get(v.job_id)
        instance_type = _resources(job)[0] if job else None
        return ReclaimVictimRecord(
            job_id=v.job_id,
            job_arn=(job.job_arn if job else None) or v.job_id,
            job_name=job.job_name if job else None,
            share=job.share_identifier if job else None,
            team=v.team,
            tier=v.tier.value,
            instance_type=instance_type,
            instances=v.instances,
            borrowed=v.borrowed,
            checkpoint_age_seconds=None
            if v.checkpoint_age_seconds is None
            else round(v.checkpoint_age_seconds),
            lost_instance_minutes=round(lost_minutes(v), 1),
            gpu_hours_lost=round(v.lost_instance_seconds * gpus_per_instance(instance_type) / 3600, 3),
            reason=stop_reason(
                reclaim.job_id,
                beneficiary.job_name if beneficiary else None,
                reclaim.tier,
                reclaim.waited_seconds,
            ),
        )

    return ReclaimRecord(
        decision_id=decision_id(reclaim),
        job_id=reclaim.job_id,
        job_arn=(beneficiary.job_arn if beneficiary else None) or reclaim.job_id,
        job_name=beneficiary.job_name if beneficiary else None,
        job_queue=(beneficiary.job_queue if beneficiary else None) or ports.settings.job_queue,
        share=beneficiary.share_identifier if beneficiary else None,
        team=reclaim.team,
        tier=reclaim.tier.value,
        waited_seconds=round(reclaim.waited_seconds),
        reclaim_after_seconds=config.tiers[reclaim.tier].reclaim_after_seconds,
        short_instances=reclaim.short_instances,
        victims=tuple(victim(v) for v in reclaim.victims),
        lost_instance_minutes=round(reclaim.lost_instance_seconds / 60, 1),
        decided_at=now,
        dry_run=ports.settings.dry_run,
    )


def reclaim_histories(
    record: ReclaimRecord, described: Mapping[str, DescribedJob], now: float
) -> list[tuple[str, HistoryEntry]]:
    """The history item the waiting job gets (what was stopped for it) and each victim's (why it was)."""
    at = int(now * 1000)
    key = record.decision_id
    names = ", ".join(
        f"{v.job_name or v.job_id} ({v.team} {v.tier}, {v.instances} inst, "
        f"checkpoint {_age(v.checkpoint_age_seconds)}, {v.lost_instance_minutes} instance-min lost)"
        for v in record.victims
    )
    entries = [
        (
            record.job_arn,
            HistoryEntry.note(
                ObservationKind.RECLAIM,
                at=at,
                tag=key,
                status=JobStatus.RUNNABLE,
                reason=f"reclaim after waiting {record.waited_seconds} s "
                f"({record.tier} threshold {record.reclaim_after_seconds} s): stopping {names}",
                digest=f"reclaim:{key}",
            ),
        )
    ]
    for v in record.victims:
        entries.append(
            (
                v.job_arn,
                HistoryEntry.note(
                    ObservationKind.RECLAIMED,
                    at=at,
                    tag=key,
                    status=JobStatus(_status_of(described.get(v.job_id))),
                    reason=f"stopped for {record.waiting_name} ({record.team} "
                    f"{record.tier}, waited {record.waited_seconds} s); checkpoint "
                    f"{_age(v.checkpoint_age_seconds)}, {v.lost_instance_minutes} instance-min lost; "
                    "requeued, resumes from checkpoint",
                    digest=f"reclaimed:{key}",
                ),
            )
        )
    return entries


def _stop(record: ReclaimRecord, ports: ReclaimPorts) -> list[str]:
    stopped = []
    for v in record.victims:
        try:
            ports.batch.terminate(v.job_id, v.reason)
        except RejectedByServiceError as exc:  # it ended meanwhile: its capacity is free anyway
            logger.info("victim not terminated", extra={"job_id": v.job_id, "why": exc.problem})
            continue
        stopped.append(v.job_id)
        logger.info("victim terminated", extra={"job_arn": v.job_arn, "for": record.job_arn})
    return stopped


def _announce(record: ReclaimRecord, ports: ReclaimPorts, now: float) -> int:
    """Metrics for the reclaim and one alert per victim to its team (once: after ``mark_applied``)."""
    queue = queue_name(record.job_queue)
    _count(ports, "Reclaims", {"Queue": queue, "Team": record.team, "Tier": record.tier}, record.job_arn)
    sent = 0
    for v in record.victims:
        dims = {"Queue": queue, "Team": v.team, "Tier": v.tier}
        _count(ports, "ReclaimVictims", dims, v.job_arn)
        ports.metrics.emit(
            [FailureMetricEvent("ReclaimGpuHoursLost", float(v.gpu_hours_lost), "None")],
            dims,
            {"jobArn": v.job_arn, "beneficiary": record.job_arn},
        )
        alert = job_alert(
            AlertKind.RECLAIM,
            share=v.share or v.team,
            queue=queue,
            job_arn=v.job_arn,
            job_name=v.job_name,
            reason=v.reason,
            facts={"waiting_tier": record.tier, "waiting_name": record.waiting_name},
            extra={
                "team": v.team,
                "tier": v.tier,
                "beneficiary": record.job_arn,
                "beneficiaryName": record.job_name,
                "beneficiaryTeam": record.team,
                "beneficiaryTier": record.tier,
                "waitedSeconds": record.waited_seconds,
                "borrowed": v.borrowed,
                "checkpointAgeSeconds": v.checkpoint_age_seconds,
                "lostInstanceMinutes": v.lost_instance_minutes,
            },
            # The victim's tier is known (its identifier's, else its priority's): the routing attributes
            # carry it, as the body does, even when the victim's share is its team's plain one.
            team=v.team,
            tier=v.tier,
        )
        sent += ports.sender.send(alert, now)
    return sent


# ------------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------------
def _status_of(job: DescribedJob | None) -> str:
    return (job.status if job else None) or "RUNNING"


def _age(seconds: Any) -> str:
    return "none" if seconds is None else f"{seconds} s old"


def _slug(reason: str) -> str:
    # Skip reasons are a handful of fixed sentences: a dimension value of few words.
    return "-".join(reason.split()[:4])


def _count(ports: ReclaimPorts, name: str, dims: Mapping[str, str], job_arn: str = "") -> None:
    ports.metrics.emit([FailureMetricEvent(name, 1)], dims, {"jobArn": job_arn} if job_arn else {})


def _summary(outcome: ReclaimOutcome) -> str:
    parts: Iterable[str] = (
        [f"stopped {sum(len(v) for v in outcome.stopped.values())} for {len(outcome.stopped)}"]
        if outcome.stopped
        else []
    )
    parts = [*parts, *([f"dry run: {len(outcome.planned)} planned"] if outcome.planned else [])]
    parts = [*parts, *([f"{len(outcome.skipped)} skipped"] if outcome.skipped else [])]
    return "; ".join(parts) or "nothing to reclaim"
