"""What-if runs: replay a job trace under several share policies and measure each one the same way.

A trace (``load_trace``: the Philly CSV, or JSON lines of exported job records) becomes a
``Scenario`` through ``config/whatif.yaml``: the top-K teams by GPU-time get a share each, the rest
fold into one "other" share, and every share is entitled to capacity in proportion to its long-run
demand (or to fractions the config names). Each job gets a seeded priority tier and, with the
configured probabilities, one injected SageMaker failure on its first dispatch (the trace has
neither). The same scenario then runs through ``gpusim`` once per policy:

- ``static``: hard partitions. Quota shares with strategy RESERVE: a share uses at most its
  entitlement and its idle capacity is not lent (the world before soft quotas). ``shareplane demo``
  replays its script under this policy for its hard-partition baseline.
- ``fairshare``: one fair-share queue, fixed ``weightFactor = max(entitlement) / entitlement``.
- ``quota``: quota shares with LEND_AND_BORROW (unlimited borrowLimit) and cross-share preemption
  to reclaim lent capacity; a preempted job restarts from zero (no checkpoints).
- ``fairshare+rebalance``: fair-share whose weights ``shareplane.domain.shares.rebalance.plan_rebalance``
  (the production rebalancer) rewrites every ``rebalance.interval_minutes`` of virtual time, from a
  ``ShareSnapshot`` built from the model's state by ``snapshot_from_observation``, the function the
  Lambda uses (so each tier's wait p90 counts recent waits and every job still waiting, as in
  production).

Capacity units: by default one unit is one GPU (``gpus_per_unit: 1``). 93% of Philly jobs use one
GPU; rounding each up to a whole 8-GPU instance would multiply the offered load by about six and
replay a different workload. With ``gpus_per_unit: 8`` jobs take ``ceil(gpus / 8)`` p4d-like
instances instead. Capacity and every reported quantity are in GPUs either way.

Metrics, all over one window shared by every policy, ``[0, W]`` with ``W`` the trace span (the
last arrival; the drain after it is excluded so a slower policy is not judged on a longer window):

- ``utilization``: GPU-seconds held (SCHEDULED through the end of the attempt, including SageMaker
  start-up) / (capacity x W).
- ``work_conserving_bound``: the integral of ``min(capacity, demand(t))`` / (capacity x W), where
  demand is the GPUs of every job submitted and not finished (waiting or running), in that run.
  ``utilization <= work_conserving_bound <= 1`` always.
- ``wait_seconds``: per tier, p50 and p95 (nearest rank) of first-dispatch time minus submit time.
- ``team_entitlement_ratio``: per share ``R_i = integral of held_i(t) / integral of min(E_i,
  demand_i(t))``, both over the instants in the window where share ``i`` has demand. The
  denominator is what the share was entitled to, capped by what it asked for; 1.0 means it got
  exactly its entitlement whenever it wanted it, above 1 it borrowed idle capacity, below 1 it was
  short. Since ``held_i <= min(capacity, demand_i)``, ``0 <= R_i <= capacity / E_i``. A share with
  no demand in the window gets 1.0 (it was owed nothing).
- ``worst_team_entitlement_ratio``: ``min_i R_i``; ``jain_index``: ``(sum R)^2 / (n sum R^2)``
  over the ratios as reported (a team far above 1 lowers it too).
- ``preemption_gpu_hours_lost``: GPU-hours of attempts ended by preemption (their work is lost).
- ``jobs``: jobs replayed.
- ``idle``: with ``--idle-fraction F`` (``seed_idle``), a seeded fraction F of the jobs hold their GPUs
  idle, and every policy runs the detect-idle Lambda's decision on its schedule (``idle_replay.py``):
  ``idle_gpu_hours`` the seeded jobs would hold idle without detection, ``reclaimed_gpu_hours``
  given back by stopping them, ``busy_jobs_stopped``.
"""

from __future__ import annotations

import math
import random
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from shareplane.domain.config.shares import (
    RebalanceConfig,
    ReclaimConfig,
    SchedulingMode,
    Tier,
    TierConfig,
    resume_priority,
)
from shareplane.domain.errors import ConfigError, InvalidInputError
from shareplane.domain.instance_types.capacity import Capacity
from shareplane.domain.jobs.lifecycle import gpus_per_instance
from shareplane.domain.reclaim.plan import ReclaimSnapshot, RunningJob, WaitingJob, plan_reclaim
from shareplane.domain.shares.fairshare import decay_window
from shareplane.domain.shares.observation import (
    QueueObservation,
    ShareObservation,
    TierObservation,
    percentile,
    snapshot_from_observation,
)
from shareplane.domain.shares.rebalance import LedgerEntry, ShareSnapshot, plan_rebalance
from shareplane.domain.shares.tier_charge import TeamTierUsage, charged_plain_weights

from .api import BatchApi
from .engine import Engine
from .gpu_metrics import GpuScript
from .idle_replay import IdleDetection, IdleJob, IdleOutcome, IdleRun, hosts_for
from .model import NUM_INSTANCES, BatchModel, Faults, Job, JobQueue, ModelOptions, Timings
from .trace import TraceJob
from .wire import billable_times

