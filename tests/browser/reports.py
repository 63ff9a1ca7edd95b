"""Small deterministic reports for the browser tests, made by the code that makes the real ones.

The what-if report: every policy on a short synthetic trace. The demo report: the blog's script on
the pure model (no local stack, so it takes about a second), soft quotas as the what-if's ``quota``
policy beside hard partitions as the demo's own baseline, measured by the demo's own tracker, and
job records in the shape ``shareplane jobs --output json`` gives the demo. The pure model has no
reclaim and no idle detector, so their parts of the summary are grafted on: the first busy LOWPRI
job running when the HIGHPRI job arrived is named its reclaim victim, and the stuck job the idle
detector's stop at its end; the report draws and tabulates them as it does the live demo's.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusim.report import write_report as write_whatif_report
from gpusim.whatif.config import Policy, SharesMapping, WhatIfConfig
from gpusim.whatif.run import PolicyRun, run_whatif
from gpusim.whatif.scenario import build_scenario
from shareplane.domain.config.shares import SchedulingMode
from shareplane.domain.jobs.lifecycle import gpus_per_instance
from shareplane_cli.config_file import load_config
from shareplane_cli.demo.baseline import partition_scenario, run_static_partitions
from shareplane_cli.demo.report import write_report as write_demo_report
from shareplane_cli.demo.summary import COST_NOTE, next_dispatch_from_the_queue, static_waits
from shareplane_cli.demo.usage import FINAL, UsageTracker, instance_seconds, ledger, utilization
from shareplane_cli.demo.verdict import verdict
from shareplane_cli.demo.workload import INSTANCE_TYPE, blog_workload

from tests.conftest import REPO
from tests.sim.traces import synthetic_trace


@dataclass(frozen=True)
class Report:
    """A written report, the entitlement each share's dashed line must show, and the demo's summary."""

    path: Path
    entitlements: dict[str, float]
    capacity: float = 0.0
    summary: dict[str, Any] | None = None


def whatif_report(directory: Path) -> Report:
    """Every what-if policy on 200 synthetic jobs of four teams at 1.3 times capacity, seed 3."""
    config = WhatIfConfig(shares=SharesMapping(top_k=3), target_load=1.3, report_buckets=80)
    scenario = build_scenario(synthetic_trace(count=200), config, seed=3)
    path = write_whatif_report(run_whatif(scenario, list(Policy), seed=3), directory)
    entitled = {
        s: e * scenario.gpus_per_unit for s, e in zip(scenario.shares, scenario.entitlements, strict=True)
    }
    return Report(path, entitled)


class JobRecords:
    """A model listener keeping each job as the demo reads it back from the jobs table."""

    def __init__(self, now: Any, team_of: Any, jobs: dict[str, Any]) -> None:
        self.now, self.team_of, self.jobs = now, team_of, jobs
        self.records: dict[str, dict[str, Any]] = {}

    def __call__(self, event: dict[str, Any]) -> None:
        if event["detail-type"] != "Batch Service Job State Change":
            return
        detail, at = event["detail"], round(self.now() * 1000)
        share = detail.get("shareIdentifier") or detail.get("quotaShareName")
        record = self.records.setdefault(
            detail["jobArn"],
            {
                "jobName": detail.get("jobName"),
                "team": self.team_of(share),
                "tier": self.jobs[detail["jobName"]].tier.value,
                "instanceCount": self.jobs[detail["jobName"]].instances,
                "shareIdentifier": detail.get("shareIdentifier"),
                "quotaShareName": detail.get("quotaShareName"),
                "createdAt": at,
                "history": [],
                "stoppedAt": None,
            },
        )
        record["status"] = detail["status"]
        record["history"].append({"status": detail["status"], "at": at})
        if detail["status"] in FINAL:
            record["stoppedAt"] = at


def demo_report(directory: Path) -> Report:
    """The demo's report of the blog's script, soft quotas played by the what-if's ``quota`` policy."""
    config = load_config(REPO / "config" / "shares.yaml")
    jobs = blog_workload()
    capacity = config.instance_types[INSTANCE_TYPE].capacity
    entitlements = {name: team.entitlement[INSTANCE_TYPE] for name, team in config.teams.items()}
    team_of = lambda share: config.team_for_share(share) or share  # noqa: E731
    run = PolicyRun(partition_scenario(jobs, config), Policy.QUOTA)
    live = UsageTracker(lambda: run.model.engine.now, {j.name: j.instances for j in jobs}, team_of)
    records = JobRecords(lambda: run.model.engine.now, team_of, {j.name: j for j in jobs})
    run.model.subscribe(live)
    run.model.subscribe(records)
    result = run.replay()
    static = run_static_partitions(jobs, config)
    live_end = max(t for t, _ in live.timeline)
    static_end = max(t for t, _ in static.timeline)
    gpus = gpus_per_instance(INSTANCE_TYPE)
    price = config.on_demand_price(INSTANCE_TYPE)
    peak = {team: max(u.get(team, 0) for _, u in live.timeline) for team in entitlements}
    share_team = {config.teams[t].share: t for t in config.teams}
    summary = {
        "mode": SchedulingMode.QUOTA.value,
        "utilization": round(utilization(live.timeline, capacity, 0, live_end), 4),
        "static_partition_utilization": round(utilization(static.timeline, capacity, 0, static_end), 4),
        "makespan_hours": round(live_end / 3600, 2),
        "static_partition_makespan_hours": round(static_end / 3600, 2),
        "wait_seconds": static_waits(live, jobs),
        "static_partition_wait_seconds": static_waits(static, jobs),
        "gpu_hours": {
            t: round(s * gpus / 3600, 1)
            for t, s in sorted(instance_seconds(live.timeline, 0, live_end).items())
        },
        "ledger": ledger(live.timeline, entitlements, live_end),
        "jobs": dict(sorted(Counter(r["status"] for r in records.records.values()).items())),
        "preemptions": live.preemptions,
        "capacity_requeues": 0,
        "reclaims": grafted_reclaims(list(records.records.values()), jobs),
        "idle": grafted_idle(list(records.records.values()), gpus),
        "cost": {
            "by_team_usd": {share_team.get(s, s): round(v, 2) for s, v in sorted(result.cost_usd.items())},
            "by_team_billable_instance_hours": {
                share_team.get(s, s): round(v / price, 2) for s, v in sorted(result.cost_usd.items())
            },
            "instance_hour_usd": price,
            "note": COST_NOTE,
        },
        "checks": {
            "prodexp1_borrowed_beyond_entitlement": peak["ProdExp1"] > entitlements["ProdExp1"],
            "prodexp2_reached_its_entitlement": peak["ProdExp2"] >= entitlements["ProdExp2"],
        },
        # This replay keeps no submission times: no team is said to have found its instances lent.
        "capacity_back": {},
    }
    summary = {"verdict": verdict(summary, config), **summary}
    path = write_demo_report(
        directory, summary, live, static, list(records.records.values()), capacity, gpus, entitlements
    )
    return Report(path, {team: float(n) for team, n in entitlements.items()}, capacity, summary)


