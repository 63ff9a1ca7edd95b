"""One policy's replay (``PolicyRun``, the one replay every caller uses), its result, and the what-if
over several policies (``run_whatif``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from shareplane.domain.config.shares import SchedulingMode
from shareplane.domain.jobs.lifecycle import gpus_per_instance
from shareplane.domain.shares.fairshare import decay_window
from shareplane.domain.shares.observation import (
    QueueObservation,
    ShareObservation,
    percentile,
    snapshot_from_observation,
)
from shareplane.domain.shares.rebalance import LedgerEntry, ShareSnapshot, plan_rebalance
from shareplane.domain.shares.tier_charge import TeamTierUsage, charged_plain_weights

from ..api import BatchApi
from ..engine import Engine
from ..gpu_metrics import GpuScript
from ..idle_replay import IdleDetection, IdleJob, IdleOutcome, hosts_for
from ..model import NUM_INSTANCES, BatchModel, Faults, Job, JobQueue, ModelOptions, Timings
from ..wire import billable_times
from .config import TIERS, Policy
from .lending import ledger_json
from .meter import Meter
from .reclaim import ReclaimRun
from .scenario import Scenario, ScenarioJob


def _or_zero(value: float | None) -> float:
    return 0.0 if value is None else value


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


@dataclass
class PolicyResult:
    """What one policy run measured, plus the series the report draws."""

    policy: Policy
    utilization: float
    work_conserving_bound: float
    wait_seconds: dict[str, dict[str, float]]
    team_entitlement_ratio: dict[str, float]
    worst_team_entitlement_ratio: float
    jain_index: float
    #: The largest team entitlement ratio over the smallest (``disparity``); None when a team with work
    #: received nothing.
    disparity: float | None
    preemption_gpu_hours_lost: float
    jobs: int
    finished: int
    gpu_hours_used: float = 0.0
    slo_attainment: dict[str, float] = field(default_factory=dict)
    reclaims: int = 0
    reclaim_victims: int = 0
    reclaim_gpu_hours_lost: float = 0.0
    plans: int = 0
    applied_plans: int = 0
    wall_seconds: float = 0.0
    utilization_series: list[float] = field(default_factory=list)
    bound_series: list[float] = field(default_factory=list)
    #: GPUs each share held, averaged over each report bucket (the usage chart against entitlement).
    share_usage_series: dict[str, list[float]] = field(default_factory=dict)
    waits_by_tier: dict[str, list[float]] = field(default_factory=dict)
    gpu_hours: dict[str, float] = field(default_factory=dict)
    entitled_gpu_hours: dict[str, float] = field(default_factory=dict)
    #: Each team's plain identifier's weightFactor at the end (tiered policies: with the tier charge).
    final_weights: dict[str, float] = field(default_factory=dict)
    #: USD per share: every training job's BillableTimeInSeconds x its instances x the on-demand price.
    cost_usd: dict[str, float] = field(default_factory=dict)
    #: Seeded idle jobs and what the idle detector did about them.
    idle: IdleOutcome = field(default_factory=IdleOutcome)
    #: GPU-hours each team lent to the others, and the share of them paid back (``meter.Lending``).
    lent_gpu_hours: dict[str, float] = field(default_factory=dict)
    paid_back_share: dict[str, float | None] = field(default_factory=dict)
    #: The ledger over time: GPU-hours each team had lent and been paid back by the end of each report
    #: bucket (cumulative; the last points are ``lent_gpu_hours`` and what was paid back).
    lent_series: dict[str, list[float]] = field(default_factory=dict)
    paid_back_series: dict[str, list[float]] = field(default_factory=dict)
    #: A report bucket's width in hours.
    bucket_hours: float = 0.0

    @property
    def worst_paid_back_share(self) -> float | None:
        """The smallest paid-back share of the teams that lent; None when none did."""
        shares = [v for v in self.paid_back_share.values() if v is not None]
        return min(shares) if shares else None

    def summary(self) -> dict[str, Any]:
        """The JSON shape of one policy: exactly the measured fields."""
        return {
            "utilization": round(self.utilization, 6),
            "work_conserving_bound": round(self.work_conserving_bound, 6),
            "wait_seconds": self.wait_seconds,
            "team_entitlement_ratio": {k: round(v, 6) for k, v in self.team_entitlement_ratio.items()},
            "worst_team_entitlement_ratio": round(self.worst_team_entitlement_ratio, 6),
            "jain_index": round(self.jain_index, 6),
            "disparity": _rounded(self.disparity),
            "lent_gpu_hours": {k: round(v, 3) for k, v in self.lent_gpu_hours.items()},
            "paid_back_share": {k: _rounded(v) for k, v in self.paid_back_share.items()},
            "ledger": ledger_json(self.bucket_hours, self.lent_series, self.paid_back_series, "gpu_hours"),
            "preemption_gpu_hours_lost": round(self.preemption_gpu_hours_lost, 3),
            "gpu_hours_used": round(self.gpu_hours_used, 3),
            "slo_attainment": {k: round(v, 6) for k, v in self.slo_attainment.items()},
            "reclaims": self.reclaims,
            "reclaim_victims": self.reclaim_victims,
            "reclaim_gpu_hours_lost": round(self.reclaim_gpu_hours_lost, 3),
            "cost_usd": {k: round(v, 2) for k, v in self.cost_usd.items()},
            "idle": self.idle.summary(),
            "jobs": self.jobs,
        }


def jain(values: Sequence[float]) -> float:
    """Jain's fairness index: 1 when all equal, 1/n when one value holds everything."""
    total, squares = sum(values), sum(v * v for v in values)
    return total * total / (len(values) * squares) if squares > 0 else 1.0


