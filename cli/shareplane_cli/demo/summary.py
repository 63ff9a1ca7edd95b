"""What the demo measured: utilization against hard partitions, waits by tier, GPU-hours, outcomes."""

from __future__ import annotations

from collections import Counter
from typing import Any

from shareplane.domain.config.shares import SchedulingMode, SharesConfig, Tier
from shareplane.domain.idle.policy import Act, Signal
from shareplane.domain.idle.record import IdleRecord
from shareplane.domain.jobs.lifecycle import gpus_per_instance
from shareplane.domain.shares.observation import percentile

from .run import LiveRun
from .usage import UsageTracker, instance_seconds, ledger, utilization
from .verdict import capacity_back, verdict
from .workload import INSTANCE_TYPE, DemoJob

DISPATCHED = ("SCHEDULED", "STARTING", "RUNNING")


def first_dispatch_ms(record: dict[str, Any]) -> int | None:
    """When the job was first dispatched (its first SCHEDULED): the end of its wait."""
    return next((h["at"] for h in record["history"] if h["status"] in DISPATCHED), None)


def job_tier(record: dict[str, Any], config: SharesConfig) -> Tier | None:
    """The tier the job was submitted in (its identifier's, else its priority's)."""
    return config.job_tier(record.get("shareIdentifier"), record.get("schedulingPriority"))


def waits_by_tier(records: list[dict[str, Any]], config: SharesConfig) -> dict[str, dict[str, float | None]]:
    """Queue wait (createdAt -> first dispatch) p50 / p95 in seconds, per tier, from the job records."""
    waits: dict[str, list[float]] = {tier.value: [] for tier in Tier}
    for record in records:
        tier = job_tier(record, config)
        start = first_dispatch_ms(record)
        if tier is not None and start is not None and record["createdAt"] is not None:
            waits[tier.value].append((start - record["createdAt"]) / 1000)
    return {tier: {"p50": percentile(w, 0.5), "p95": percentile(w, 0.95)} for tier, w in waits.items()}


#: Each check of the story as a sentence, as the table and the report say it (the JSON keeps the keys).
CHECK_LABELS = {
    "prodexp1_borrowed_beyond_entitlement": "ProdExp1 borrowed beyond its entitlement",
    "prodexp2_reached_its_entitlement": "ProdExp2 reached its entitlement",
    "highpri_started_within_its_slo": "HIGHPRI started within its SLO",
    "highpri_started_before_earlier_queued_work": "HIGHPRI started before its team's earlier queued work",
    "highpri_started_before_other_teams_earlier_queued_work": (
        "HIGHPRI started before other teams' earlier queued work"
    ),
}


def team_entitlements(config: SharesConfig) -> dict[str, int]:
    """Each team's entitled instances of the demo's instance type."""
    return {name: team.entitlement[INSTANCE_TYPE] for name, team in config.teams.items()}


def checks(run: LiveRun, jobs: list[DemoJob], config: SharesConfig) -> dict[str, bool]:
    """The story's claims, each checked on what actually happened (start = first dispatch)."""
    entitled = team_entitlements(config)
    peak = {team: max((u.get(team, 0) for _, u in run.tracker.timeline), default=0) for team in entitled}
    by_name = {r["jobName"]: r for r in run.records}
    team_of = {j.name: j.team for j in jobs}
    (high,) = [j for j in jobs if j.tier is Tier.HIGHPRI]
    high_created = by_name[high.name]["createdAt"]
    high_start = first_dispatch_ms(by_name[high.name])
    slo = config.tiers[Tier.HIGHPRI].wait_slo_seconds

    def queued_behind(name: str) -> bool:
        # Submitted before the HIGHPRI job and still waiting when it arrived.
        record = by_name[name]
        dispatched = first_dispatch_ms(record)
        return record["createdAt"] < high_created and (dispatched is None or dispatched >= high_created)

    def started_after_high(name: str) -> bool:
        dispatched = first_dispatch_ms(by_name[name])
        return high_start is not None and (dispatched is None or dispatched > high_start)

    earlier = [n for n in by_name if n != high.name and n in team_of and queued_behind(n)]
    return {
        "prodexp1_borrowed_beyond_entitlement": peak["ProdExp1"] > entitled["ProdExp1"],
        "prodexp2_reached_its_entitlement": peak["ProdExp2"] >= entitled["ProdExp2"],
        "highpri_started_within_its_slo": high_start is not None
        and (high_start - high_created) / 1000 <= slo,
        "highpri_started_before_earlier_queued_work": all(
            started_after_high(n) for n in earlier if team_of[n] == high.team
        ),
        "highpri_started_before_other_teams_earlier_queued_work": all(
            started_after_high(n) for n in earlier if team_of[n] != high.team
        ),
    }


