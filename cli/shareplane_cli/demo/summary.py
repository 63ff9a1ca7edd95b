"""What the demo measured: utilization against hard partitions, waits by tier, GPU-hours, outcomes."""

from __future__ import annotations

from collections import Counter
from typing import Any

from shareplane.domain.config import SchedulingMode, SharesConfig, Tier
from shareplane.domain.lifecycle import gpus_per_instance
from shareplane.domain.share_observation import percentile

from .run import LiveRun
from .usage import UsageTracker, instance_seconds, utilization
from .workload import INSTANCE_TYPE, DemoJob

STARTED = ("STARTING", "RUNNING")
DISPATCHED = ("SCHEDULED", "STARTING", "RUNNING")


def first_start_ms(record: dict[str, Any]) -> int | None:
    """When the job first had its instances (first STARTING or RUNNING in its history)."""
    return next((h["at"] for h in record["history"] if h["status"] in STARTED), None)


def waits_by_tier(records: list[dict[str, Any]], config: SharesConfig) -> dict[str, dict[str, float | None]]:
    """Queue wait (createdAt -> first start) p50 / p95 in seconds, per tier, from the job records."""
    waits: dict[str, list[float]] = {tier.value: [] for tier in Tier}
    for record in records:
        tier = config.tier_for_priority(record["schedulingPriority"])
        start = first_start_ms(record)
        if tier is not None and start is not None and record["createdAt"] is not None:
            waits[tier.value].append((start - record["createdAt"]) / 1000)
    return {tier: {"p50": percentile(w, 0.5), "p95": percentile(w, 0.95)} for tier, w in waits.items()}


def checks(run: LiveRun, jobs: list[DemoJob], config: SharesConfig) -> dict[str, bool]:
    """The story's claims, each checked on what actually happened."""
    entitled = {name: team.entitlement[INSTANCE_TYPE] for name, team in config.teams.items()}
    peak = {team: max((u.get(team, 0) for _, u in run.tracker.timeline), default=0) for team in entitled}
    starts = {r["jobName"]: first_start_ms(r) for r in run.records}
    dispatched = {
        r["jobName"]: next((h["at"] for h in r["history"] if h["status"] in DISPATCHED), None)
        for r in run.records
    }
    high = [j.name for j in jobs if j.tier is Tier.HIGHPRI]
    earlier = [
        j.name for j in jobs if j.team == "ProdExp1" and j.tier is not Tier.HIGHPRI and j.submit_minute > 0
    ]
    high_start = min(starts[n] or 0 for n in high)
    high_created = min(r["createdAt"] for r in run.records if r["jobName"] in high)
    # Work dispatched before the HIGHPRI job arrived was not queued behind it: in quota mode a MIDPRI
    # job preempts its team's LOWPRI work at once (in-share preemption) and may start just after.
    return {
        "prodexp1_borrowed_beyond_entitlement": peak["ProdExp1"] > entitled["ProdExp1"],
        "prodexp2_reached_its_entitlement": peak["ProdExp2"] >= entitled["ProdExp2"],
        "highpri_started_before_earlier_queued_work": all(
            starts[n] is None or (dispatched[n] or 0) < high_created or starts[n] > high_start
            for n in earlier  # type: ignore[operator]
        ),
    }


def summarize(
    mode: SchedulingMode, run: LiveRun, static: UsageTracker, jobs: list[DemoJob], config: SharesConfig
) -> dict[str, Any]:
    """The demo's JSON: the live run on soft quotas beside the same workload on hard partitions."""
    capacity = config.instance_types[INSTANCE_TYPE].capacity
    static_end = max(t for t, _ in static.timeline)
    gpus = gpus_per_instance(INSTANCE_TYPE)
    used = instance_seconds(run.tracker.timeline, 0, run.end)
    return {
        "mode": mode.value,
        "utilization": round(utilization(run.tracker.timeline, capacity, 0, run.end), 4),
        "static_partition_utilization": round(utilization(static.timeline, capacity, 0, static_end), 4),
        "makespan_hours": round(run.end / 3600, 2),
        "static_partition_makespan_hours": round(static_end / 3600, 2),
        "wait_seconds": waits_by_tier(run.records, config),
        "static_partition_wait_seconds": static_waits(static, jobs),
        "gpu_hours": {team: round(s * gpus / 3600, 1) for team, s in sorted(used.items())},
        "jobs": dict(sorted(Counter(r["status"] for r in run.records).items())),
        "preemptions": sum(r["preemptions"] for r in run.records),
        "capacity_requeues": sum(r["capacityRequeues"] for r in run.records),
        "checks": checks(run, jobs, config),
    }


def static_waits(static: UsageTracker, jobs: list[DemoJob]) -> dict[str, dict[str, float | None]]:
    """Queue wait p50 / p95 by tier on the hard-partition baseline (submission -> first start)."""
    submitted = {j.name: (j.tier.value, j.submit_minute * 60) for j in jobs}
    waits: dict[str, list[float]] = {tier.value: [] for tier in Tier}
    for view in static.jobs.values():
        if view.name in submitted and view.first_start is not None:
            tier, at = submitted[view.name]
            waits[tier].append(view.first_start - at)
    return {tier: {"p50": percentile(w, 0.5), "p95": percentile(w, 0.95)} for tier, w in waits.items()}
