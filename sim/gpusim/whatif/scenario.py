"""A trace made a ``Scenario``: shares, entitlements and capacity, and each job's seeded tier, failure
and checkpointing (``build_scenario``; ``scenario_of`` for crafted jobs; ``seed_idle``)."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from shareplane.domain.config.shares import RebalanceDesign
from shareplane.domain.errors import InvalidInputError

from ..trace import TraceJob
from .config import TIERS, RebalanceRun, SharesMapping, WhatIfConfig


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


def with_rebalance(scenario: Scenario, run: RebalanceRun) -> Scenario:
    """The same scenario (jobs, capacity, entitlements) with other rebalancer settings."""
    return replace(scenario, config=scenario.config.model_copy(update={"rebalance": run}))


def with_design(scenario: Scenario, design: RebalanceDesign) -> Scenario:
    """The same scenario with the rebalancer's design switched, its other settings kept."""
    rebalance = scenario.config.rebalance
    rules = rebalance.rules.model_copy(update={"design": design})
    return with_rebalance(scenario, rebalance.model_copy(update={"rules": rules}))


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


def extend_scenario(scenario: Scenario, copies: int) -> Scenario:
    """The scenario followed by ``copies`` copies of its jobs, the k-th shifted by k x its window (the
    trace's span): "the world keeps submitting" after the trace ends, at the trace's own rate.

    A copy keeps every attribute of its job (team's share, size, tier, priority, run time, failure,
    checkpointing, idleness) under a new name, ``<name>-copy<k>``; the window grows to cover the
    copies, so the meter measures the whole replay. Shares, entitlements and capacity are the same.
    """
    if copies < 0:
        raise InvalidInputError("copies", f"{copies}", "append 0 or more copies")
    if copies == 0:
        return scenario
    span = scenario.window
    if span <= 0:
        raise InvalidInputError("window", f"{span}", "extend a scenario whose trace spans some time")
    appended = [
        replace(job, name=f"{job.name}-copy{k}", submit=job.submit + k * span)
        for k in range(1, copies + 1)
        for job in scenario.jobs
    ]
    names = {j.name for j in scenario.jobs}
    if any(j.name in names for j in appended):
        raise InvalidInputError("jobs", "a job is already named as a copy (<name>-copy<k>)", "rename it")
    # Stable: a copy's first job may arrive with the original's last; the original's stays first.
    jobs = sorted((*scenario.jobs, *appended), key=lambda j: j.submit)
    return replace(scenario, jobs=tuple(jobs), window=span * (copies + 1))