def reclaim_summary(run: LiveRun) -> list[dict[str, Any]]:
    """Each reclaim: the waiting job, how long it had waited, and each victim's checkpoint age and loss."""
    return [
        {
            "job": r.waiting_name,
            "team": r.team,
            "tier": r.tier,
            "waited_seconds": r.waited_seconds,
            "dry_run": r.dry_run,
            "victims": [
                {
                    "job": v.job_name or v.job_id,
                    "team": v.team,
                    "tier": v.tier,
                    "instances": v.instances,
                    "checkpoint_age_seconds": v.checkpoint_age_seconds,
                    "minutes_lost": round(v.lost_instance_minutes / max(v.instances, 1), 1),
                    "instance_minutes_lost": v.lost_instance_minutes,
                }
                for v in r.victims
            ],
        }
        for r in run.reclaims
    ]


def summarize(
    mode: SchedulingMode, run: LiveRun, static: UsageTracker, jobs: list[DemoJob], config: SharesConfig
) -> dict[str, Any]:
    """The demo's JSON: the live run on soft quotas beside the same workload on hard partitions."""
    capacity = config.instance_types[INSTANCE_TYPE].capacity
    static_end = max(t for t, _ in static.timeline)
    gpus = gpus_per_instance(INSTANCE_TYPE)
    used = instance_seconds(run.tracker.timeline, 0, run.end)
    summary = {
        "mode": mode.value,
        "utilization": round(utilization(run.tracker.timeline, capacity, 0, run.end), 4),
        "static_partition_utilization": round(utilization(static.timeline, capacity, 0, static_end), 4),
        "makespan_hours": round(run.end / 3600, 2),
        "static_partition_makespan_hours": round(static_end / 3600, 2),
        "wait_seconds": waits_by_tier(run.records, config),
        "static_partition_wait_seconds": static_waits(static, jobs),
        "gpu_hours": {team: round(s * gpus / 3600, 1) for team, s in sorted(used.items())},
        # Hard partitions lend nothing: the ledger is the soft quotas' alone.
        "ledger": ledger(run.tracker.timeline, team_entitlements(config), run.end),
        "jobs": dict(sorted(Counter(r["status"] for r in run.records).items())),
        "preemptions": sum(r["preemptions"] for r in run.records),
        "capacity_requeues": sum(r["capacityRequeues"] for r in run.records),
        "reclaims": reclaim_summary(run),
        "cost": cost_summary(run, config),
        "idle": idle_summary(run, jobs),
        "capacity_back": capacity_back(run, jobs, config),
        "checks": checks(run, jobs, config),
    }
    # The answer first, in JSON as on the screen.
    return {"verdict": verdict(summary, config), **summary}


def first_running_seconds(record: dict[str, Any]) -> float | None:
    """When the job's last attempt began training (its last RUNNING), in epoch seconds."""
    times = [h["at"] for h in record["history"] if h["status"] == "RUNNING"]
    return max(times) / 1000 if times else None


def idle_summary(run: LiveRun, jobs: list[DemoJob]) -> dict[str, Any]:
    """What the idle detector did: jobs flagged idle, stopped, flagged while busy, GPU-hours given back.

    A job is flagged when a decision about it acted on the idle signal (an alert or a warning); busy
    means not scripted to idle. Reclaimed: for each stopped job, its GPUs x the scripted training it
    still had to do when it was stopped (all of it idle). Each stop names the waiting jobs dispatched
    next after it, and how long after: where its instances went.
    """
    scripted = {j.name: j for j in jobs if j.idle_after_minutes is not None}
    by_id = {r["jobId"]: r for r in run.records}
    idle = [d for d in run.idle if d.signal is Signal.IDLE]
    flagged = {d.job_id for d in idle}
    stops = {d.job_id: d for d in idle if d.act is Act.STOP and d.stopped}
    reclaimed = 0.0
    for job_id, stop in stops.items():
        record = by_id.get(job_id)
        job = scripted.get(record["jobName"]) if record else None
        started = first_running_seconds(record) if record else None
        if job is not None and started is not None:
            left = job.minutes * 60 - (stop.decided_at - started)
            reclaimed += stop.gpus * max(0.0, left) / 3600
    return {
        "jobs_flagged": len(flagged),
        "jobs_stopped": len(stops),
        "busy_jobs_flagged": sum(1 for j in flagged if by_id.get(j, {}).get("jobName") not in scripted),
        "reclaimed_gpu_hours": round(reclaimed, 1),
        "flagged": sorted(str(by_id.get(j, {}).get("jobName", j)) for j in flagged),
        "stops": [
            stop_summary(str(by_id.get(job_id, {}).get("jobName", job_id)), stop, run.records)
            for job_id, stop in sorted(stops.items())
        ],
    }