TIERS: tuple[Tier, ...] = tuple(Tier)


# ------------------------------------------------------------------------------------- config
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TierMix(_Strict):
    """A tier in the what-if: the fraction of jobs drawn into it, its priority and its wait SLO."""

    fraction: Annotated[float, Field(ge=0, le=1)]
    scheduling_priority: Annotated[int, Field(ge=0, le=9999)]
    wait_slo_seconds: Annotated[int, Field(gt=0)]
    #: Team x tier layout (fairshare+tiers, fairshare+reclaim): whether the tier has an identifier of its
    #: own per team, and that identifier's weight multiplier.
    own_share: bool = False
    weight_multiplier: Annotated[float, Field(gt=0, le=1)] = 1.0
    #: fairshare+reclaim: a job of this tier that waited this long may reclaim; unset: never.
    reclaim_after_seconds: Annotated[int, Field(ge=0)] | None = None

    def tier_config(self) -> TierConfig:
        """The production tier settings these stand for (what the reclaim planner reads)."""
        return TierConfig(
            scheduling_priority=self.scheduling_priority,
            wait_slo_seconds=self.wait_slo_seconds,
            own_share=self.own_share,
            weight_multiplier=self.weight_multiplier,
            reclaim_after_seconds=self.reclaim_after_seconds,
        )


class SharesMapping(_Strict):
    """How trace teams become shares and what each share is entitled to."""

    top_k: Annotated[int, Field(ge=1, le=19)] = 7
    other: Annotated[str, Field(pattern=r"^[A-Za-z0-9]{1,64}$")] = "other"
    #: Team -> share name; named teams get their own share whatever their size (top_k fills the rest).
    names: Mapping[str, Annotated[str, Field(pattern=r"^[A-Za-z0-9]{1,64}$")]] = Field(default_factory=dict)
    #: Share -> fraction of capacity; unset shares split the rest in proportion to their demand.
    entitlements: Mapping[str, Annotated[float, Field(gt=0, le=1)]] = Field(default_factory=dict)
    #: Raise each entitlement to the share's largest job, so hard partitions can run every job.
    floor_largest_job: bool = True


class FaultRates(_Strict):
    """Probability that a job's first dispatch fails this way (retried per ``retry_attempts``)."""

    capacity: Annotated[float, Field(ge=0, le=1)] = 0.0
    internal: Annotated[float, Field(ge=0, le=1)] = 0.0
    cuda_oom: Annotated[float, Field(ge=0, le=1)] = 0.0


class TimingsConfig(_Strict):
    """SageMaker phase durations (virtual seconds) every dispatch goes through."""

    scheduled_to_starting: Annotated[float, Field(ge=0)] = 60.0
    starting_to_running: Annotated[float, Field(ge=0)] = 120.0
    capacity_error_after: Annotated[float, Field(ge=0)] = 300.0
    failure_after: Annotated[float, Field(ge=0)] = 120.0


class RebalanceRun(_Strict):
    """How often the rebalancer runs in the what-if, and the production rules it runs with."""

    interval_minutes: Annotated[float, Field(gt=0)] = 10.0
    #: Waits of jobs first dispatched this long before a snapshot make its per-tier p90.
    wait_window_minutes: Annotated[float, Field(gt=0)] = 60.0
    rules: RebalanceConfig = RebalanceConfig()

    @model_validator(mode="after")
    def _movable(self) -> RebalanceRun:
        self.rules.check_can_step_down("rebalance.rules")
        return self


