"""The scheduled watch: escalate jobs waiting past their tier's SLO, reconcile with Batch, publish gauges.

Every few minutes (an EventBridge schedule):

1. Jobs in trouble: RUNNABLE jobs (ByStatus index) past their tier's wait SLO get a higher
   schedulingPriority through UpdateServiceJob, in bounded steps (``priority_escalation``: never the
   next tier's priority), each raise recorded in the job's history. A job still waiting twice its
   SLO raises one ``wait_slo`` alert.
2. Reconcile: ListServiceJobs per queue and active status, DescribeServiceJob, and every result
   through ``record_observation`` as a RECONCILED observation, so a missed event is repaired by the
   same idempotent path. A job the table thinks active that Batch no longer knows raises one
   ``unknown_to_batch`` alert; a repaired FAILED job goes through the failure path. Then the training
   jobs: one the table holds as not final whose Batch job has ended (its final SageMaker event was
   lost) gets DescribeTrainingJob, recorded as an observation, so it is costed once by the same path.
3. Predictions (when the run is given ``ForecastPorts``): each waiting GPU job's start forecast on the
   live twin, stored on its record (``service/start_predictions.py``); the wait alert of step 1 carries
   the job's newest one, so this step runs before it.
4. Gauges for the dashboard and alarms: runnable jobs and oldest wait by tier, instances in use by
   share against entitlement and capacity, utilization; each budgeted team's month (billed plus what
   its running attempts accrued), its thresholds alerted once a month.

A run is decided at its tick's time (the Scheduled Event's ``time``), not at the clock's: waits, SLOs
and alert windows are measured from it, so a redelivered tick decides the same way, and on the local
stack (whose emulator stamps ticks and job times with a sped-up virtual clock) waits are measured in
the same time as the jobs' own. Only a run asked for by hand, with no tick, reads the clock.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from ..domain.alerts.alert import FailureMetricEvent, job_alert
from ..domain.alerts.kinds import AlertKind
from ..domain.config.shares import Tier
from ..domain.cost.billing import CostMetricEvent
from ..domain.cost.budget import budget_status, crossed
from ..domain.cost.budget_alerts import budget_alert
from ..domain.errors import InvalidInputError, RejectedByServiceError
from ..domain.failures.decision import escalation_ceiling, priority_escalation
from ..domain.failures.record import PriorityRaise
from ..domain.jobs.arns import arn_tail, job_id_of, queue_name
from ..domain.jobs.lifecycle import Decision, HistoryEntry, JobState, JobStatus, ObservationKind
from ..schemas.scheduled import check_tick_lead, parse_scheduled_event, tick_id
from ..schemas.service_job import reconciled_observation
from .handle_failure import FailureWatchPorts, handle_failed_job, job_team, submitted_team
from .record_state import record_observation

if TYPE_CHECKING:
    from ..domain.cost.billing import OpenAttempt
    from ..domain.forecast.prediction import StartPrediction
    from .spend import TeamMonth
    from .start_predictions import ForecastPorts

logger = logging.getLogger(__name__)

ACTIVE_STATUSES = (
    JobStatus.SUBMITTED,
    JobStatus.PENDING,
    JobStatus.RUNNABLE,
    JobStatus.SCHEDULED,
    JobStatus.STARTING,
    JobStatus.RUNNING,
)
_HOLDING = (JobStatus.SCHEDULED, JobStatus.STARTING, JobStatus.RUNNING)
#: A job still RUNNABLE this many SLOs past its tier's wait SLO, and not raised this run, alerts once.
WAIT_ALERT_SLOS = 2
#: The body of a watch run asked for by hand (sent to the watch queue); it carries no tick time.
MANUAL_RUN = {"shareplane": "watch"}


@dataclass
class WatchReport:
    """What one watch run did, for logs and tests."""

    escalated: dict[str, int] = field(default_factory=dict)
    reconciled: int = 0
    repaired: int = 0
    unknown_to_batch: list[str] = field(default_factory=list)
    alerts: int = 0
    failures_handled: int = 0
    #: schedulingPriority by job ARN, as DescribeServiceJob gave it during this run's reconcile.
    batch_priorities: dict[str, int] = field(default_factory=dict)
    #: The team of each job this run described (its share's, else its team tag's), for its alerts.
    teams: dict[str, str] = field(default_factory=dict)
    #: ``<step>:<item>`` of each item this run could not handle; the others were handled regardless.
    failed: list[str] = field(default_factory=list)
    #: Each budgeted team's month as this run saw it (``BudgetStatus.as_dict``).
    budgets: dict[str, dict[str, object]] = field(default_factory=dict)
    #: This run's start prediction of each waiting GPU job it forecast, by job ARN.
    predictions: dict[str, StartPrediction] = field(default_factory=dict)
    #: How many of them were stored (a prediction from a later tick already stored stays).
    predictions_stored: int = 0
    #: Training jobs described because their Batch job ended while they were open in the table.
    training_reconciled: int = 0
    #: ... of which the description changed the recorded state (a lost SageMaker event repaired).
    training_repaired: int = 0


_T = TypeVar("_T")


def isolated(
    ports: FailureWatchPorts, report: WatchReport, step: str, item: str, work: Callable[[], _T]
) -> _T | None:
    """Run one item's work; if it fails, log and count it, and go on with the next item.

    A run covers every queue and every active job at once, so one poison item (a job row whose
    queue was deleted, a job Batch describes in a shape no parser accepts) would otherwise fail each
    tick, and reconcile, escalation, wait alerts and gauges would stop for every team. Failures are
    not retried here: the next tick (minutes later) tries the item again, and the WatchItemsFailed
    metric and the log line say which item keeps failing.
    """
    try:
        return work()
    except Exception as exc:  # noqa: BLE001 (any failure of one item is that item's alone)
        logger.warning(
            "watch item failed", extra={"step": step, "item": item, "error": f"{type(exc).__name__}: {exc}"}
        )
        report.failed.append(f"{step}:{item}")
        ports.metrics.emit(
            [FailureMetricEvent("WatchItemsFailed", 1)],
            {"Step": step},
            {"item": item},
        )
        return None


@dataclass(frozen=True)
class Tick:
    """What a watch message asks for: a run at ``now`` (epoch seconds), named ``tick`` in logs."""

    now: float
    tick: str
    #: A schedule tick (not a run asked for by hand): its lead is bounded and it moves the watermark.
    scheduled: bool = False


#: The watch run's name in the tick watermark (``TickWatermarks``).
WATCH_RUNNER = "watch"


def read_tick(raw: Any, ports: FailureWatchPorts) -> Tick:
    """The time a watch message is run at: its Scheduled Event's ``time``, or the clock for a manual run.

    A tick dated more than ``MAX_TICK_LEAD_SECONDS`` ahead of this function's clock is refused
    (``check_tick_lead``): run at its time, every waiting job would look that far past its SLO, and
    escalations and wait alerts would go out for all of them.
    """
    if raw == MANUAL_RUN:
        # A run asked for by hand has no schedule tick to date it: the one case the wall clock decides.
        now = ports.clock()
        return Tick(now, f"manual@{now:.0f}")
    event = parse_scheduled_event(raw)
    tick = Tick(event.time.timestamp(), tick_id(event), scheduled=True)
    check_tick_lead(tick.now, ports.clock())
    return tick


def watch_tick(ports: FailureWatchPorts, tick: Tick, forecast: ForecastPorts | None = None) -> WatchReport:
    """One watch run at ``tick``'s time; a schedule tick then becomes the watermark the next is bounded by."""
    report = watch(ports, tick.now, forecast)
    if tick.scheduled:
        ports.ticks.advance_tick(WATCH_RUNNER, tick.tick)
    return report


