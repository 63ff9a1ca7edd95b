"""The demo's answer first: a few sentences read off its summary, before any table.

Utilization against hard partitions, HIGHPRI's wait against its SLO, who got its capacity back and
when, and why a tier waits longer under soft quotas when it does. Every figure is the summary's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shareplane.domain.config.shares import SchedulingMode, SharesConfig, Tier
from shareplane.domain.explain.durations import duration_text

from .run import LiveRun
from .workload import INSTANCE_TYPE, DemoJob

#: How each mode gives lent instances back to the team entitled to them.
GIVEN_BACK = {
    SchedulingMode.FAIRSHARE.value: "fair share gives them back only as the borrowing jobs end",
    SchedulingMode.QUOTA.value: "quota share gives them back by preempting the borrowing jobs",
}


def capacity_back(run: LiveRun, jobs: list[DemoJob], config: SharesConfig) -> dict[str, dict[str, Any]]:
    """For each team: when its first job came (virtual seconds), how many of its entitled instances the
    other teams held then, and how long until it held its entitlement (None: it never did)."""
    entitled = {name: team.entitlement[INSTANCE_TYPE] for name, team in config.teams.items()}
    out: dict[str, dict[str, Any]] = {}
    for team, own in entitled.items():
        arrivals = [run.submitted_at[j.name] for j in jobs if j.team == team and j.name in run.submitted_at]
        if not arrivals:
            continue
        first = min(arrivals)
        held_then = next((u for t, u in reversed(run.tracker.timeline) if t <= first), {})
        free = config.instance_types[INSTANCE_TYPE].capacity - sum(held_then.values())
        lent = max(0, own - held_then.get(team, 0) - free)
        reached = next((t for t, u in run.tracker.timeline if t >= first and u.get(team, 0) >= own), None)
        out[team] = {
            "first_job_at_seconds": first,
            "lent_at_arrival": lent,
            "seconds_to_entitlement": None if reached is None else reached - first,
        }
    return out


def verdict(summary: Mapping[str, Any], config: SharesConfig) -> list[str]:
    """The demo's answer in sentences, most important first."""
    lines = [
        f"Soft quotas kept {summary['utilization']:.1%} of the instances busy against "
        f"{summary['static_partition_utilization']:.1%} under hard 60/40 partitions "
        f"({(summary['utilization'] - summary['static_partition_utilization']) * 100:+.1f} points), and "
        f"finished the workload in {summary['makespan_hours']} h against "
        f"{summary['static_partition_makespan_hours']} h.",
    ]
    slo = config.tiers[Tier.HIGHPRI].wait_slo_seconds
    high = summary["wait_seconds"][Tier.HIGHPRI.value]["p95"]
    if high is None:
        lines.append("HIGHPRI never started.")
    else:
        met = "within" if high <= slo else "PAST"
        hard = summary["static_partition_wait_seconds"][Tier.HIGHPRI.value]["p95"]
        lines.append(
            f"HIGHPRI started {duration_text(high)} after submission, {met} its {duration_text(slo)} SLO "
            f"(hard partitions: {'never started' if hard is None else duration_text(hard)})."
        )
    for team, back in summary["capacity_back"].items():
        if back["lent_at_arrival"] == 0:
            continue
        after = back["seconds_to_entitlement"]
        held = (
            "never held its entitlement"
            if after is None
            else f"held its entitlement {duration_text(after)} later"
        )
        lent = back["lent_at_arrival"]
        lines.append(f"{team} found {lent} of its instances lent out when its first job came, and {held}.")
    lines += _slower_tiers(summary)
    return lines


def _slower_tiers(summary: Mapping[str, Any]) -> list[str]:
    """Why a tier waits longer under soft quotas than under hard partitions, for each tier that does."""
    lenders = [team for team, back in summary["capacity_back"].items() if back["lent_at_arrival"]]
    lines = []
    for tier, wait in summary["wait_seconds"].items():
        soft, hard = wait["p50"], summary["static_partition_wait_seconds"][tier]["p50"]
        if soft is None or hard is None or soft <= hard or tier == Tier.HIGHPRI.value or not lenders:
            continue
        waits = f"p50 {duration_text(soft)} against {duration_text(hard)}"
        lines.append(
            f"{tier} waits longer under soft quotas ({waits}): "
            f"{' and '.join(lenders)}'s idle instances were lent out and {GIVEN_BACK[summary['mode']]}, "
            f"so {tier} work arriving then waits for them, where hard partitions kept them idle and free."
        )
    return lines