class WhatIfConfig(_Strict):
    """Root of config/whatif.yaml."""

    capacity_gpus: Annotated[int, Field(gt=0)] | None = None
    #: Without a capacity: GPUs = ceil(offered load / target_load); offered = GPU-time / trace span.
    target_load: Annotated[float, Field(gt=0, le=2)] = 0.95
    gpus_per_unit: Annotated[int, Field(ge=1, le=64)] = 1
    instance_type: Annotated[str, Field(min_length=1)] = "ml.p4d.24xlarge"
    #: USD per instance-hour of ``instance_type``, SageMaker training on demand (the default is
    #: ml.p4d.24xlarge in us-east-1, from the cached copy of AWS's prices in config/prices/). Each
    #: policy's cost per share is the billable time the model reports x instances x this price.
    instance_hour_usd: Annotated[float, Field(gt=0)] = 37.688
    shares: SharesMapping = SharesMapping()
    tiers: Mapping[Tier, TierMix] = Field(
        default_factory=lambda: {
            Tier.HIGHPRI: TierMix(
                fraction=0.1,
                scheduling_priority=90,
                wait_slo_seconds=900,
                own_share=True,
                weight_multiplier=0.05,
                reclaim_after_seconds=300,
            ),
            Tier.MIDPRI: TierMix(fraction=0.3, scheduling_priority=50, wait_slo_seconds=3600),
            Tier.LOWPRI: TierMix(fraction=0.6, scheduling_priority=10, wait_slo_seconds=14400),
        }
    )
    faults: FaultRates = FaultRates()
    retry_attempts: Annotated[int, Field(ge=1, le=10)] = 2
    timings: TimingsConfig = TimingsConfig()
    head_of_line_blocking: bool = True
    share_decay_seconds: Annotated[int, Field(ge=0, le=604800)] = 3600
    in_share_preemption: bool = False
    #: Trace jobs save a checkpoint this often (a preempted or reclaimed job resumes from its last).
    checkpoint_interval_seconds: Annotated[float, Field(ge=0)] = 900.0
    #: The fraction of jobs (seeded) that never checkpoint: they lose all work when stopped, so
    #: reclaim never picks them.
    never_checkpoint_fraction: Annotated[float, Field(ge=0, le=1)] = 0.1
    rebalance: RebalanceRun = RebalanceRun()
    #: fairshare+reclaim: the production reclaim rules, and how often the schedule re-plans (a job is
    #: also re-planned at the moment it becomes due, as the Lambda's delayed re-check does).
    reclaim: ReclaimConfig = ReclaimConfig()
    reclaim_interval_minutes: Annotated[float, Field(gt=0)] = 5.0
    report_buckets: Annotated[int, Field(ge=10, le=2000)] = 200
    #: Seeded idle jobs and the idle detector (``idle_replay.py``); off unless a fraction is set.
    idle: IdleRun = IdleRun()

    @model_validator(mode="after")
    def _check(self) -> WhatIfConfig:
        missing = [t.value for t in Tier if t not in self.tiers]
        if missing:
            raise ConfigError("tiers", f"missing {missing}", "define HIGHPRI, MIDPRI and LOWPRI")
        if sum(t.fraction for t in self.tiers.values()) <= 0:
            raise ConfigError("tiers", "fractions add up to 0", "give at least one tier a fraction > 0")
        if sum(self.shares.entitlements.values()) > 1 + 1e-9:
            raise ConfigError("shares.entitlements", "add up to more than 1", "lower the fractions")
        if sum(self.faults.model_dump().values()) > 1:
            raise ConfigError("faults", "add up to more than 1", "lower the probabilities")
        return self


#: The largest what-if config read (a real one is a few KB).
MAX_WHATIF_CONFIG_BYTES = 1024 * 1024


def load_whatif_config(path: Path | str | None) -> WhatIfConfig:
    """Read and validate a what-if config (None: the defaults); errors name the file and the field."""
    if path is None:
        return WhatIfConfig()
    path = Path(path)
    try:
        # Read with a bound: --config may name an endless stream (/dev/zero, a pipe).
        with path.open("rb") as handle:
            data = handle.read(MAX_WHATIF_CONFIG_BYTES + 1)
        if len(data) > MAX_WHATIF_CONFIG_BYTES:
            raise ConfigError(
                str(path),
                f"is larger than {MAX_WHATIF_CONFIG_BYTES} bytes (or an endless stream)",
                "pass --config with the what-if config file",
            )
        raw = yaml.safe_load(data.decode("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(
            str(path), f"cannot be read ({exc})", "pass --config with a readable YAML file"
        ) from exc
    try:
        return WhatIfConfig.model_validate(raw or {})
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc.field}", exc.problem, exc.fix) from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise ConfigError(f"{path}: {loc}", first["msg"], "correct the value in the config file") from exc


# ----------------------------------------------------------------------------------- scenario
class Policy(StrEnum):
    """The share policies a what-if compares."""

    STATIC = "static"
    FAIRSHARE = "fairshare"
    QUOTA = "quota"
    REBALANCE = "fairshare+rebalance"
    #: Fair-share with one identifier per team and tier (``ShareLayout.TEAM_TIER``), fixed weights.
    TIERS = "fairshare+tiers"
    #: The team x tier layout plus the control plane's checkpoint-aware reclaim (domain/reclaim/plan.py).
    RECLAIM = "fairshare+reclaim"

    @property
    def fair(self) -> bool:
        """Whether the policy runs a fair-share queue (else quota shares)."""
        return self in (Policy.FAIRSHARE, Policy.REBALANCE, Policy.TIERS, Policy.RECLAIM)

    @property
    def tiered(self) -> bool:
        """Whether share identifiers are per team and tier."""
        return self in (Policy.TIERS, Policy.RECLAIM)


def parse_policies(text: str) -> list[Policy]:
    """A comma-separated list of policy names, in order, without duplicates."""
    out: list[Policy] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            policy = Policy(part)
        except ValueError as exc:
            raise InvalidInputError(
                "--policy", f"{part!r} is not a policy", f"use some of {', '.join(p.value for p in Policy)}"
            ) from exc
        if policy not in out:
            out.append(policy)
    if not out:
        raise InvalidInputError("--policy", "names no policy", "pass e.g. static,fairshare")
    return out