def watch(ports: FailureWatchPorts, now: float, forecast: ForecastPorts | None = None) -> WatchReport:
    """One run of the scheduled watch (reconcile, predict, escalate, publish gauges) as of ``now``.

    Without ``forecast`` no start is predicted (and a wait alert carries no prediction).
    """
    report = WatchReport()
    reconcile(ports, report, now)
    still_open = reconcile_training(ports, report)
    jobs = {status: ports.store.jobs(status.value) for status in ACTIVE_STATUSES}
    if forecast is not None:
        isolated(ports, report, "forecast", "all", partial(predict, forecast, jobs, ports, now, report))
    escalate(jobs[JobStatus.RUNNABLE], ports, now, report, forecast)
    isolated(ports, report, "gauges", "all", lambda: publish_gauges(jobs, ports, now))
    check_budgets(ports, now, report, still_open)
    return report


def reconcile_training(ports: FailureWatchPorts, report: WatchReport) -> list[OpenAttempt] | None:
    """Describe each training job still open in the table whose attempt Batch says is over (its job
    ended or waits again, or a later attempt of it started), and record it.

    Batch's events say the attempt ended; SageMaker's event for its training job may be lost, which
    would leave the attempt accruing forever and never billed. DescribeTrainingJob's answer goes
    through ``record_observation`` like the lost event would have (costed once, by the COST item's
    condition). Returns the attempts still open afterwards (None: they could not be read).
    """
    attempts = isolated(ports, report, "list", "open-training-jobs", ports.store.open_attempts)
    if attempts is None:
        return None
    still_open = []
    for attempt in attempts:
        job = attempt.job
        if job is not None and _attempt_over(job, attempt.training.training_job_arn):
            arn = attempt.training.training_job_arn
            final = isolated(
                ports, report, "reconcile", arn, partial(_reconcile_training_job, attempt, job, ports, report)
            )
            if final:
                continue
        still_open.append(attempt)
    return still_open