def disparity(ratios: Sequence[float]) -> float | None:
    """The largest ratio over the smallest (1.0 when there are none); None when the smallest is 0."""
    if not ratios:
        return 1.0
    low = min(ratios)
    return max(ratios) / low if low > 0 else None


def initial_weights(scenario: Scenario) -> dict[str, float]:
    """Fixed weightFactors from entitlements: the largest entitlement gets 1.0, lower gets more."""
    top = max(scenario.entitlements)
    return {
        s: min(999.9999, max(0.0001, round(top / e, 4)))
        for s, e in zip(scenario.shares, scenario.entitlements, strict=True)
    }


class PolicyRun:
    """One policy's replay: builds the queue through the Batch API, feeds jobs, meters, rebalances."""

    def __init__(self, scenario: Scenario, policy: Policy, seed: int = 0) -> None:
        self.scenario = scenario
        self.policy = policy
        cfg = scenario.config
        scripted = {j.name: j.script for j in scenario.jobs if j.script}
        timings = Timings(**cfg.timings.model_dump(), checkpoint_interval=cfg.checkpoint_interval_seconds)
        self.model = BatchModel(
            Engine(),
            ModelOptions(
                seed=seed,
                head_of_line_blocking=cfg.head_of_line_blocking,
                timings=timings,
                faults=Faults(scripted=scripted),
            ),
        )
        engine = self.model.engine
        self.meter = Meter(scenario, lambda: engine.now, self.model.unsaved_seconds)
        self.model.observer = self._observe
        self.api = BatchApi(self.model)
        self.instance_type = cfg.instance_type
        self.retry = {"attempts": cfg.retry_attempts}
        self.weights = initial_weights(scenario)
        self.quota_shares: list[Any] = []
        self.plans = 0
        self.applied = 0
        self.last_applied: float | None = None
        self.ledger: Mapping[str, LedgerEntry] = {}
        self.ledger_as_of: float | None = None
        self.reclaim = ReclaimRun(self) if policy.reclaims else None
        self.idle = self._idle_detection()
        # Tiered policies: each team's plain identifier carries the tier charge, as the rebalance
        # Lambda sets it on its schedule (``shareplane.domain.shares.tier_charge``).
        self.plain_weights = dict(self.weights)
        self.tier_usage = {s: TeamTierUsage() for s in scenario.shares}
        self.charged_at = 0.0
        self.queue: JobQueue = self._build()
        self._next = 0

    @property
    def done(self) -> bool:
        """Every job arrived and finished: periodic work stops (two schedules never keep each other up)."""
        return self._next >= len(self.scenario.jobs) and self.model.finished >= len(self.scenario.jobs)

    def _idle_detection(self) -> IdleDetection | None:
        sc = self.scenario
        if not any(j.idle_after is not None for j in sc.jobs):
            return None
        gpu = sc.gpus_per_unit
        jobs = {
            j.name: IdleJob(
                TIERS[j.tier],
                sc.shares[j.share],
                j.units * gpu,
                hosts_for(j.units, gpu, self.instance_type),
                j.checkpoints,
            )
            for j in sc.jobs
        }
        return IdleDetection(self.model, sc.config.idle, jobs, self.instance_type, lambda: self.done)

    def _observe(self, kind: str, job: Job) -> None:
        self.meter.observe(kind, job)
        if self.reclaim is not None:
            self.reclaim.observe(kind, job)
        if self.idle is not None:
            self.idle.observe(kind, job)

    def share_identifier(self, job: ScenarioJob) -> str:
        """The fair-share identifier a job is submitted with: its team's share, per tier when tiered."""
        share = self.scenario.shares[job.share]
        tier = TIERS[job.tier]
        if self.policy.tiered and self.scenario.config.tiers[tier].own_share:
            return share + tier.value
        return share

    def _share_distribution(self) -> list[dict[str, Any]]:
        if not self.policy.tiered:
            return [{"shareIdentifier": s, "weightFactor": w} for s, w in self.weights.items()]
        return [{"shareIdentifier": s, "weightFactor": w} for s, w in self.weights.items()] + [
            {"shareIdentifier": identifier, "weightFactor": w}
            for identifier, w in self._own_tier_weights(self.weights).items()
        ]

    def _own_tier_weights(self, team_weights: Mapping[str, float]) -> dict[str, float]:
        """Each own-tier identifier's weightFactor: its team's weight x the tier's multiplier."""
        tiers = self.scenario.config.tiers
        return {
            s + t.value: min(999.9999, max(0.0001, round(w * tiers[t].weight_multiplier, 4)))
            for s, w in team_weights.items()
            for t in TIERS
            if tiers[t].own_share
        }

    def _build(self) -> JobQueue:
        sc, api = self.scenario, self.api
        fair = self.policy.fair
        unit = NUM_INSTANCES if fair else self.instance_type
        api.create_service_environment(
            serviceEnvironmentName="whatif",
            serviceEnvironmentType="SAGEMAKER_TRAINING",
            capacityLimits=[{"maxCapacity": sc.capacity_units, "capacityUnit": unit}],
        )
        if fair:
            body = {
                "shareDecaySeconds": sc.config.share_decay_seconds,
                "computeReservation": 0,
                "shareDistribution": self._share_distribution(),
            }
            arn = api.create_scheduling_policy(name="whatif", fairsharePolicy=body)["arn"]
        else:
            arn = api.create_scheduling_policy(
                name="whatif", quotaSharePolicy={"idleResourceAssignmentStrategy": "FIFO"}
            )["arn"]
        api.create_job_queue(
            jobQueueName="whatif",
            jobQueueType="SAGEMAKER_TRAINING",
            priority=1,
            schedulingPolicyArn=arn,
            serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": "whatif"}],
        )
        queue = self.model.queues["whatif"]
        if not fair:
            sharing = (
                {"strategy": "RESERVE"}
                if self.policy is Policy.STATIC
                else {"strategy": "LEND_AND_BORROW", "borrowLimit": -1}
            )
            in_share = (
                "ENABLED" if sc.config.in_share_preemption and self.policy is Policy.QUOTA else "DISABLED"
            )
            for s, e in zip(sc.shares, sc.entitlements, strict=True):
                api.create_quota_share(
                    quotaShareName=s,
                    jobQueue="whatif",
                    capacityLimits=[{"maxCapacity": e, "capacityUnit": self.instance_type}],
                    resourceSharingConfiguration=sharing,
                    preemptionConfiguration={"inSharePreemption": in_share},
                )
            self.quota_shares = [queue.quota_shares[s] for s in sc.shares]
        return queue

    def start(self) -> None:
        """Schedule the first arrival (one pending arrival at a time keeps the heap small) and ticks."""
        if self.scenario.jobs:
            self.model.engine.schedule_at(self.scenario.jobs[0].submit, self._arrive)
        if self.policy.rebalances:
            self.model.engine.schedule(self._interval, self._tick)
        if self.policy.tiered:
            self.model.engine.schedule(self._charge_interval, self._charge)
        if self.reclaim is not None:
            self.reclaim.start()
        if self.idle is not None:
            self.idle.start()

    @property
    def _charge_interval(self) -> float:
        return self.scenario.config.tier_charge_interval_minutes * 60.0

    @property
    def _interval(self) -> float:
        return self.scenario.config.rebalance.interval_minutes * 60.0

    def _arrive(self, _: Any = None) -> None:
        jobs = self.scenario.jobs
        now = self.model.engine.now
        while self._next < len(jobs) and jobs[self._next].submit <= now:
            job = jobs[self._next]
            self._next += 1
            self.meter.arrive(job, now)
            payload: dict[str, Any] = {
                "TrainingJobName": job.name,
                "ResourceConfig": {"InstanceType": self.instance_type, "InstanceCount": job.units},
            }
            if job.checkpoints:
                payload["CheckpointConfig"] = {"S3Uri": f"s3://whatif/checkpoints/{job.name}/"}
            self.model.submit(
                self.queue,
                job.name,
                payload,
                share=self.share_identifier(job) if self.quota_shares == [] else None,
                quota_share=self.quota_shares[job.share] if self.quota_shares else None,
                priority=job.priority,
                retry=self.retry if job.retry is None else dict(job.retry),
                duration=job.duration,
                gpu=GpuScript(idle_after=job.idle_after) if job.idle_after is not None else None,
            )
            if self.idle is not None and job.idle_after is not None:
                self.idle.seeded(job.name, job.duration, job.idle_after)
            if self.reclaim is not None:
                self.reclaim.arrive(job)
        if self._next < len(jobs):
            self.model.engine.schedule_at(jobs[self._next].submit, self._arrive)

    def observation(self) -> QueueObservation:
        """What the rebalancer may look at now, measured by the meter (no job scan)."""
        sc, m, now = self.scenario, self.meter, self.model.engine.now
        unit = self.instance_type
        window = sc.config.rebalance.wait_window_minutes * 60.0
        shares = []
        for i, s in enumerate(sc.shares):
            shares.append(
                ShareObservation(
                    name=s,
                    entitlement={unit: sc.entitlements[i]},
                    in_use={unit: m.held[i]},
                    waiting={unit: m.demand[i] - m.held[i]},
                    waiting_by_tier={
                        TIERS[k]: m.demand_tier[i][k] - m.held_tier[i][k] for k in range(len(TIERS))
                    },
                    ledger_balance=self.ledger[s].balance if s in self.ledger else 0.0,
                    weight_factor=self.weights[s],
                )
            )
        tiers = {
            t: m.tier_observation(k, now, window, float(sc.config.tiers[t].wait_slo_seconds))
            for k, t in enumerate(TIERS)
        }
        return QueueObservation(
            now=now,
            mode=SchedulingMode.FAIRSHARE,
            capacity={unit: sc.capacity_units},
            shares=tuple(shares),
            tiers=tiers,
            last_applied_at=self.last_applied,
            ledger_as_of=self.ledger_as_of,
            gpus_per_instance={unit: sc.gpus_per_unit},
        )

    def snapshot(self) -> ShareSnapshot:
        """The rebalancer's view of the queue now, by the same rule the Lambda uses."""
        return snapshot_from_observation(self.observation())

    def _tick(self, _: Any = None) -> None:
        plan = plan_rebalance(self.snapshot(), self.scenario.config.rebalance.rules)
        self.plans += 1
        self.ledger, self.ledger_as_of = plan.ledger, plan.ledger_as_of
        moved = {c.share: float(c.after) for c in plan.moved}  # type: ignore[arg-type]
        if moved:
            self.weights.update(moved)
            if self.policy.tiered:
                # As the Lambda does in the team x tier layout: the plan's team weights go to the
                # own-tier identifiers x their multipliers, then the tier charge re-weighs the plain ones.
                self.model.reweigh(self.queue, self._own_tier_weights(moved))
                self._apply_charge()
            else:
                self.model.reweigh(self.queue, moved)
            self.applied += 1
            self.last_applied = self.model.engine.now
        if not self.done:
            self.model.engine.schedule(self._interval, self._tick)

    def _charge(self, _: Any = None) -> None:
        """The tier charge on the Lambda's schedule."""
        self._apply_charge()
        if not self.done:
            self.model.engine.schedule(self._charge_interval, self._charge)

    def _apply_charge(self) -> None:
        """Charge each team's own-tier usage to its plain identifier, by the Lambda's rule and data.

        As the Lambda does, the instances held now count for the whole interval since the last run.
        """
        sc, m, now = self.scenario, self.meter, self.model.engine.now
        elapsed, self.charged_at = now - self.charged_at, now
        window = decay_window(sc.config.share_decay_seconds)
        own_tiers = [k for k, t in enumerate(TIERS) if sc.config.tiers[t].own_share]
        for i, share in enumerate(sc.shares):
            own = sum(m.held_tier[i][k] for k in own_tiers)
            self.tier_usage[share] = self.tier_usage[share].accrue(own, m.held[i] - own, elapsed, window)
        moved = charged_plain_weights(self.weights, self.plain_weights, self.tier_usage)
        if moved:
            self.plain_weights.update(moved)
            self.model.reweigh(self.queue, moved)

    def replay(self, progress: Progress | None = None) -> PolicyResult:
        """The one replay: start, run to the end (``progress(policy, fraction)`` as it goes), measure.

        Whoever needs more than the result (the demo's usage timeline) subscribes to ``self.model``
        before calling this.
        """
        started = time.perf_counter()
        self.start()
        if progress is not None:
            steps = 100
            for k in range(1, steps + 1):
                self.model.run(until=self.scenario.window * k / steps)
                progress(self.policy, k / (steps + 1))
        self.model.run()
        if progress is not None:
            progress(self.policy, 1.0)
        return self.result(time.perf_counter() - started)

    def result(self, wall_seconds: float = 0.0) -> PolicyResult:
        """Close the meter at the end of the run and compute the metrics."""
        sc, m = self.scenario, self.meter
        m.close(self.model.engine.now)
        cap_area = sc.capacity_units * sc.window
        ratios = {}
        for i, s in enumerate(sc.shares):
            ratios[s] = m.received[i] / m.owed[i] if m.owed[i] > 0 else 1.0
        waits, attained = {}, {}
        for k, t in enumerate(TIERS):
            values = sorted(m.waits[k])
            waits[t.value] = {
                "p50": round(_or_zero(percentile(values, 0.5)), 3),
                "p95": round(_or_zero(percentile(values, 0.95)), 3),
                "p99": round(_or_zero(percentile(values, 0.99)), 3),
            }
            slo = sc.config.tiers[t].wait_slo_seconds
            attained[t.value] = sum(1 for w in values if w <= slo) / len(values) if values else 1.0
        g = sc.gpus_per_unit
        width_cap = sc.capacity_units * m.width
        return PolicyResult(
            policy=self.policy,
            utilization=m.held_area / cap_area if cap_area > 0 else 0.0,
            work_conserving_bound=m.bound_area / cap_area if cap_area > 0 else 0.0,
            wait_seconds=waits,
            team_entitlement_ratio=ratios,
            worst_team_entitlement_ratio=min(ratios.values()),
            jain_index=jain(list(ratios.values())),
            disparity=disparity([ratios[s] for i, s in enumerate(sc.shares) if m.owed[i] > 0]),
            preemption_gpu_hours_lost=m.lost_unit_seconds * g / 3600.0,
            jobs=len(sc.jobs),
            finished=self.model.finished,
            gpu_hours_used=m.held_area * g / 3600.0,
            slo_attainment=attained,
            reclaims=self.reclaim.reclaims if self.reclaim else 0,
            reclaim_victims=self.reclaim.victims if self.reclaim else 0,
            reclaim_gpu_hours_lost=m.reclaim_lost_unit_seconds * g / 3600.0,
            plans=self.plans,
            applied_plans=self.applied,
            wall_seconds=wall_seconds,
            utilization_series=[h / width_cap for h in m.bucket_held],
            bound_series=[b / width_cap for b in m.bucket_bound],
            share_usage_series={
                s: [h * g / m.width for h in m.bucket_share_held[i]] for i, s in enumerate(sc.shares)
            },
            waits_by_tier={t.value: sorted(m.waits[k]) for k, t in enumerate(TIERS)},
            gpu_hours={s: m.received[i] * g / 3600.0 for i, s in enumerate(sc.shares)},
            entitled_gpu_hours={s: m.owed[i] * g / 3600.0 for i, s in enumerate(sc.shares)},
            final_weights={}
            if self.policy is Policy.STATIC
            else dict(self.plain_weights if self.policy.tiered else self.weights),
            cost_usd=self.cost_by_share(),
            idle=self.idle.outcome if self.idle is not None else IdleOutcome(),
            lent_gpu_hours={s: m.lending.lent[i] * g / 3600.0 for i, s in enumerate(sc.shares)},
            paid_back_share={s: m.lending.paid_back_share(i) for i, s in enumerate(sc.shares)},
            lent_series={
                s: [v * g / 3600.0 for v in m.lending.lent_series(i)] for i, s in enumerate(sc.shares)
            },
            paid_back_series={
                s: [v * g / 3600.0 for v in m.lending.paid_back_series(i)] for i, s in enumerate(sc.shares)
            },
            bucket_hours=m.width / 3600.0,
        )

    def cost_by_share(self) -> dict[str, float]:
        """USD each share's training jobs cost: billable seconds x capacity units x the unit's price.

        Every attempt counts (failed, preempted and reclaimed ones too: SageMaker bills them), each by
        the billable time the model reports as DescribeTrainingJob does; provisioning is never billed.
        A capacity unit is ``gpus_per_unit`` GPUs of ``instance_type``, so it costs that part of the
        instance's price (the whole price when the type's GPU count is unknown).
        """
        sc = self.scenario
        per_instance = gpus_per_instance(sc.config.instance_type)
        unit_usd = sc.config.instance_hour_usd * (sc.gpus_per_unit / per_instance if per_instance else 1.0)
        share_of = {job.name: sc.shares[job.share] for job in sc.jobs}
        cost = dict.fromkeys(sc.shares, 0.0)
        for tj in self.model.training_jobs.values():
            billable = billable_times(self.model, tj).get("BillableTimeInSeconds", 0)
            units = tj.payload.get("ResourceConfig", {}).get("InstanceCount", 1)
            share = share_of.get(tj.job.name)
            if share is not None:
                cost[share] += billable * units / 3600 * unit_usd
        return cost


Progress = Callable[[Policy, float], None]


def run_policy(
    scenario: Scenario, policy: Policy, seed: int = 0, progress: Progress | None = None
) -> PolicyResult:
    """Replay the scenario under one policy to the end; ``progress(policy, fraction)`` as it goes."""
    return PolicyRun(scenario, policy, seed).replay(progress)


@dataclass
class WhatIfResult:
    """Every policy's result on one scenario."""

    scenario: Scenario
    results: dict[str, PolicyResult]
    seed: int = 0

    def to_json(self) -> dict[str, Any]:
        """``{policies: {name: summary}}``, the documented JSON output."""
        return {"policies": {name: r.summary() for name, r in self.results.items()}}


def run_whatif(
    scenario: Scenario, policies: Sequence[Policy], seed: int = 0, progress: Progress | None = None
) -> WhatIfResult:
    """Replay one scenario under each policy, in the order given."""
    return WhatIfResult(scenario, {p.value: run_policy(scenario, p, seed, progress) for p in policies}, seed)