@dataclass(frozen=True)
class ScenarioJob:
    """One job as every policy replays it: arrival, run time, capacity units, share and tier."""

    name: str
    submit: float
    duration: float
    units: int
    share: int  # index into Scenario.shares
    tier: int  # index into TIERS
    priority: int
    script: tuple[str, ...] = ()
    checkpoints: bool = True
    #: The job's Batch retryStrategy; None: ``retry_attempts`` attempts whatever the failure.
    retry: Mapping[str, Any] | None = None
    #: Seeded idle job: its GPUs idle after this many seconds of training (0: the whole run).
    idle_after: float | None = None


@dataclass(frozen=True)
class Scenario:
    """A trace mapped to shares, capacity and tiers: the input every policy run shares."""

    capacity_gpus: int
    gpus_per_unit: int
    shares: tuple[str, ...]
    entitlements: tuple[int, ...]  # capacity units per share; they add up to the capacity
    team_share: Mapping[str, str]
    jobs: tuple[ScenarioJob, ...]
    window: float
    offered_gpus: float  # total GPU-time / trace span
    config: WhatIfConfig

    @property
    def capacity_units(self) -> int:
        """Capacity in the model's units."""
        return self.capacity_gpus // self.gpus_per_unit

    @property
    def offered_load(self) -> float:
        """Offered GPUs as a fraction of the capacity."""
        return self.offered_gpus / self.capacity_gpus


def trace_span(trace: Sequence[TraceJob] | Sequence[ScenarioJob]) -> float:
    """Seconds from the first arrival to the last (or to the longest run when all arrive at once)."""
    span = max(j.submit for j in trace) - min(j.submit for j in trace)
    return span if span > 0 else max(j.submit + j.duration for j in trace)


def offered_gpus(trace: Sequence[TraceJob]) -> float:
    """Average GPUs the trace asks for: total GPU-time over the trace span."""
    return sum(j.gpus * j.duration for j in trace) / trace_span(trace)


def units_for(gpus: int, gpus_per_unit: int) -> int:
    """Capacity units a job of ``gpus`` GPUs occupies: whole units, at least one."""
    return max(1, math.ceil(gpus / gpus_per_unit))


def _largest_remainder(total: int, weights: Mapping[str, float]) -> dict[str, int]:
    wsum = sum(weights.values())
    exact = {k: total * w / wsum if wsum > 0 else total / len(weights) for k, w in weights.items()}
    out = {k: math.floor(v) for k, v in exact.items()}
    for k in sorted(exact, key=lambda k: (-(exact[k] - out[k]), k))[: total - sum(out.values())]:
        out[k] += 1
    return out


def _entitlements(
    capacity: int, demand: Mapping[str, float], floors: Mapping[str, int], mapping: SharesMapping
) -> dict[str, int]:
    fixed = {s: f for s, f in mapping.entitlements.items() if s in demand}
    rest = [s for s in demand if s not in fixed]
    weights = {s: capacity * f for s, f in fixed.items()}
    left = capacity * (1 - sum(fixed.values()))
    rest_demand = sum(demand[s] for s in rest)
    for s in rest:
        weights[s] = left * demand[s] / rest_demand if rest_demand > 0 else left / len(rest)
    ent = _largest_remainder(capacity, weights)
    if not mapping.floor_largest_job:
        return ent
    if sum(floors.values()) > capacity:
        raise InvalidInputError(
            "capacity", f"{capacity} units cannot hold every share's largest job", "raise --capacity"
        )
    while True:
        short = sorted(s for s in ent if ent[s] < floors[s])
        if not short:
            return ent
        for s in short:
            need = floors[s] - ent[s]
            ent[s] = floors[s]
            # Take from the shares with the most room above their own floor, one unit at a time.
            while need > 0:
                donor = max(ent, key=lambda d: (ent[d] - floors[d], d))
                ent[donor] -= 1
                need -= 1