def _attempt_over(job: JobState, training_job_arn: str) -> bool:
    """Whether Batch says this attempt of ``job`` is over: the job ended, went back to waiting (a
    retry, a preemption: the job no longer holds the attempt's instances), or a later attempt started."""
    latest = job.latest_training_job_arn
    return job.status not in _HOLDING or (latest is not None and latest != training_job_arn)


def _reconcile_training_job(
    attempt: OpenAttempt, job: JobState, ports: FailureWatchPorts, report: WatchReport
) -> bool:
    """Record what SageMaker says of one open training job; True when it is final now."""
    state = attempt.training
    observed = ports.training.observe(state.training_job_name or arn_tail(state.training_job_arn))
    if observed is None:
        logger.warning("training job unknown to SageMaker", extra={"trainingJobArn": state.training_job_arn})
        return False
    # Under the ARN the table holds: the job was asked for by its name, and is this one.
    observed = replace(observed, training_job_arn=state.training_job_arn)
    outcome = record_observation(observed, ports.store, ports.metrics, ports.config)
    report.training_reconciled += 1
    if outcome.decision is Decision.APPLY:
        report.training_repaired += 1
        ports.metrics.emit(
            [FailureMetricEvent("ReconcileRepairs", 1)],
            {"Queue": queue_name(job.job_queue)},
            {"trainingJobArn": state.training_job_arn, "jobArn": job.job_arn},
        )
    return observed.status.is_final


def check_budgets(
    ports: FailureWatchPorts, now: float, report: WatchReport, attempts: list[OpenAttempt] | None = None
) -> None:
    """Each budgeted team's month (billed plus what its running jobs accrued, the open attempts read
    once for all teams, or given): its thresholds alerted and its gauges published."""
    teams = sorted(ports.config.budgets)
    if not teams:
        return
    from .spend import team_months  # the budget step's alone

    months = isolated(
        ports,
        report,
        "budgets",
        "months",
        partial(team_months, ports.store, ports.config, teams, int(now * 1000), attempts),
    )
    for team in teams:
        if months is not None:
            isolated(ports, report, "budgets", team, partial(check_budget, months[team], ports, now, report))