def stop_summary(name: str, stop: IdleRecord, records: list[dict[str, Any]]) -> dict[str, Any]:
    """One idle stop: the job, its GPUs, and the waiting jobs that took its instances, how long after."""
    taken_by, after = next_dispatch_from_the_queue(records, stop.decided_at)
    return {"job": name, "gpus": stop.gpus, "taken_by": taken_by, "taken_after_seconds": after}


WAITING = ("SUBMITTED", "PENDING", "RUNNABLE")


def next_dispatch_from_the_queue(records: list[dict[str, Any]], at: float) -> tuple[list[str], float | None]:
    """The jobs waiting at ``at`` (epoch seconds) that were dispatched first after it, and how long after.

    Instances freed at ``at`` stay free until the next dispatch, so that dispatch is the one that takes
    them (with whatever else freed meanwhile); none: no job was waiting, or none was dispatched again.
    """
    at_ms = at * 1000
    dispatched: dict[str, float] = {}
    for record in records:
        before = [h for h in record["history"] if h["at"] <= at_ms]
        if not before or before[-1]["status"] not in WAITING:
            continue
        after = [h["at"] for h in record["history"] if h["status"] == "SCHEDULED" and h["at"] > at_ms]
        if after:
            dispatched[str(record["jobName"])] = min(after)
    if not dispatched:
        return [], None
    first = min(dispatched.values())
    return sorted(n for n, t in dispatched.items() if t == first), round(first / 1000 - at, 1)


#: What the demo's cost means beside its GPU-hours (the report and docs/concepts/cost-and-budgets.md
#: say it too).
COST_NOTE = (
    "cost = SageMaker's BillableTimeInSeconds x instances x the on-demand price, per training job "
    "(every attempt). Billing runs from TrainingStartTime to TrainingEndTime, so instance provisioning "
    "is not billed: billable instance-hours are below the instance-hours the GPU-hours count, which "
    "hold an instance from the moment Batch schedules the job."
)


def cost_summary(run: LiveRun, config: SharesConfig) -> dict[str, Any]:
    """Cost per team from the attempts record_state costed, and the instance-hour price behind it."""
    usd: dict[str, float] = {}
    hours: dict[str, float] = {}
    for cost in {c.training_job_arn: c for c in run.costs}.values():
        team = cost.team or "none"
        usd[team] = usd.get(team, 0.0) + (cost.usd or 0.0)
        hours[team] = hours.get(team, 0.0) + cost.billable_instance_hours
    return {
        "by_team_usd": {team: round(v, 2) for team, v in sorted(usd.items())},
        "by_team_billable_instance_hours": {team: round(v, 2) for team, v in sorted(hours.items())},
        "instance_hour_usd": config.on_demand_price(INSTANCE_TYPE),
        "note": COST_NOTE,
    }


def static_waits(static: UsageTracker, jobs: list[DemoJob]) -> dict[str, dict[str, float | None]]:
    """Queue wait p50 / p95 by tier on the hard-partition baseline (submission -> first dispatch)."""
    submitted = {j.name: (j.tier.value, j.submit_minute * 60) for j in jobs}
    waits: dict[str, list[float]] = {tier.value: [] for tier in Tier}
    for view in static.jobs.values():
        if view.name in submitted and view.first_dispatch is not None:
            tier, at = submitted[view.name]
            waits[tier].append(view.first_dispatch - at)
    return {tier: {"p50": percentile(w, 0.5), "p95": percentile(w, 0.95)} for tier, w in waits.items()}