def scenario_of(
    jobs: Sequence[ScenarioJob],
    config: WhatIfConfig,
    *,
    shares: Sequence[str],
    entitlements: Sequence[int],
    team_share: Mapping[str, str] | None = None,
    window: float | None = None,
    offered: float | None = None,
) -> Scenario:
    """The one way a ``Scenario`` is made: jobs already in capacity units, in arrival order, each in a
    share; the capacity is what the shares are entitled to (every unit belongs to one share).

    ``window`` defaults to the jobs' span, ``offered`` (GPUs) to their GPU-time over the window.
    ``build_scenario`` makes the jobs from a trace; the demo's baseline and the tests make them by hand.
    """
    if not jobs:
        raise InvalidInputError("jobs", "there are none", "pass a trace with jobs")
    if not shares or len(set(shares)) != len(shares):
        raise InvalidInputError(
            "shares", f"{list(shares)} is empty or repeats a name", "name each share once"
        )
    if len(entitlements) != len(shares) or min(entitlements) < 0:
        raise InvalidInputError(
            "entitlements",
            f"{list(entitlements)} for shares {list(shares)}",
            "give each share its units (>= 0)",
        )
    gpu = config.gpus_per_unit
    capacity = sum(entitlements)
    if capacity < 1:
        raise InvalidInputError("entitlements", "add up to 0 units", "entitle some share to capacity")
    for n, job in enumerate(jobs):
        if n and job.submit < jobs[n - 1].submit:
            raise InvalidInputError(
                f"jobs[{n}] ({job.name})",
                "arrives before the job listed before it",
                "sort the jobs by submit",
            )
        if not 0 <= job.share < len(shares):
            raise InvalidInputError(
                f"jobs[{n}] ({job.name}).share",
                f"{job.share} is not a share index",
                f"use 0..{len(shares) - 1}",
            )
        if not 0 <= job.tier < len(TIERS):
            raise InvalidInputError(
                f"jobs[{n}] ({job.name}).tier", f"{job.tier} is not a tier index", f"use 0..{len(TIERS) - 1}"
            )
        if not 1 <= job.units <= capacity:
            raise InvalidInputError(
                f"jobs[{n}] ({job.name}).units",
                f"{job.units} is not within 1..{capacity}",
                "size the job in capacity units",
            )
    span = trace_span(jobs) if window is None else window
    return Scenario(
        capacity_gpus=capacity * gpu,
        gpus_per_unit=gpu,
        shares=tuple(shares),
        entitlements=tuple(entitlements),
        team_share=dict(team_share) if team_share is not None else {s: s for s in shares},
        jobs=tuple(jobs),
        window=span,
        offered_gpus=offered if offered is not None else sum(j.units * gpu * j.duration for j in jobs) / span,
        config=config,
    )