def check_budget(month: TeamMonth, ports: FailureWatchPorts, now: float, report: WatchReport) -> None:
    """Alert each budget threshold the team's month has reached, once a month; gauge the month."""
    team = month.team
    budget = ports.config.budgets[team]
    status = budget_status(team, budget, month.billed_usd, now, month.accrued_usd)
    report.budgets[team] = status.as_dict()
    for threshold in crossed(status, budget):
        alert = budget_alert(status, threshold, ports.config)
        report.alerts += ports.sender.send(alert, now)
    ports.metrics.emit(
        [
            CostMetricEvent("BudgetUsedPercent", round(status.used * 100, 2), "Percent"),
            CostMetricEvent(
                "BudgetForecastPercent", round(status.forecast_usd / budget.monthly_usd * 100, 2), "Percent"
            ),
        ],
        {"Team": team, "Share": ports.config.teams[team].share},
        {"month": status.month},
    )


def predict(
    forecast: ForecastPorts,
    jobs: Mapping[JobStatus, list[JobState]],
    ports: FailureWatchPorts,
    now: float,
    report: WatchReport,
) -> None:
    """Forecast the waiting GPU jobs' starts and store each prediction on its job (one item each)."""
    from .start_predictions import predict_starts  # light; the forecast itself loads only if a job waits

    report.predictions = predict_starts(forecast, jobs, now)
    for job_arn, prediction in report.predictions.items():
        stored = isolated(
            ports, report, "forecast", job_arn, partial(forecast.store.save_prediction, job_arn, prediction)
        )
        report.predictions_stored += bool(stored)


def latest_prediction(
    job_arn: str, report: WatchReport, forecast: ForecastPorts | None
) -> StartPrediction | None:
    """The job's newest prediction: this run's, else an earlier tick's (None: never predicted)."""
    if job_arn in report.predictions:
        return report.predictions[job_arn]
    return forecast.store.load_prediction(job_arn) if forecast is not None else None


def escalate(
    runnable: list[JobState],
    ports: FailureWatchPorts,
    now: float,
    report: WatchReport,
    forecast: ForecastPorts | None = None,
) -> None:
    """Raise the priority of RUNNABLE service jobs past their tier's wait SLO, in bounded steps."""
    for job in runnable:
        isolated(
            ports, report, "escalate", job.job_arn, partial(_escalate_one, job, ports, now, report, forecast)
        )


