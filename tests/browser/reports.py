"""Small deterministic reports for the browser tests, made by the code that makes the real ones.

The what-if report: every policy on a short synthetic trace. The demo report: the blog's script on
the pure model (no local stack, so it takes about a second), soft quotas as the what-if's ``quota``
policy beside hard partitions as the demo's own baseline, measured by the demo's own tracker, and
job records in the shape ``shareplane jobs --output json`` gives the demo.
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
from shareplane_cli.demo.summary import COST_NOTE, static_waits
from shareplane_cli.demo.usage import FINAL, UsageTracker, instance_seconds, utilization
from shareplane_cli.demo.verdict import verdict
from shareplane_cli.demo.workload import INSTANCE_TYPE, blog_workload

from tests.conftest import REPO
from tests.sim.traces import synthetic_trace


@dataclass(frozen=True)
class Report:
    """A written report, and the entitlement each share's dashed line must show."""

    path: Path
    entitlements: dict[str, float]


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

    def __init__(self, now: Any, team_of: Any) -> None:
        self.now, self.team_of = now, team_of
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
    records = JobRecords(lambda: run.model.engine.now, team_of)
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
        "jobs": dict(sorted(Counter(r["status"] for r in records.records.values()).items())),
        "preemptions": live.preemptions,
        "capacity_requeues": 0,
        "reclaims": [],
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
    return Report(path, {team: float(n) for team, n in entitlements.items()})