def build_scenario(
    trace: Sequence[TraceJob], config: WhatIfConfig, capacity_gpus: int | None = None, seed: int = 0
) -> Scenario:
    """Map teams to shares, size the capacity, draw tiers and failures (seeded) for every job."""
    if not trace:
        raise InvalidInputError("trace", "holds no jobs", "pass a trace with jobs")
    # Arrival order (stable: a loaded trace is already in it), the order the replay submits in.
    trace = sorted(trace, key=lambda j: j.submit)
    span = trace_span(trace)
    offered = offered_gpus(trace)
    team_share = _team_shares(trace, config.shares)
    shares = tuple(sorted(set(team_share.values())))
    gpu = config.gpus_per_unit
    capacity = capacity_gpus or config.capacity_gpus or math.ceil(offered / config.target_load)
    capacity = max(gpu, capacity // gpu * gpu)
    units_of = {g: units_for(g, gpu) for g in {t.gpus for t in trace}}
    largest = max(units_of.values())
    if largest > capacity // gpu:
        raise InvalidInputError(
            "capacity",
            f"{capacity} GPUs cannot hold the trace's largest job",
            f"use at least {largest * gpu}",
        )
    demand = {s: 0.0 for s in shares}
    floors = {s: 1 for s in shares}
    for j in trace:
        s = team_share[j.team]
        demand[s] += j.gpus * j.duration / span
        floors[s] = max(floors[s], units_of[j.gpus])
    ent = _entitlements(capacity // gpu, demand, floors, config.shares)
    index = {s: i for i, s in enumerate(shares)}
    share_of = [index[team_share[j.team]] for j in trace]
    return scenario_of(
        _draw_jobs(trace, config, [units_of[j.gpus] for j in trace], share_of, seed),
        config,
        shares=shares,
        entitlements=[ent[s] for s in shares],
        team_share=team_share,
        window=span,
        offered=offered,
    )


def _team_shares(trace: Sequence[TraceJob], mapping: SharesMapping) -> dict[str, str]:
    """Each team's share: the named ones, then the top-K others by GPU-time, the rest in ``other``."""
    gpu_time: dict[str, float] = {}
    for j in trace:
        gpu_time[j.team] = gpu_time.get(j.team, 0.0) + j.gpus * j.duration
    named = {t: s for t, s in mapping.names.items() if t in gpu_time}
    ranked = [t for t in sorted(gpu_time, key=lambda t: (-gpu_time[t], t)) if t not in named]
    own = ranked[: max(0, mapping.top_k - len(named))]
    team_share = {**named, **{t: t for t in own}}
    for t in gpu_time:
        team_share.setdefault(t, mapping.other)
    return team_share


def _draw_jobs(
    trace: Sequence[TraceJob], config: WhatIfConfig, units: Sequence[int], shares: Sequence[int], seed: int
) -> list[ScenarioJob]:
    """The trace's jobs in arrival order, each with its seeded tier, injected failure and checkpointing."""
    rng = random.Random(seed)
    tier_weights = [config.tiers[t].fraction for t in TIERS]
    rates = config.faults.model_dump()
    priorities = sorted(((config.tiers[t].scheduling_priority, i) for i, t in enumerate(TIERS)), reverse=True)
    # Checkpointing is drawn from its own stream, so the tier and failure draws stay as they were.
    ckpt_rng = random.Random(f"checkpoints-{seed}")
    jobs = []
    for n, j in enumerate(trace):
        if j.priority is None:
            tier = rng.choices(range(len(TIERS)), tier_weights)[0]
            priority = config.tiers[TIERS[tier]].scheduling_priority
        else:
            priority = j.priority
            tier = next((i for p, i in priorities if priority >= p), priorities[-1][1])
        draw, script = rng.random(), tuple[str, ...]()
        for outcome, p in rates.items():
            if draw < p:
                script = (outcome,)
                break
            draw -= p
        jobs.append(
            ScenarioJob(
                f"j{n}",
                j.submit,
                j.duration,
                units[n],
                shares[n],
                tier,
                priority,
                script,
                ckpt_rng.random() >= config.never_checkpoint_fraction,
            )
        )
    return jobs


def seed_idle(scenario: Scenario, fraction: float | None = None, seed: int = 0) -> Scenario:
    """The scenario with a seeded ``fraction`` of its jobs idle (default: the config's ``idle.fraction``).

    Of those, ``whole_run_fraction`` idle from their first second of training, the rest after a
    seeded point of their run time. Drawn from a stream of its own, so tiers, failures and
    checkpointing stay as they were.
    """
    settings = scenario.config.idle
    if fraction is None:
        fraction = settings.fraction
    if not 0 <= fraction <= 1:
        raise InvalidInputError("--idle-fraction", f"{fraction} is not within 0..1", "pass e.g. 0.05")
    if fraction == 0:
        return scenario
    rng = random.Random(f"idle-{seed}")
    jobs = []
    for job in scenario.jobs:
        idle_after = None
        if rng.random() < fraction:
            whole = rng.random() < settings.whole_run_fraction
            point = rng.uniform(settings.after_low, settings.after_high)
            idle_after = 0.0 if whole else round(job.duration * point, 3)
        jobs.append(replace(job, idle_after=idle_after) if idle_after is not None else job)
    config = scenario.config.model_copy(update={"idle": settings.model_copy(update={"fraction": fraction})})
    return replace(scenario, jobs=tuple(jobs), config=config)


# -------------------------------------------------------------------------------------- meter
class Meter:
    """Integrates held and demanded units per share from the model's observer calls, in O(1) each."""

    def __init__(
        self,
        scenario: Scenario,
        clock: Callable[[], float],
        unsaved: Callable[[Job, float], float] = lambda job, now: now - (job.scheduled_at or now),
    ) -> None:
        n = len(scenario.shares)
        self.now = clock
        self.unsaved = unsaved
        self.capacity = scenario.capacity_units
        self.entitled = list(scenario.entitlements)
        self.end = scenario.window
        self.jobs = {j.name: j for j in scenario.jobs}
        self.held = [0] * n
        self.demand = [0] * n
        self.held_tier = [[0] * len(TIERS) for _ in range(n)]
        self.demand_tier = [[0] * len(TIERS) for _ in range(n)]
        self.received = [0.0] * n
        self.owed = [0.0] * n
        self.share_t = [0.0] * n
        self.total_held = 0
        self.total_demand = 0
        self.t = 0.0
        self.held_area = 0.0
        self.bound_area = 0.0
        self.buckets = scenario.config.report_buckets
        self.width = self.end / self.buckets if self.end > 0 else 1.0
        self.bucket_held = [0.0] * self.buckets
        self.bucket_bound = [0.0] * self.buckets
        self.bucket_share_held = [[0.0] * self.buckets for _ in range(n)]
        self.lost_unit_seconds = 0.0  # to preemption
        self.reclaim_lost_unit_seconds = 0.0
        self.waits: list[list[float]] = [[] for _ in TIERS]
        self.recent: list[deque[tuple[float, float]]] = [deque() for _ in TIERS]
        self.waiting: list[dict[str, float]] = [{} for _ in TIERS]  # not yet dispatched: name -> created

    def _advance(self, now: float) -> None:
        t1 = min(now, self.end)
        t0 = self.t
        if t1 <= t0:
            return
        held, bound = self.total_held, min(self.capacity, self.total_demand)
        self.held_area += held * (t1 - t0)
        self.bound_area += bound * (t1 - t0)
        if held or bound:
            width, last = self.width, self.buckets - 1
            b = min(int(t0 / width), last)
            # The bucket index moves on every step, so float rounding at a boundary cannot stall it.
            while t0 < t1:
                stop = t1 if b >= last else min(t1, (b + 1) * width)
                if stop > t0:
                    self.bucket_held[b] += held * (stop - t0)
                    self.bucket_bound[b] += bound * (stop - t0)
                    t0 = stop
                b += 1
        self.t = t1

    def _spread(self, buckets: list[float], value: float, t0: float, t1: float) -> None:
        """Add ``value`` x time over [t0, t1] to the report buckets it crosses."""
        width, last = self.width, self.buckets - 1
        b = min(int(t0 / width), last)
        while t0 < t1:
            stop = t1 if b >= last else min(t1, (b + 1) * width)
            if stop > t0:
                buckets[b] += value * (stop - t0)
                t0 = stop
            b += 1

    def _advance_share(self, i: int, now: float) -> None:
        t1 = min(now, self.end)
        dt = t1 - self.share_t[i]
        if dt > 0:
            held = self.held[i]
            self.received[i] += held * dt
            if held:
                self._spread(self.bucket_share_held[i], held, self.share_t[i], t1)
            demand = self.demand[i]
            if demand:
                self.owed[i] += min(self.entitled[i], demand) * dt
            self.share_t[i] = t1

    def arrive(self, job: ScenarioJob, now: float) -> None:
        """A job was submitted: its units join its share's demand."""
        self._advance(now)
        i, u = job.share, job.units
        self._advance_share(i, now)
        self.demand[i] += u
        self.demand_tier[i][job.tier] += u
        self.total_demand += u
        self.waiting[job.tier][job.name] = now

    def observe(self, kind: str, job: Job) -> None:
        """The model's observer: dispatch, preempt, release, finish."""
        sj = self.jobs[job.name]
        now = self.now()
        self._advance(now)
        i, u = sj.share, job.count
        self._advance_share(i, now)
        if kind == "dispatch":
            self.held[i] += u
            self.held_tier[i][sj.tier] += u
            self.total_held += u
            if job.dispatches == 1:
                created = self.waiting[sj.tier].pop(sj.name, now)
                wait = now - created
                self.waits[sj.tier].append(wait)
                self.recent[sj.tier].append((now, wait))
        elif kind == "release":
            self.held[i] -= u
            self.held_tier[i][sj.tier] -= u
            self.total_held -= u
        elif kind == "finish":
            self.demand[i] -= u
            self.demand_tier[i][sj.tier] -= u
            self.total_demand -= u
            self.waiting[sj.tier].pop(sj.name, None)
        elif kind in ("preempt", "reclaim"):
            # The work since the last checkpoint (or the dispatch) is lost; only its part inside the
            # window counts, as GPU-hours used do.
            lost = self.unsaved(job, now)
            inside = max(0.0, min(now, self.end) - max(now - lost, 0.0))
            if kind == "preempt":
                self.lost_unit_seconds += u * inside
            else:
                self.reclaim_lost_unit_seconds += u * inside

    def close(self, now: float) -> None:
        """Integrate every share up to the end of the window (or ``now`` if earlier)."""
        self._advance(now)
        for i in range(len(self.held)):
            self._advance_share(i, now)

    def tier_observation(self, tier: int, now: float, window: float, slo: float) -> TierObservation:
        """A tier's raw waits: dispatched in the last ``window`` s, and the ages of all still waiting."""
        recent = self.recent[tier]
        while recent and recent[0][0] < now - window:
            recent.popleft()
        # ``waiting`` is in arrival order, so the ages come out longest first.
        return TierObservation(
            slo_seconds=slo,
            recent_waits=tuple(w for _, w in recent),
            waiting_ages=tuple(now - created for created in self.waiting[tier].values()),
        )


def _or_zero(value: float | None) -> float:
    return 0.0 if value is None else value


# ------------------------------------------------------------------------------------- runner
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

    def summary(self) -> dict[str, Any]:
        """The JSON shape of one policy: exactly the measured fields."""
        return {
            "utilization": round(self.utilization, 6),
            "work_conserving_bound": round(self.work_conserving_bound, 6),
            "wait_seconds": self.wait_seconds,
            "team_entitlement_ratio": {k: round(v, 6) for k, v in self.team_entitlement_ratio.items()},
            "worst_team_entitlement_ratio": round(self.worst_team_entitlement_ratio, 6),
            "jain_index": round(self.jain_index, 6),
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
        self.reclaim = _ReclaimRun(self) if policy is Policy.RECLAIM else None
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
        tiers = self.scenario.config.tiers
        return [{"shareIdentifier": s, "weightFactor": w} for s, w in self.weights.items()] + [
            {
                "shareIdentifier": s + t.value,
                "weightFactor": min(999.9999, max(0.0001, round(w * tiers[t].weight_multiplier, 4))),
            }
            for s, w in self.weights.items()
            for t in TIERS
            if tiers[t].own_share
        ]

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
        if self.policy is Policy.REBALANCE:
            self.model.engine.schedule(self._interval, self._tick)
        if self.policy.tiered:
            self.model.engine.schedule(self._interval, self._charge)
        if self.reclaim is not None:
            self.reclaim.start()
        if self.idle is not None:
            self.idle.start()

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
            self.model.reweigh(self.queue, moved)
            self.applied += 1
            self.last_applied = self.model.engine.now
        if not self.done:
            self.model.engine.schedule(self._interval, self._tick)

    def _charge(self, _: Any = None) -> None:
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
        if not self.done:
            self.model.engine.schedule(self._interval, self._charge)

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


class _ReclaimRun:
    """fairshare+reclaim: the production reclaim planner on the model's state, with its bookkeeping.

    As the Lambda does, it plans when a waiting job becomes due (its submission plus its tier's
    ``reclaim_after_seconds``) and on a schedule, and stops each victim the way the requeue path
    does (``BatchModel.requeue_from_checkpoint``). Stops are instant in the model, so no victim is
    ever "being stopped" in a snapshot.
    """

    def __init__(self, run: PolicyRun) -> None:
        self.run = run
        cfg = run.scenario.config
        self.tiers = {t: mix.tier_config() for t, mix in cfg.tiers.items()}
        self.rules = cfg.reclaim
        self.interval = cfg.reclaim_interval_minutes * 60.0
        self.jobs = {j.name: j for j in run.scenario.jobs}
        self.waiting: dict[str, ScenarioJob] = {}  # due-able jobs never dispatched yet
        self.running: dict[str, Job] = {}
        self.victims_for: dict[str, int] = {}
        self.displaced: dict[str, frozenset[str]] = {}
        self.last_stopped: dict[str, float] = {}
        self.day, self.today = -1, 0
        # The rate window the plans of the current one counted, and its victims so far (the Lambda's
        # RECLAIM#WINDOW counter).
        self.window, self.in_window = -1, 0
        self.reclaims = 0
        self.victims = 0
        unit = cfg.instance_type
        sc = run.scenario
        self.entitlements = {s: Capacity({unit: e}) for s, e in zip(sc.shares, sc.entitlements, strict=True)}

    def start(self) -> None:
        """Start the schedule."""
        self.run.model.engine.schedule(self.interval, self._tick)

    def arrive(self, job: ScenarioJob) -> None:
        """A job of a reclaiming tier was submitted: plan again when it becomes due."""
        after = self.tiers[TIERS[job.tier]].reclaim_after_seconds
        if after is None:
            return
        self.waiting[job.name] = job
        self.run.model.engine.schedule_at(job.submit + after, self._due)

    def observe(self, kind: str, job: Job) -> None:
        """Keep the running set and the never-dispatched waiters current."""
        if kind == "dispatch":
            self.running[job.name] = job
            self.waiting.pop(job.name, None)
        elif kind == "release":
            self.running.pop(job.name, None)
        elif kind == "preempt":
            self.last_stopped[job.name] = self.run.model.engine.now

    def _tick(self, _: Any = None) -> None:
        self.plan()
        if not self.run.done:
            self.run.model.engine.schedule(self.interval, self._tick)

    def _due(self, _: Any = None) -> None:
        self.plan()

    def snapshot(self) -> ReclaimSnapshot:
        """The reclaim planner's view of the model now: what the Lambda reads from Batch and S3."""
        model, sc = self.run.model, self.run.scenario
        now = model.engine.now
        unit = sc.config.instance_type
        none: frozenset[str] = frozenset()
        return ReclaimSnapshot(
            now=now,
            capacity=Capacity({unit: sc.capacity_units}),
            entitlements=self.entitlements,
            waiting=tuple(
                WaitingJob(
                    j.name,
                    sc.shares[j.share],
                    TIERS[j.tier],
                    unit,
                    j.units,
                    j.submit,
                    displaced_by=self.displaced.get(j.name, none),
                    victims_so_far=self.victims_for.get(j.name, 0),
                )
                for j in self.waiting.values()
            ),
            running=tuple(
                RunningJob(
                    name,
                    sc.shares[self.jobs[name].share],
                    TIERS[self.jobs[name].tier],
                    unit,
                    job.count,
                    job.scheduled_at if job.scheduled_at is not None else now,
                    checkpoints=self.jobs[name].checkpoints,
                    last_checkpoint_at=model.last_checkpoint_at(job),
                    last_stopped_at=self.last_stopped.get(name),
                    displaced_by=self.displaced.get(name, none),
                )
                for name, job in self.running.items()
            ),
            victims_today=self.today,
            victims_in_window=self.in_window,
        )

    def plan(self) -> None:
        """Snapshot, decide with ``plan_reclaim``, stop the victims."""
        if not self.waiting:
            return
        model = self.run.model
        now = model.engine.now
        if not any(
            now - j.submit >= (self.tiers[TIERS[j.tier]].reclaim_after_seconds or 0)
            for j in self.waiting.values()
        ):
            return
        day = int(now // 86400)
        if day != self.day:
            self.day, self.today = day, 0
        window = int(now // self.rules.rate_window_seconds)
        if window != self.window:
            self.window, self.in_window = window, 0
        plan = plan_reclaim(self.snapshot(), self.tiers, self.rules)
        for reclaim in plan.reclaims:
            self.reclaims += 1
            self.victims_for[reclaim.job_id] = self.victims_for.get(reclaim.job_id, 0) + len(reclaim.victims)
            for victim in reclaim.victims:
                self.victims += 1
                self.today += 1
                self.in_window += 1
                self.last_stopped[victim.job_id] = now
                self.displaced[victim.job_id] = self.displaced.get(victim.job_id, frozenset()) | {
                    reclaim.job_id
                }
                job = self.running[victim.job_id]
                model.requeue_from_checkpoint(
                    job,
                    f"shareplane reclaim: stopped for {reclaim.job_id}",
                    resume_priority(self.tiers, job.priority),
                )


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