def _escalate_one(
    job: JobState,
    ports: FailureWatchPorts,
    now: float,
    report: WatchReport,
    forecast: ForecastPorts | None = None,
) -> None:
    config = ports.config
    # Batch's own value when this run described the job: the table's can lag it, since a new
    # priority alone carries no newer time to order it by, and a lagging one would re-raise a job
    # already at its ceiling every run instead of letting it reach its wait alert.
    current = report.batch_priorities.get(job.job_arn, job.scheduling_priority)
    if not _is_service_job(job) or current is None or not job.job_id:
        return
    tier = config.tier_for_priority(current)
    if tier is None:
        return
    waited = now - (job.created_at or now * 1000) / 1000
    target = priority_escalation(current, tier, waited, config)
    if target > current:
        try:
            ports.batch.update_priority(job.job_id, target)
        except RejectedByServiceError as exc:  # finished meanwhile: the reconciler catches up
            logger.info("priority not raised", extra={"job_arn": job.job_arn, "why": exc.problem})
            return
        report.escalated[job.job_arn] = target
        at = int(now * 1000)
        ports.ledger.add_history(
            job.job_arn,
            HistoryEntry.note(
                ObservationKind.PRIORITY_ESCALATED,
                at=at,
                tag=f"{target:04d}",
                status=JobStatus.RUNNABLE,
                # The whole seconds the steps were counted from (rounding could name the next step's).
                reason=f"schedulingPriority {current} -> {target}: waited {math.floor(waited)}s, "
                f"{tier.value} wait SLO is {config.tiers[tier].wait_slo_seconds}s",
                digest=f"escalate:{target}",
            ),
            PriorityRaise(current, target),
        )
        ports.metrics.emit(
            [FailureMetricEvent("PriorityEscalations", 1)],
            {"Queue": queue_name(job.job_queue), "Tier": tier.value},
            {"jobArn": job.job_arn},
        )
    elif waited > WAIT_ALERT_SLOS * (slo := config.tiers[tier].wait_slo_seconds):
        prediction = latest_prediction(job.job_arn, report, forecast)
        alert = job_alert(
            AlertKind.WAIT_SLO,
            share=job.share or "none",
            queue=queue_name(job.job_queue),
            job_arn=job.job_arn,
            job_name=job.job_name,
            reason=f"RUNNABLE for {waited:.0f}s at schedulingPriority {current} (escalation stops at "
            f"{escalation_ceiling(tier, config)} for {tier.value}): "
            # Before Batch's reason: the alert keeps the first 200 characters of the reason.
            + (f"predicted start {prediction.in_words()}; " if prediction else "")
            + f"{job.status_reason or 'no reason given'}",
            facts={"waited_minutes": waited / 60, "tier": tier.value, "slo_minutes": slo // 60},
            extra={"prediction": prediction.as_record() if prediction else None},
            # The job's tier, also on a team's plain share (where the share alone names no tier), and
            # its team also when it has no share (a CPU FIFO job: its team tag, as the reconcile read it).
            team=report.teams.get(job.job_arn),
            tier=tier.value,
        )
        report.alerts += ports.sender.send(alert, now)


def reconcile(ports: FailureWatchPorts, report: WatchReport, now: float) -> None:
    """Repair the table from Batch: every active job Batch lists, and every active job the table has."""
    known: dict[str, JobState] = {}
    # By name: the config names the GPU queue, the table holds queue ARNs, and ListServiceJobs takes
    # either, so one queue under its two spellings would be listed, and its jobs reconciled, twice.
    queues: set[str] = {queue_name(ports.gpu_queue or ports.config.gpu_queue_name())}
    for status in ACTIVE_STATUSES:
        for job in ports.store.jobs(status.value):
            if _is_service_job(job):
                known[job.job_arn] = job
                if job.job_queue:
                    queues.add(queue_name(job.job_queue))
    seen: set[str] = set()
    for queue in sorted(queues):
        for status in ACTIVE_STATUSES:
            summaries = isolated(
                ports,
                report,
                "list",
                f"{queue_name(queue)}/{status.value}",
                partial(ports.batch.list_jobs, queue, status.value),
            )
            if summaries is None:  # not listed (a deleted queue, say): its table jobs are described below
                continue
            for summary in summaries:
                seen.add(summary.job_arn)
                isolated(
                    ports,
                    report,
                    "reconcile",
                    summary.job_arn,
                    partial(_record, summary.job_id, ports, report, now),
                )
    # Active in the table but not listed: finished (a missed event) or gone from Batch entirely.
    for job_arn, job in known.items():
        if job_arn in seen:
            continue
        isolated(
            ports,
            report,
            "reconcile",
            job_arn,
            partial(_reconcile_unlisted, job_arn, job, ports, report, now),
        )


def _reconcile_unlisted(
    job_arn: str, job: JobState, ports: FailureWatchPorts, report: WatchReport, now: float
) -> None:
    """A job the table has active that no listing returned: record what Batch says, or alert it is gone."""
    if not _record(job.job_id or job_id_of(job_arn), ports, report, now):
        report.unknown_to_batch.append(job_arn)
        ports.metrics.emit(
            [FailureMetricEvent("UnknownToBatch", 1)],
            {"Queue": queue_name(job.job_queue)},
            {"jobArn": job_arn},
        )
        alert = job_alert(
            AlertKind.UNKNOWN_TO_BATCH,
            share=job.share or "none",
            queue=queue_name(job.job_queue),
            job_arn=job_arn,
            job_name=job.job_name,
            reason=f"the jobs table says {job.status.value}; DescribeServiceJob does not know the job",
            facts={"status": job.status.value},
            team=None if job.share else submitted_team(ports.store, job_arn),
        )
        report.alerts += ports.sender.send(alert, now)


def _record(job_id: str, ports: FailureWatchPorts, report: WatchReport, now: float) -> bool:
    described = ports.batch.describe(job_id)
    if described is None:
        return False
    if described.scheduling_priority is not None:
        report.batch_priorities[described.job_arn] = described.scheduling_priority
    team = job_team(ports.config, described.share, described.tags)
    if team is not None:
        report.teams[described.job_arn] = team
    try:
        observation = reconciled_observation(described)
    except InvalidInputError as exc:
        logger.warning("unreadable DescribeServiceJob result", extra={"job_id": job_id, "error": str(exc)})
        return True
    outcome = record_observation(observation, ports.store, ports.metrics, ports.config)
    report.reconciled += 1
    if outcome.decision is Decision.APPLY:
        report.repaired += 1
        ports.metrics.emit(
            [FailureMetricEvent("ReconcileRepairs", 1)],
            {"Queue": queue_name(described.job_queue)},
            {"jobArn": described.job_arn},
        )
        if described.status == JobStatus.FAILED.value:
            # Decided at the failure's own time, as its lost event would have been; else at the tick's.
            failed_ms = described.latest_time_ms
            handle_failed_job(job_id, ports, failed_ms / 1000 if failed_ms is not None else now)
            report.failures_handled += 1
    return True


def publish_gauges(jobs: Mapping[JobStatus, list[JobState]], ports: FailureWatchPorts, now: float) -> None:
    """Runnable jobs and oldest wait per tier; instances in use per team against entitlement and capacity."""
    config = ports.config
    queue = ports.gpu_queue or config.gpu_queue_name()
    waiting: dict[tuple[str, Tier], list[float]] = defaultdict(list)
    for job in jobs.get(JobStatus.RUNNABLE, []):
        share = job.share
        tier = config.job_tier(share, job.scheduling_priority) or Tier.LOWPRI
        waiting[(queue_name(job.job_queue), tier)].append(now - (job.created_at or now * 1000) / 1000)
    for tier in Tier:
        waits = waiting.get((queue, tier), [])
        dims = {"Queue": queue, "Tier": tier.value}
        _gauge(ports, "RunnableJobs", len(waits), "Count", dims)
        _gauge(ports, "OldestWaitSeconds", max(waits, default=0.0), "Seconds", dims)
    # Per team: in the team_tier layout a team holds instances under one identifier per tier.
    in_use: dict[str, float] = defaultdict(float)
    for status in _HOLDING:
        for job in jobs.get(status, []):
            if queue_name(job.job_queue) == queue:
                share = job.share
                in_use[config.team_for_share(share) or "none"] += job.instance_count
    capacity = sum(t.capacity for t in config.instance_types.values())
    for name, team in config.teams.items():
        dims = {"Queue": queue, "Team": name}
        _gauge(ports, "InstancesInUse", in_use.pop(name, 0.0), "Count", dims)
        _gauge(ports, "InstancesEntitled", sum(team.entitlement.values()), "Count", dims)
    for other, count in in_use.items():  # shares the config does not name still hold instances
        _gauge(ports, "InstancesInUse", count, "Count", {"Queue": queue, "Team": other})
    total = sum(
        j.instance_count for s in _HOLDING for j in jobs.get(s, []) if queue_name(j.job_queue) == queue
    )
    _gauge(ports, "InstanceCapacity", capacity, "Count", {"Queue": queue})
    _gauge(ports, "Utilization", 100.0 * total / capacity if capacity else 0.0, "Percent", {"Queue": queue})


def _gauge(ports: FailureWatchPorts, name: str, value: float, unit: str, dims: Mapping[str, str]) -> None:
    ports.metrics.emit([FailureMetricEvent(name, value, unit)], dims, {})


def _is_service_job(job: JobState) -> bool:
    return ":service-job/" in job.job_arn