def grafted_reclaims(records: list[dict[str, Any]], jobs: list[Any]) -> list[dict[str, Any]]:
    """The HIGHPRI job's reclaim, as the live demo summarizes it: the first busy LOWPRI job then running."""
    (high,) = [j for j in jobs if j.tier.value == "HIGHPRI"]
    by_name = {r["jobName"]: r for r in records}
    arrived = by_name[high.name]["createdAt"]
    running = [
        r
        for r in records
        if r["tier"] == "LOWPRI"
        and "stuck" not in r["jobName"]
        and r["stoppedAt"] > arrived
        and any(h["status"] == "RUNNING" and h["at"] <= arrived for h in r["history"])
    ]
    victim = min(running, key=lambda r: r["createdAt"])
    size = {j.name: j.instances for j in jobs}
    return [
        {
            "job": high.name,
            "team": high.team,
            "tier": "HIGHPRI",
            "waited_seconds": 300.0,
            "dry_run": False,
            "victims": [
                {
                    "job": victim["jobName"],
                    "team": victim["team"],
                    "tier": "LOWPRI",
                    "instances": size[victim["jobName"]],
                    "checkpoint_age_seconds": 540.0,
                    "minutes_lost": 9.0,
                    "instance_minutes_lost": 9.0 * size[victim["jobName"]],
                }
            ],
        }
    ]


def grafted_idle(records: list[dict[str, Any]], gpus: int) -> dict[str, Any]:
    """The idle detector's summary: the stuck job flagged and stopped at its end, its instances' takers."""
    (stuck,) = [r for r in records if "stuck" in r["jobName"]]
    taken_by, after = next_dispatch_from_the_queue(records, stuck["stoppedAt"] / 1000)
    return {
        "jobs_flagged": 1,
        "jobs_stopped": 1,
        "busy_jobs_flagged": 0,
        "reclaimed_gpu_hours": 5 * gpus * 2.0,
        "flagged": [stuck["jobName"]],
        "stops": [
            {"job": stuck["jobName"], "gpus": 5 * gpus, "taken_by": taken_by, "taken_after_seconds": after}
        ],
    }
