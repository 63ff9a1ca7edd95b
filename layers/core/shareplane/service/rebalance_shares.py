"""Rebalance team shares on a schedule: read a snapshot, decide with ``plan_rebalance``, apply, audit.

One run per schedule tick:

1. **Snapshot.** What each share holds comes from Batch itself (GetJobQueueSnapshot's utilization,
   per fair-share identifier or per quota share). What waits comes from the jobs table: one query of
   the ByStatus index for RUNNABLE jobs gives every waiting job with its share, instance count,
   instance type and schedulingPriority (hence its tier). ListServiceJobs would need a call per share
   and page, against Batch's low per-account API rate that the submit path shares, and its summaries
   carry neither the priority nor the instance type, so tiers would cost a DescribeServiceJob per job.
   Each tier's raw waits also come from the table (jobs that first started in the last window,
   createdAt -> first start, and the ages of jobs still RUNNABLE); the domain's
   ``snapshot_from_observation`` turns them and the rest into the ``ShareSnapshot``, by the same rule
   the what-if simulator uses. Weights (DescribeSchedulingPolicies) or quota settings
   (ListQuotaShares, which carries every setting) are read from Batch; the ledger, decayed usage and
   the last applied plan come from the ``SHARES``/``LEDGER`` item.
2. **Decide** with ``plan_rebalance`` (pure).
3. **Apply** only a non-empty plan, and only in ``apply`` mode outside dry run: the audit record and
   the new state go in one conditional transaction first (a re-delivered tick finds its tick already
   done and applies nothing), then UpdateSchedulingPolicy or UpdateQuotaShare, then the record turns
   APPLIED. A run that dies between the write and the Batch call leaves the record PENDING; the
   tick's redelivery re-applies that record's ``after`` values (absolute settings, so applying twice
   is harmless).
   In ``advisory`` mode (``rebalance.mode``, the default) a non-empty plan is recorded ADVISORY, as a
   dry run records DRY_RUN, and the ledger and usage carry forward; the tier charge, the team_tier
   layout's rule rather than the rebalancer's judgement, is applied in both modes. A dry run
   (REBALANCE_DRY_RUN) changes nothing at all, whatever the mode.

A run decides at its tick's time (the Scheduled Event's ``time``, as ``tick_time`` reads it), never at
the clock's: cooldown, ledger and usage intervals, wait windows and the audit's timestamps are all
measured from it, so a redelivered tick plans and audits exactly as its first delivery did, and on
the local stack (whose emulator stamps ticks and jobs with a sped-up virtual clock) they run in the
same time as the jobs. Only ``rollback``, asked for by hand with no tick, is dated by the clock.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..domain.config.shares import RebalanceMode, SchedulingMode, SharesConfig, Tier
from ..domain.errors import ConcurrentUpdateError, InvalidInputError
from ..domain.instance_types.capacity import Capacity
from ..domain.jobs.arns import queue_name
from ..domain.jobs.lifecycle import GPUS_PER_INSTANCE, JobState, JobStatus
from ..domain.shares import fairshare
from ..domain.shares.batch_shares import (
    QueueUsage,
    QuotaShare,
    SchedulingPolicy,
    plan_to_update_quota_share_requests,
    plan_to_update_scheduling_policy,
)
from ..domain.shares.metrics import ShareMetricEvent
from ..domain.shares.observation import (
    QueueObservation,
    ShareObservation,
    TierObservation,
    instances_held,
    snapshot_from_observation,
)
from ..domain.shares.ownership import Ownership, baseline_settings, reconcile, record_applied
from ..domain.shares.rebalance import (
    REASON_COOLDOWN,
    REASON_DEADBAND,
    REASON_NO_CAPACITY,
    REASON_NO_DEMAND,
    QuotaSettings,
    RebalancePlan,
    ShareChange,
    ShareSnapshot,
    identifier_plan,
    plan_rebalance,
    rollback_plan,
    team_weights,
    weight_factor,
)
from ..domain.shares.state import LatestRun, PlanAudit, PlanRef, ShareAccount, SharesState
from ..domain.shares.tier_charge import TeamTierUsage, charged_plain_weights
from ..schemas.scheduled import check_tick_lead
from .ports import MetricsSink, SharesBatch, ShareStore

logger = logging.getLogger(__name__)

#: Two runs racing on the state item are rare (one schedule, one queue); a re-read settles them.
MAX_CONFLICT_RETRIES = 3
NUM_INSTANCES = "NUM_INSTANCES"
#: GetJobQueueSnapshot lists at most this many shares by usage; shares below it are counted from the table.
SNAPSHOT_TOP_SHARES = 20
DISPATCHED = (JobStatus.SCHEDULED, JobStatus.STARTING, JobStatus.RUNNING)

#: The Reason values of PlansSkipped.
SKIP_REASONS = {
    REASON_COOLDOWN: "cooldown",
    REASON_DEADBAND: "deadband",
    REASON_NO_DEMAND: "no_demand",
    REASON_NO_CAPACITY: "no_capacity",
}
SKIP_DRY_RUN = "dry_run"
#: The action (and PlansSkipped Reason) of a plan recorded in advisory mode, and its audit status.
ADVISORY = "advisory"
STATUS_ADVISORY = "ADVISORY"
SKIP_DUPLICATE_TICK = "duplicate_tick"
ALREADY_RECORDED = "the tick's plan is recorded already"


@dataclass(frozen=True)
class RebalanceSettings:
    """Which queue to rebalance, and how (from the function's environment)."""

    job_queue: str  # name or ARN
    scheduling_policy_arn: str | None = None  # fair-share; None: read it from the queue
    dry_run: bool = False
    #: Jobs that first started this recently make up a tier's wait p90.
    wait_window_seconds: int = 3600


@dataclass(frozen=True)
class RebalancePorts:
    """Everything a scheduled run talks to; built once per cold start by bootstrap."""

    config: SharesConfig
    settings: RebalanceSettings
    batch: SharesBatch
    store: ShareStore
    metrics: MetricsSink


@dataclass(frozen=True)
class RebalanceOutcome:
    """What one run did, for logs and tests."""

    tick_id: str
    action: str  # applied | restored | replayed | advisory | dry_run | skipped | duplicate_tick
    reason: str
    plan_id: str | None = None
    plan: RebalancePlan | None = None


@dataclass(frozen=True)
class Observed:
    """The snapshot and what was measured beside it (actual and waiting instances per share)."""

    snapshot: ShareSnapshot
    actual: Mapping[str, float]
    waiting: Mapping[str, float]
    settings: Mapping[str, Any] = field(default_factory=dict)  # share -> current audit-shaped setting
    tier_usage: Mapping[str, TeamTierUsage] = field(default_factory=dict)  # team_tier layout only


# ---------------------------------------------------------------------------------------------
# Snapshot


def _unit_of(job: JobState, share: str, config: SharesConfig) -> str:
    """The GPU instance type a job's instances count against (fair-share reports NUM_INSTANCES)."""
    types = config.instance_types
    for usage in job.capacity_usage:
        if usage.unit in types:
            return usage.unit
    if job.instance_type in types:
        return str(job.instance_type)
    return _main_type(share, config)


def _main_type(share: str, config: SharesConfig) -> str:
    # One GPU type (the common case) is exact; otherwise the team's largest entitlement is the best
    # guess for usage Batch reports in NUM_INSTANCES.
    types = sorted(config.instance_types)
    if len(types) == 1:
        return types[0]
    team = config.teams.get(config.team_for_share(share) or "")
    if team and team.entitlement:
        return max(sorted(team.entitlement), key=lambda t: team.entitlement[t])
    return types[0]


def _instances(job: JobState) -> int:
    # A job without capacityUsage yet still wants at least one instance.
    return max(1, math.ceil(job.instance_count)) if job.instance_count else 1


def _share_of(job: JobState, config: SharesConfig) -> str | None:
    """The team share a job counts against: the rebalancer plans per team, whatever the layout."""
    return _team_share(config, job.share)


def _team_share(config: SharesConfig, identifier: str | None) -> str | None:
    # team_tier: ProdExp1HIGHPRI -> ProdExp1, by the config's mapping (never by parsing the name).
    team = config.teams.get(config.team_for_share(identifier) or "")
    return team.share if team else identifier


def _in_queue(job: JobState, queue: str) -> bool:
    return job.job_queue is not None and queue_name(job.job_queue) == queue_name(queue)


def tier_in_use(config: SharesConfig, dispatched: Iterable[JobState]) -> dict[str, tuple[float, float]]:
    """Per team share: instances its jobs hold now on own-tier identifiers, and on its plain identifier."""
    held: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for job in dispatched:
        key = config.share_key(job.share_identifier)
        if key is None:
            continue
        held[config.teams[key.team].share][0 if key.tier else 1] += _instances(job)
    return {share: (own, plain) for share, (own, plain) in held.items()}


def tier_observations(
    config: SharesConfig, started: Iterable[JobState], waiting: Iterable[JobState], now: float, window: int
) -> dict[Tier, TierObservation]:
    """Each tier's raw waits from the table: first-start waits in the window, ages of jobs still waiting.

    The p90 rule itself (``share_observation.tier_wait``) is the domain's, shared with the simulator.
    """
    since_ms = (now - window) * 1000
    done: dict[Tier, list[float]] = defaultdict(list)
    ages: dict[Tier, list[float]] = defaultdict(list)
    for job in started:
        tier = config.tier_for_priority(job.scheduling_priority)
        if tier and job.first_started_at and job.created_at and job.first_started_at >= since_ms:
            done[tier].append(max(0, job.first_started_at - job.created_at) / 1000)
    for job in waiting:
        tier = config.tier_for_priority(job.scheduling_priority)
        if tier and job.created_at and job.first_started_at is None:
            ages[tier].append(max(0.0, now - job.created_at / 1000))
    return {
        tier: TierObservation(
            slo_seconds=float(tier_config.wait_slo_seconds),
            recent_waits=tuple(sorted(done[tier])),
            waiting_ages=tuple(sorted(ages[tier])),
        )
        for tier, tier_config in config.tiers.items()
    }


def snapshot_in_use(
    usage: QueueUsage, mode: SchedulingMode, config: SharesConfig
) -> tuple[dict[str, Capacity], bool]:
    """Instances each share holds per instance type, and whether the list may be cut at the top 20."""
    top = usage.top(mode)
    held: dict[str, Capacity] = defaultdict(Capacity)
    listed: dict[str, set[str]] = defaultdict(set)
    for entry in top:
        share = _team_share(config, entry.identifier or None)
        if not share:
            continue
        listed[share].add(entry.identifier)
        for unit, quantity in entry.capacity.units.items():
            if unit not in config.instance_types:
                if unit != NUM_INSTANCES:
                    continue  # a CPU type or an instance type the config does not manage
                unit = _main_type(share, config)
            held[share] = held[share].plus(unit, quantity)
    cut = len(top) >= SNAPSHOT_TOP_SHARES
    if cut and config.tiered_shares:
        # A team with some identifiers below the top 20 would be undercounted: the table counts it whole.
        for name, team in config.teams.items():
            mine = {i for i, k in config.share_keys.items() if k.team == name}
            if listed.get(team.share) and not mine <= listed[team.share]:
                held.pop(team.share, None)
    return dict(held), cut


def current_weights(policy: SchedulingPolicy) -> list[fairshare.ShareWeight]:
    """A scheduling policy's shareDistribution."""
    return list(policy.weights)


def observe(
    config: SharesConfig,
    settings: RebalanceSettings,
    batch: SharesBatch,
    store: ShareStore,
    state: SharesState | None,
    now: float,
) -> Observed:
    """Read everything the policy may look at and freeze it into a ``ShareSnapshot``."""
    queue = settings.job_queue
    shares = sorted({team.share for team in config.teams.values()})
    in_use, cut = snapshot_in_use(batch.get_job_queue_snapshot(queue), config.mode, config)
    jobs = _queue_jobs(config, settings, store, now)
    if cut:
        _count_shares_below_the_top(in_use, jobs.dispatched, shares, config)
    waiting = _waiting(jobs.runnable, shares, config)
    tiers = tier_observations(
        config,
        [*jobs.dispatched, *jobs.finished, *jobs.runnable],
        jobs.runnable,
        now,
        settings.wait_window_seconds,
    )
    current = _current_share_settings(config, settings, batch, shares)
    previous = state or SharesState(version=0)
    elapsed = now - (previous.usage_as_of or now)
    window = fairshare.decay_window(config.fairshare.share_decay_seconds)
    tier_usage = _tier_usage(config, previous, current.shares, jobs.dispatched, elapsed, window)
    observed = [
        _share_observation(config, share, current, in_use, waiting, previous, elapsed, window)
        for share in current.shares
    ]
    snapshot = snapshot_from_observation(
        QueueObservation(
            now=now,
            mode=config.mode,
            capacity={t: c.capacity for t, c in config.instance_types.items()},
            shares=tuple(observed),
            tiers=tiers,
            last_applied_at=previous.last_applied_at,
            ledger_as_of=previous.ledger_as_of,
            gpus_per_instance={t: GPUS_PER_INSTANCE.get(t, 1) for t in config.instance_types},
        )
    )
    return Observed(
        snapshot=snapshot,
        actual={s.name: float(sum(s.in_use.values())) for s in snapshot.shares},
        waiting={s.name: float(sum(waiting.instances.get(s.name, {}).values())) for s in snapshot.shares},
        settings={o.name: o.weight_factor if o.quota is None else o.quota.to_dict() for o in observed},
        tier_usage=tier_usage,
    )


@dataclass(frozen=True)
class _QueueJobs:
    """The queue's jobs as the table holds them: waiting, dispatched, and finished in the wait window."""

    runnable: list[JobState]
    dispatched: list[JobState]
    finished: list[JobState]


def _queue_jobs(
    config: SharesConfig, settings: RebalanceSettings, store: ShareStore, now: float
) -> _QueueJobs:
    queue = settings.job_queue
    runnable = [j for j in store.jobs_in_status(JobStatus.RUNNABLE.value) if _in_queue(j, queue)]
    dispatched = [
        j for status in DISPATCHED for j in store.jobs_in_status(status.value) if _in_queue(j, queue)
    ]
    # Finished jobs old enough to have waited past every SLO inside the window still count.
    max_slo = max(t.wait_slo_seconds for t in config.tiers.values())
    after_ms = int((now - settings.wait_window_seconds - 2 * max_slo) * 1000)
    finished = [
        j
        for status in (JobStatus.SUCCEEDED, JobStatus.FAILED)
        for j in store.jobs_in_status(status.value, created_after_ms=after_ms)
        if _in_queue(j, queue)
    ]
    return _QueueJobs(runnable, dispatched, finished)


def _count_shares_below_the_top(
    in_use: dict[str, Capacity], dispatched: Iterable[JobState], shares: list[str], config: SharesConfig
) -> None:
    """Shares below the snapshot's top 20 are missing from it; the table knows what they run."""
    from_batch = set(in_use)
    for job in dispatched:
        share = _share_of(job, config)
        if share in shares and share not in from_batch:
            unit = _unit_of(job, share, config)
            in_use[share] = in_use.get(share, Capacity()).plus(unit, _instances(job))


@dataclass(frozen=True)
class _Waiting:
    """Instances waiting per share: by instance type (or unit), and by tier."""

    instances: Mapping[str, Mapping[str, int]]
    by_tier: Mapping[str, Mapping[Tier, int]]


def _waiting(runnable: Iterable[JobState], shares: list[str], config: SharesConfig) -> _Waiting:
    waiting: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    waiting_tiers: dict[str, dict[Tier, int]] = defaultdict(lambda: defaultdict(int))
    for job in runnable:
        share = _share_of(job, config)
        if share not in shares:
            continue
        waiting[share][_unit_of(job, share, config)] += _instances(job)
        tier = config.tier_for_priority(job.scheduling_priority)
        if tier:
            waiting_tiers[share][tier] += _instances(job)
    return _Waiting(waiting, waiting_tiers)


@dataclass(frozen=True)
class _ShareSettings:
    """What Batch holds for the shares now: fair-share weights, or quota shares (and the shares with one)."""

    shares: list[str]
    weights: list[fairshare.ShareWeight]
    quota: Mapping[str, QuotaShare]


def _current_share_settings(
    config: SharesConfig, settings: RebalanceSettings, batch: SharesBatch, shares: list[str]
) -> _ShareSettings:
    queue = settings.job_queue
    if config.mode is SchedulingMode.FAIRSHARE:
        arn = settings.scheduling_policy_arn or batch.scheduling_policy_of(queue)
        if not arn:
            raise InvalidInputError(
                "JOB_QUEUE", f"{queue} has no scheduling policy", "use a fair-share queue"
            )
        weights = team_weights(config, current_weights(batch.describe_scheduling_policy(arn)))
        return _ShareSettings(shares, weights, {})
    quota = {q.name: q for q in batch.list_quota_shares(queue)}
    missing = [s for s in shares if s not in quota]
    if missing:
        logger.warning("teams without a quota share are left out", extra={"shares": missing})
    return _ShareSettings([s for s in shares if s in quota], [], quota)


def _tier_usage(
    config: SharesConfig,
    previous: SharesState,
    shares: list[str],
    dispatched: Iterable[JobState],
    elapsed: float,
    window: float,
) -> dict[str, TeamTierUsage]:
    """Each team's usage split between its own-share tiers and the rest (team_tier layout only)."""
    if not config.tiered_shares:
        return {}
    held_by_tier = tier_in_use(config, dispatched)
    tier_usage = {}
    for share in shares:
        before = previous.account(share).tier_usage or TeamTierUsage()
        own, plain = held_by_tier.get(share, (0.0, 0.0))
        tier_usage[share] = before.accrue(own, plain, elapsed, window)
    return tier_usage


def _share_observation(
    config: SharesConfig,
    share: str,
    current: _ShareSettings,
    in_use: Mapping[str, Capacity],
    waiting: _Waiting,
    previous: SharesState,
    elapsed: float,
    window: float,
) -> ShareObservation:
    """One share as observed now: entitlement, what it holds and waits for, its decayed usage."""
    team = config.teams[config.team_for_share(share) or ""]
    weight = fairshare.weight_for(share, current.weights) if config.mode is SchedulingMode.FAIRSHARE else None
    held = in_use.get(share, Capacity())
    rate = sum(instances_held(held.units).values()) * (weight or 1.0)
    quota = current.quota.get(share)
    return ShareObservation(
        name=share,
        entitlement=dict(team.entitlement),
        in_use=held.as_dict(),
        waiting=dict(waiting.instances.get(share, {})),
        waiting_by_tier=dict(waiting.by_tier.get(share, {})),
        usage_history=fairshare.accrue(previous.account(share).usage, rate, elapsed, window),
        ledger_balance=previous.account(share).balance,
        weight_factor=weight,
        quota=quota.settings if quota is not None else None,
        quota_share_arn=quota.arn if quota is not None else None,
    )


# ---------------------------------------------------------------------------------------------
# Apply, audit, state


def plan_id_for(*parts: str) -> str:
    """A stable id from what identifies a plan (queue and tick): the same tick gets the same id."""
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def apply_plan(
    plan: RebalancePlan, batch: SharesBatch, settings: RebalanceSettings, config: SharesConfig | None = None
) -> int:
    """Send a plan to Batch; returns the number of update calls (0 for an empty plan).

    With a team_tier ``config``, each team's weight goes to every identifier of the team, times its
    tier's multiplier.
    """
    if plan.is_empty:
        return 0
    if plan.mode is SchedulingMode.FAIRSHARE:
        arn = settings.scheduling_policy_arn or batch.scheduling_policy_of(settings.job_queue)
        if not arn:
            raise InvalidInputError("JOB_QUEUE", "has no scheduling policy", "use a fair-share queue")
        per_identifier = identifier_plan(plan, config) if config is not None else plan
        batch.update_scheduling_policy(
            plan_to_update_scheduling_policy(per_identifier, batch.describe_scheduling_policy(arn))
        )
        return 1
    updates = plan_to_update_quota_share_requests(plan)
    for update in updates:
        batch.update_quota_share(update)
    return len(updates)


def audit_record(
    plan: RebalancePlan,
    *,
    plan_id: str,
    tick_id: str,
    queue: str,
    status: str,
    kind: str = "plan",
    observed: Observed | None = None,
    rollback_of: str | None = None,
) -> PlanAudit:
    """The audit record of a plan: the whole plan (before, after and why of every share it moves)."""
    return PlanAudit(
        plan_id=plan_id,
        tick_id=tick_id,
        kind=kind,
        status=status,
        queue=queue_name(queue),
        plan=plan,
        actual=dict(observed.actual) if observed is not None else None,
        waiting=dict(observed.waiting) if observed is not None else None,
        rollback_of=rollback_of or None,
    )


def next_state(
    state: SharesState | None,
    observed: Observed,
    plan: RebalancePlan,
    *,
    queue: str,
    tick_id: str,
    plan_id: str,
    now: float,
    applied: bool,
    dry_run: bool,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> SharesState:
    """The state after this run: ledger and usage carried forward, the latest targets and actuals.

    ``overrides`` (when given) replaces the record of the values the rebalancer holds in force over
    the template's baseline (``share_ownership``).
    """
    previous = state or SharesState(version=0)
    snapshot = observed.snapshot
    return replace(
        previous,
        queue=queue_name(queue),
        mode=plan.mode,
        version=previous.version + 1,
        ledger_as_of=plan.ledger_as_of,
        usage_as_of=now,
        shares={
            s.name: ShareAccount(
                balance=plan.ledger[s.name].balance if s.name in plan.ledger else s.ledger_balance,
                usage=s.usage_history,
                tier_usage=observed.tier_usage.get(s.name),
            )
            for s in snapshot.shares
        },
        last_tick=tick_id,
        latest=LatestRun(
            at=now,
            tick_id=tick_id,
            plan_id=plan_id,
            reason=plan.reason,
            applied=applied,
            dry_run=dry_run,
            targets=dict(plan.targets),
            actual=dict(observed.actual),
            waiting=dict(observed.waiting),
            why={c.share: c.why for c in plan.changes},
        ),
        last_applied_at=now if applied else previous.last_applied_at,
        last_plan=PlanRef(plan.created_at, plan_id) if applied else previous.last_plan,
        overrides=dict(overrides) if overrides is not None else previous.overrides,
    )


def apply_tier_charge(
    config: SharesConfig, settings: RebalanceSettings, batch: SharesBatch, observed: Observed
) -> dict[str, float]:
    """Re-weigh each team's plain identifier to team weight x its tier charge; returns what moved.

    Runs after the plan (which writes team weight x tier multiplier to every identifier), on the
    policy as it is now. Nothing happens in a dry run, or outside the team_tier layout.
    """
    if not observed.tier_usage or settings.dry_run:
        return {}
    arn = settings.scheduling_policy_arn or batch.scheduling_policy_of(settings.job_queue)
    if not arn:
        raise InvalidInputError("JOB_QUEUE", "has no scheduling policy", "use a fair-share queue")
    policy = batch.describe_scheduling_policy(arn)
    live = current_weights(policy)
    teams = {w.share_identifier: w.weight_factor for w in team_weights(config, live)}
    plain = {share: fairshare.weight_for(share, live) for share in observed.tier_usage}
    moved = charged_plain_weights(teams, plain, observed.tier_usage)
    if moved:
        changes = tuple(
            ShareChange(share, plain[share], after, f"tier charge x{observed.tier_usage[share].charge:.3f}")
            for share, after in moved.items()
        )
        plan = RebalancePlan(observed.snapshot.now, SchedulingMode.FAIRSHARE, changes, "tier charge")
        batch.update_scheduling_policy(plan_to_update_scheduling_policy(plan, policy))
        logger.info("tier charge applied", extra={"weights": moved})
    return moved


def ownership(config: SharesConfig, state: SharesState | None, observed: Observed, now: float) -> Ownership:
    """What a stack update reset and the run restores first, from the state's overrides and Batch now."""
    live = {
        s.name: (s.quota if config.mode is SchedulingMode.QUOTA else s.weight_factor)
        for s in observed.snapshot.shares
    }
    # Overrides recorded in the other mode belong to a queue that no longer exists (a queue's policy
    # type is fixed, so a mode switch is a new queue): nothing of theirs is restored.
    recorded = state or SharesState(version=0)
    same_mode = recorded.mode is None or recorded.mode is config.mode
    overrides = (recorded.overrides or {}) if same_mode else {}
    let_go: dict[str, str] = {}
    if config.rebalance.mode is RebalanceMode.ADVISORY:
        # An advisory rebalancer holds no value in force: what a stack update or a person sets stands,
        # and the values an earlier apply mode left are let go (planning starts from what Batch holds).
        let_go = {share: "advisory mode holds no value in force" for share in overrides}
        overrides = {}
    owned = reconcile(
        now=now,
        mode=config.mode,
        overrides=overrides,
        live={share: value for share, value in live.items() if value is not None},
        baseline=baseline_settings(config),
        quota_share_arns={s.name: s.quota_share_arn for s in observed.snapshot.shares if s.quota_share_arn},
        ledger_as_of=recorded.ledger_as_of,
    )
    return replace(owned, dropped={**let_go, **owned.dropped}) if let_go else owned


def _emit(
    metrics: MetricsSink,
    queue: str,
    observed: Observed | None,
    plan: RebalancePlan | None,
    applied: bool,
    skip_reason: str | None,
    plan_id: str | None,
    config: SharesConfig | None = None,
) -> None:
    name = queue_name(queue)
    properties = {"planId": plan_id} if plan_id else {}
    if observed is not None and plan is not None:
        for change in plan.changes:
            setting = change.after if applied else change.before
            events = [
                ShareMetricEvent("TargetInstances", float(plan.targets.get(change.share, 0.0)), "Count"),
                ShareMetricEvent("ActualInstances", float(observed.actual.get(change.share, 0.0)), "Count"),
            ]
            if isinstance(setting, QuotaSettings):
                events.append(ShareMetricEvent("BorrowLimit", float(setting.borrow_limit), "None"))
            else:
                events.append(ShareMetricEvent("WeightFactor", float(setting), "None"))
            team = (config.team_for_share(change.share) if config else None) or change.share
            metrics.emit(events, {"Queue": name, "Team": team}, properties)
    if applied:
        metrics.emit([ShareMetricEvent("PlansApplied", 1, "Count")], {"Queue": name}, properties)
    elif skip_reason:
        metrics.emit(
            [ShareMetricEvent("PlansSkipped", 1, "Count")], {"Queue": name, "Reason": skip_reason}, properties
        )


def skip_reason(plan: RebalancePlan) -> str:
    """The PlansSkipped Reason of an empty plan (one of a fixed few)."""
    head = plan.reason.split(":", 1)[0]
    return SKIP_REASONS.get(head, "unchanged")


# ---------------------------------------------------------------------------------------------
# Use cases


def rebalance_tick(tick_id: str, now: float, ports: RebalancePorts, *, clock_now: float) -> RebalanceOutcome:
    """The schedule's run for one tick, through the ports the composition root builds.

    ``now`` is the tick's time (decisions), ``clock_now`` the receiving Lambda's clock (it only bounds
    how far ahead of it a tick may be dated): see ``rebalance_shares``.
    """
    return rebalance_shares(
        tick_id,
        now,
        ports.config,
        ports.settings,
        ports.batch,
        ports.store,
        ports.metrics,
        clock_now=clock_now,
    )


def rebalance_shares(
    tick_id: str,
    now: float,
    config: SharesConfig,
    settings: RebalanceSettings,
    batch: SharesBatch,
    store: ShareStore,
    metrics: MetricsSink,
    *,
    clock_now: float | None = None,
) -> RebalanceOutcome:
    """One scheduled run at ``now`` (its tick's time): snapshot, decide, apply once per tick (or record).

    With ``clock_now`` (the receiving Lambda's clock), a tick dated ahead of it is refused before it
    can move the watermark (``check_tick_lead``).
    """
    if clock_now is not None:
        check_tick_lead(now, clock_now)
    plan_id = plan_id_for(queue_name(settings.job_queue), tick_id)
    for _ in range(MAX_CONFLICT_RETRIES):
        state = store.load_state()
        last_tick = state.last_tick if state is not None else None
        if state is not None and last_tick is not None and tick_id <= last_tick:
            return _redelivered(tick_id, state, batch, store, metrics, settings, config)
        outcome = _run_over(state, tick_id, plan_id, now, config, settings, batch, store, metrics)
        if outcome is not None:
            return outcome
    raise ConcurrentUpdateError(f"tick {tick_id}: shares state contended after {MAX_CONFLICT_RETRIES} reads")


def _plan_or_restore(
    owned: Ownership, state: SharesState | None, observed: Observed, config: SharesConfig
) -> tuple[RebalancePlan, str]:
    """This tick's plan and its kind: a restore of what a stack update reset, else a new plan."""
    # A share a stack update put back to its baseline gets the rebalancer's value first; planning
    # resumes at the next tick, from the restored values.
    if owned.restore.is_empty:
        return plan_rebalance(observed.snapshot, config), "plan"
    # A restore keeps the last plan's targets (its metrics and state show them, not zeros).
    last_targets = state.latest.targets if state is not None and state.latest is not None else {}
    return replace(owned.restore, targets=dict(last_targets)), "restore"


def _run_over(
    state: SharesState | None,
    tick_id: str,
    plan_id: str,
    now: float,
    config: SharesConfig,
    settings: RebalanceSettings,
    batch: SharesBatch,
    store: ShareStore,
    metrics: MetricsSink,
) -> RebalanceOutcome | None:
    """Observe, plan and apply once over ``state``; None when another writer changed it first."""
    queue = settings.job_queue
    version = state.version if state is not None else None
    observed = observe(config, settings, batch, store, state, now)
    owned = ownership(config, state, observed, now)
    if owned.dropped:
        logger.info("overrides let go", extra={"tick": tick_id, "dropped": owned.dropped})
    plan, kind = _plan_or_restore(owned, state, observed, config)
    try:
        if plan.is_empty or settings.dry_run or config.rebalance.mode is RebalanceMode.ADVISORY:
            outcome = _record_only(
                tick_id,
                plan_id,
                now,
                state,
                version,
                observed,
                plan,
                settings,
                store,
                metrics,
                config,
                kind=kind,
                overrides=owned.overrides,
            )
            if outcome.action in ("skipped", ADVISORY):
                apply_tier_charge(config, settings, batch, observed)
            return outcome
        audit = audit_record(
            plan,
            plan_id=plan_id,
            tick_id=tick_id,
            queue=queue,
            status="PENDING",
            kind=kind,
            observed=observed,
        )
        new_state = next_state(
            state,
            observed,
            plan,
            queue=queue,
            tick_id=tick_id,
            plan_id=plan_id,
            now=now,
            applied=True,
            dry_run=False,
            overrides=record_applied(owned.overrides, plan, baseline_settings(config)),
        )
        if not store.begin_plan(audit, new_state, version):
            _emit(metrics, queue, None, None, False, SKIP_DUPLICATE_TICK, plan_id)
            return RebalanceOutcome(tick_id, SKIP_DUPLICATE_TICK, ALREADY_RECORDED, plan_id)
    except ConcurrentUpdateError:
        logger.info("shares state changed during the run; re-reading", extra={"tick": tick_id})
        return None
    calls = apply_plan(plan, batch, settings, config)
    store.mark_applied(audit, now)
    apply_tier_charge(config, settings, batch, observed)
    _emit(metrics, queue, observed, plan, True, None, plan_id, config)
    logger.info(
        "plan applied", extra={"tick": tick_id, "plan_id": plan_id, "calls": calls, "changes": audit.why}
    )
    return RebalanceOutcome(
        tick_id, "restored" if kind == "restore" else "applied", plan.reason, plan_id, plan
    )


def _record_only(
    tick_id: str,
    plan_id: str,
    now: float,
    state: SharesState | None,
    version: int | None,
    observed: Observed,
    plan: RebalancePlan,
    settings: RebalanceSettings,
    store: ShareStore,
    metrics: MetricsSink,
    config: SharesConfig,
    *,
    kind: str = "plan",
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> RebalanceOutcome:
    queue = settings.job_queue
    dry = settings.dry_run and not plan.is_empty
    # Advisory mode records a plan as a dry run does; a dry run changes nothing, whatever the mode.
    advisory = not plan.is_empty and not dry and config.rebalance.mode is RebalanceMode.ADVISORY
    new_state = next_state(
        state,
        observed,
        plan,
        queue=queue,
        tick_id=tick_id,
        plan_id=plan_id,
        now=now,
        applied=False,
        dry_run=dry,
        overrides=overrides,
    )
    if dry or advisory:
        # The plan is recorded as it would have been applied, so it can be reviewed (the audit trail
        # and `shareplane shares --plan` show what would have changed) before it is let apply.
        audit = audit_record(
            plan,
            plan_id=plan_id,
            tick_id=tick_id,
            queue=queue,
            status="DRY_RUN" if dry else STATUS_ADVISORY,
            kind=kind,
            observed=observed,
        )
        if not store.begin_plan(audit, new_state, version):
            _emit(metrics, queue, None, None, False, SKIP_DUPLICATE_TICK, plan_id)
            return RebalanceOutcome(tick_id, SKIP_DUPLICATE_TICK, ALREADY_RECORDED, plan_id)
        reason = SKIP_DRY_RUN if dry else ADVISORY
        message = "dry run: plan not applied" if dry else "advisory mode: plan recorded, not applied"
        logger.info(message, extra={"plan_id": plan_id, "changes": audit.why})
        action = reason
    else:
        store.save_state(new_state, version)
        reason = skip_reason(plan)
        action = "skipped"
    _emit(metrics, queue, observed, plan, False, reason, plan_id, config)
    return RebalanceOutcome(tick_id, action, plan.reason, plan_id, plan)


def _redelivered(
    tick_id: str,
    state: SharesState,
    batch: SharesBatch,
    store: ShareStore,
    metrics: MetricsSink,
    settings: RebalanceSettings,
    config: SharesConfig | None = None,
) -> RebalanceOutcome:
    """A tick seen before: finish its plan if the Batch call never happened, else do nothing."""
    last = state.last_plan
    if tick_id == state.last_tick and last is not None:
        record = store.audit_at(last.created_at, last.plan_id)
        # Only this tick's own plan: an advisory or skipped tick leaves last_plan at an older one.
        if record is not None and record.status == "PENDING" and record.tick_id == tick_id:
            plan = record.plan
            apply_plan(plan, batch, settings, config)
            store.mark_applied(record, state.usage_as_of or plan.created_at)
            metrics.emit(
                [ShareMetricEvent("PlansApplied", 1, "Count")],
                {"Queue": queue_name(settings.job_queue)},
                {"planId": last.plan_id},
            )
            return RebalanceOutcome(tick_id, "replayed", plan.reason, last.plan_id, plan)
    _emit(metrics, settings.job_queue, None, None, False, SKIP_DUPLICATE_TICK, None)
    done = f"tick already handled (last {state.last_tick})"
    return RebalanceOutcome(tick_id, SKIP_DUPLICATE_TICK, done)


def current_settings(
    mode: SchedulingMode, settings: RebalanceSettings, batch: SharesBatch
) -> dict[str, tuple[float | QuotaSettings, str | None]]:
    """Every share's setting in Batch now: weightFactor entries, or quota settings and ARN."""
    if mode is SchedulingMode.FAIRSHARE:
        arn = settings.scheduling_policy_arn or batch.scheduling_policy_of(settings.job_queue)
        if not arn:
            raise InvalidInputError("JOB_QUEUE", "has no scheduling policy", "use a fair-share queue")
        policy = batch.describe_scheduling_policy(arn)
        return {w.share_identifier: (w.weight_factor, None) for w in current_weights(policy)}
    return {q.name: (q.settings, q.arn) for q in batch.list_quota_shares(settings.job_queue)}


def rollback(
    plan_id: str,
    now: float,
    settings: RebalanceSettings,
    batch: SharesBatch,
    store: ShareStore,
    config: SharesConfig | None = None,
) -> RebalanceOutcome:
    """Restore the ``before`` values of an audited plan, through the same adapter, with its own audit.

    Plans are per team; with a team_tier ``config`` the team weights are read from and written to the
    team's identifiers.
    """
    record = store.audit(plan_id)
    if record is None:
        raise InvalidInputError(
            "--rollback",
            f"no audit record has plan id {plan_id!r}",
            "pick an id from `shareplane shares --history`",
        )
    plan = rollback_plan(record.plan.to_audit(), now=now)
    mode = plan.mode
    current = current_settings(mode, settings, batch)
    fairshare_weights = (
        [fairshare.ShareWeight(k, weight_factor(v)) for k, (v, _) in current.items()]
        if mode is SchedulingMode.FAIRSHARE
        else []
    )
    if config is not None and mode is SchedulingMode.FAIRSHARE:
        fairshare_weights = team_weights(config, fairshare_weights)

    def now_value(change: ShareChange) -> float | QuotaSettings:
        if mode is SchedulingMode.FAIRSHARE:
            return fairshare.weight_for(change.share, fairshare_weights)
        return current[change.share][0] if change.share in current else change.before

    # "before" is what Batch holds now (someone may have changed it since the audited plan).
    plan = replace(plan, changes=tuple(replace(c, before=now_value(c)) for c in plan.changes))
    rollback_id = plan_id_for(queue_name(settings.job_queue), "rollback", record.plan_id, f"{now:.3f}")
    if plan.is_empty:
        return RebalanceOutcome("rollback", "skipped", "Batch already holds the audited plan's before values")
    audit = audit_record(
        plan,
        plan_id=rollback_id,
        tick_id="rollback",
        queue=settings.job_queue,
        status="PENDING",
        kind="rollback",
        rollback_of=record.plan_id,
    )
    state = store.load_state()
    new_state = None
    version = None
    if state is not None:
        version = state.version
        # An explicit restore starts the cooldown, so the next tick does not undo it at once.
        new_state = replace(
            state, version=version + 1, last_applied_at=now, last_plan=PlanRef(plan.created_at, rollback_id)
        )
        if config is not None:
            # The restored values are the rebalancer's now: a stack update that resets them is undone too.
            new_state = replace(
                new_state, overrides=record_applied(state.overrides or {}, plan, baseline_settings(config))
            )
    store.begin_plan(audit, new_state, version)
    apply_plan(plan, batch, settings, config)
    store.mark_applied(audit, now)
    return RebalanceOutcome("rollback", "applied", plan.reason, rollback_id, plan)
