"""The demo's HTML report: one self-contained file of plotly charts (plotly.js inline) and tables.

The machine it runs on may have no network, so nothing is fetched: gpusim's ``html_page`` inlines
the plotly.js bundle the plotly wheel ships.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# plotly ships no type hints: its figures are untyped here as they are in gpusim's reports.
import plotly.graph_objects as go  # type: ignore[import-untyped]
from gpusim.html_page import COLORS, chart, duration, page, table
from plotly.subplots import make_subplots  # type: ignore[import-untyped]

from .usage import UsageTracker, instance_seconds

FAILED_OUTLINE = "#d62728"


@dataclass(frozen=True)
class JobBar:
    """One job on the timeline: from its first start to its stop, in seconds since the first submission."""

    name: str
    team: str
    start: float
    stop: float
    status: str


def _color(team: str, teams: Sequence[str]) -> str:
    return COLORS[teams.index(team) % len(COLORS)] if team in teams else "#999999"


def usage_steps(tracker: UsageTracker, team: str, end: float) -> tuple[list[float], list[int]]:
    """The team's instances in use, in hours, each step drawn from its start to the next change.

    Both ends of every step are points, so a hover anywhere along a step reads that step's count
    (with one point per change, the nearest point could be the next step's).
    """
    hours: list[float] = []
    counts: list[int] = []
    changes = [t for t, _ in tracker.timeline[1:]] + [
        max(end, tracker.timeline[-1][0] if tracker.timeline else 0)
    ]
    for (t, use), until in zip(tracker.timeline, changes, strict=True):
        hours += [t / 3600, until / 3600]
        counts += [use.get(team, 0)] * 2
    return hours, counts


def usage_chart(
    mode: str,
    live: UsageTracker,
    static: UsageTracker,
    teams: Sequence[str],
    entitlements: Mapping[str, int],
    capacity: int,
    end: float,
) -> str:
    """Instances in use per team, soft quotas beside hard partitions, each team's entitlement dashed."""
    fig = make_subplots(
        rows=1,
        cols=2,
        shared_yaxes=True,
        horizontal_spacing=0.04,
        subplot_titles=(f"Soft quotas ({mode})", "Hard partitions"),
    )
    for col, tracker in ((1, live), (2, static)):
        for team in teams:
            color = _color(team, teams)
            hours, counts = usage_steps(tracker, team, end)
            fig.add_trace(
                go.Scatter(
                    x=hours,
                    y=counts,
                    mode="lines",
                    line={"color": color, "width": 2},
                    fill="tozeroy",
                    opacity=0.9,
                    name=team,
                    legendgroup=team,
                    showlegend=col == 1,
                    hovertemplate=f"{html.escape(team)}: %{{y}} instances at %{{x:.2f}} h<extra></extra>",
                ),
                row=1,
                col=col,
            )
            entitled = entitlements.get(team, 0)
            fig.add_trace(
                go.Scatter(
                    x=[0, end / 3600],
                    y=[entitled, entitled],
                    mode="lines",
                    line={"color": color, "width": 2, "dash": "dash"},
                    name=f"{team} entitlement",
                    legendgroup=f"{team} entitlement",
                    showlegend=col == 1,
                    meta=["entitlement", team],
                    hovertemplate=f"{html.escape(team)} entitled to {entitled} instances<extra></extra>",
                ),
                row=1,
                col=col,
            )
        fig.add_trace(
            go.Scatter(
                x=[0, end / 3600],
                y=[capacity, capacity],
                mode="lines",
                line={"color": "#222", "width": 1.5, "dash": "dot"},
                name="capacity",
                legendgroup="capacity",
                showlegend=col == 1,
                hovertemplate=f"capacity {capacity} instances<extra></extra>",
            ),
            row=1,
            col=col,
        )
    fig.update_xaxes(title_text="virtual hours", range=[0, end / 3600])
    fig.update_yaxes(title_text="instances in use", range=[0, capacity * 1.08], row=1, col=1)
    fig.update_layout(
        title="Instances in use by team, against each team's entitlement (dashed) and the capacity (dotted)",
        height=430,
        hovermode="x unified",
        legend={"orientation": "h", "y": -0.22},
    )
    return chart(fig, "usage")


def wait_chart(summary: Mapping[str, Any]) -> str:
    """Queue wait per tier: p50 and p95 with soft quotas beside hard partitions, in minutes."""
    tiers = list(summary["wait_seconds"])
    # p95 in a lighter shade of its p50's color (a shade, not transparency, so the legend shows it too)
    series = (
        ("p50 soft quotas", summary["wait_seconds"], "p50", COLORS[0]),
        ("p95 soft quotas", summary["wait_seconds"], "p95", "#B2B7FC"),
        ("p50 hard partitions", summary["static_partition_wait_seconds"], "p50", COLORS[1]),
        ("p95 hard partitions", summary["static_partition_wait_seconds"], "p95", "#F7AA9D"),
    )
    fig = go.Figure()
    for name, waits, quantile, color in series:
        seconds = [waits[t][quantile] for t in tiers]
        fig.add_trace(
            go.Bar(
                x=tiers,
                y=[(s or 0.0) / 60 for s in seconds],
                name=name,
                marker={"color": color},
                text=[duration(s) for s in seconds],
                textposition="outside",
                hovertemplate=f"{name} %{{x}}: %{{text}}<extra></extra>",
            )
        )
    fig.update_layout(
        title="Queue wait by priority tier (submission to first dispatch)",
        barmode="group",
        yaxis_title="minutes",
        height=400,
    )
    return chart(fig, "waits")


def timeline_chart(bars: Sequence[JobBar], teams: Sequence[str]) -> str:
    """A job timeline: one bar per job from first start to stop, colored by team; failed jobs outlined red."""
    fig = go.Figure()
    for team in [*teams, *sorted({b.team for b in bars} - set(teams))]:
        mine = [b for b in bars if b.team == team]
        if not mine:
            continue
        fig.add_trace(
            go.Bar(
                orientation="h",
                y=[b.name for b in mine],
                x=[(b.stop - b.start) / 3600 for b in mine],
                base=[b.start / 3600 for b in mine],
                name=team,
                marker={
                    "color": _color(team, teams),
                    "line": {
                        "color": [
                            FAILED_OUTLINE if b.status == "FAILED" else _color(team, teams) for b in mine
                        ],
                        "width": [3 if b.status == "FAILED" else 0 for b in mine],
                    },
                },
                customdata=[[b.status, b.start / 3600, b.stop / 3600, (b.stop - b.start) / 60] for b in mine],
                hovertemplate=(
                    "%{y} (" + html.escape(team) + "): %{customdata[0]}<br>"
                    "%{customdata[1]:.2f} h to %{customdata[2]:.2f} h "
                    "(%{customdata[3]:.0f} min)<extra></extra>"
                ),
            )
        )
    fig.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=[b.name for b in bars])
    fig.update_layout(
        title="Job timeline with soft quotas (first start to stop; red outline: failed)",
        xaxis_title="virtual hours",
        height=max(320, 120 + 16 * len(bars)),
        bargap=0.25,
    )
    return chart(fig, "timeline")


def headline_table(summary: Mapping[str, Any], capacity: int) -> str:
    """Utilization and makespan, soft quotas beside hard partitions."""
    return table(
        ["", f"soft quotas ({summary['mode']})", "hard partitions"],
        [
            (
                f"GPU utilization (instance-hours used / {capacity} x makespan)",
                f"{summary['utilization']:.2%}",
                f"{summary['static_partition_utilization']:.2%}",
            ),
            (
                "makespan",
                f"{summary['makespan_hours']:.2f} h",
                f"{summary['static_partition_makespan_hours']:.2f} h",
            ),
        ],
        caption="Same workload, two ways to share the cluster",
    )


def team_table(
    summary: Mapping[str, Any],
    live: UsageTracker,
    static: UsageTracker,
    teams: Sequence[str],
    entitlements: Mapping[str, int],
    gpus_per_instance: int,
) -> str:
    """Per team: entitlement, peak and mean instances in use, both ways, and GPU-hours."""
    live_end = summary["makespan_hours"] * 3600
    static_end = summary["static_partition_makespan_hours"] * 3600
    live_used = instance_seconds(live.timeline, 0, live_end)
    static_used = instance_seconds(static.timeline, 0, static_end)
    rows, marks = [], []
    for team in teams:
        entitled = entitlements.get(team, 0)
        peak_live = max((use.get(team, 0) for _, use in live.timeline), default=0)
        peak_static = max((use.get(team, 0) for _, use in static.timeline), default=0)
        mean_live = live_used.get(team, 0.0) / live_end if live_end else 0.0
        mean_static = static_used.get(team, 0.0) / static_end if static_end else 0.0
        rows.append(
            (
                team,
                entitled,
                peak_live,
                peak_static,
                f"{mean_live:.1f} ({mean_live / entitled:.0%})" if entitled else f"{mean_live:.1f}",
                f"{mean_static:.1f} ({mean_static / entitled:.0%})" if entitled else f"{mean_static:.1f}",
                f"{summary['gpu_hours'].get(team, 0.0):,.1f}",
                f"{static_used.get(team, 0.0) * gpus_per_instance / 3600:,.1f}",
            )
        )
        marks.append(("", "", "good" if peak_live > entitled else "", "", "", "", "", ""))
    return table(
        [
            "team",
            "entitled instances",
            "peak in use, soft",
            "peak in use, hard",
            "mean in use, soft (of entitlement)",
            "mean in use, hard (of entitlement)",
            "GPU-hours, soft",
            "GPU-hours, hard",
        ],
        rows,
        caption="Per-team utilization (peak in green: borrowed beyond its entitlement)",
        classes=marks,
    )


def wait_table(summary: Mapping[str, Any]) -> str:
    """Waits per tier, soft quotas beside hard partitions."""
    soft, hard = summary["wait_seconds"], summary["static_partition_wait_seconds"]
    return table(
        ["tier", "p50 soft", "p95 soft", "p50 hard", "p95 hard"],
        (
            (
                tier,
                duration(soft[tier]["p50"]),
                duration(soft[tier]["p95"]),
                duration(hard[tier]["p50"]),
                duration(hard[tier]["p95"]),
            )
            for tier in soft
        ),
        caption="Waits per tier (submission to first dispatch)",
    )


def outcome_table(summary: Mapping[str, Any]) -> str:
    """How the jobs ended, what Batch did to them, and the story's checks."""
    rows: list[tuple[str, str]] = [(f"jobs {status}", str(n)) for status, n in summary["jobs"].items()]
    rows += [
        ("preemptions", str(summary["preemptions"])),
        ("capacity requeues", str(summary["capacity_requeues"])),
    ]
    checks = [(check.replace("_", " "), "yes" if ok else "NO") for check, ok in summary["checks"].items()]
    return table(["outcome", "count"], rows, caption="Jobs") + table(
        ["the story's claim, checked on what happened", "held"],
        checks,
        caption="Checks",
        classes=[("", "good" if ok == "yes" else "bad") for _, ok in checks],
    )


def reclaim_table(reclaims: Sequence[Mapping[str, Any]]) -> str:
    """One row per victim: which waiting job it was stopped for, its checkpoint's age, the work lost."""
    if not reclaims:
        return "<h2>Reclaims</h2><p>None: no job waited past its tier's reclaim threshold.</p>"
    rows = [
        (
            f"{r['job']} ({r['team']}, {r['tier']})",
            f"{r['waited_seconds'] / 60:.1f}",
            f"{v['job']} ({v['team']}, {v['tier']}, {v['instances']} instances)",
            "-" if v["checkpoint_age_seconds"] is None else f"{v['checkpoint_age_seconds'] / 60:.1f}",
            f"{v['minutes_lost']:.1f}",
        )
        for r in reclaims
        for v in r["victims"]
    ]
    return "<h2>Reclaims</h2>" + table(
        ["waiting job", "waited (min)", "victim", "checkpoint age (min)", "minutes lost"], rows
    )


def cost_table(cost: Mapping[str, Any], gpu_hours: Mapping[str, float], gpus_per_instance: int) -> str:
    """Cost per team beside the instance-hours the GPU-hours count, and why the two differ."""
    price = cost.get("instance_hour_usd")
    rows = [
        (
            team,
            f"{gpu_hours.get(team, 0.0):,.1f}",
            f"{gpu_hours.get(team, 0.0) / max(gpus_per_instance, 1):,.1f}",
            f"{cost['by_team_billable_instance_hours'].get(team, 0.0):,.2f}",
            f"{usd:,.2f}",
        )
        for team, usd in cost["by_team_usd"].items()
    ]
    priced = f" at {price} USD per instance-hour" if price else ""
    return (
        f"<h2>Cost per team{html.escape(priced)}</h2>"
        + table(["team", "GPU-hours", "instance-hours held", "billable instance-hours", "cost (USD)"], rows)
        + f'<p class="note">{html.escape(str(cost["note"]))}</p>'
    )


def job_bars(records: Sequence[Mapping[str, Any]]) -> list[JobBar]:
    """Each job that started and stopped, from its first start to its stop, by submission order."""
    if not records:
        return []
    origin = min(r["createdAt"] for r in records)
    bars = []
    for r in sorted(records, key=lambda r: r["createdAt"]):
        starts = [h["at"] for h in r["history"] if h["status"] in ("STARTING", "RUNNING")]
        if starts and r["stoppedAt"]:
            bars.append(
                JobBar(
                    r["jobName"],
                    r["team"] or r["shareIdentifier"] or r["quotaShareName"],
                    (starts[0] - origin) / 1000,
                    (r["stoppedAt"] - origin) / 1000,
                    r["status"],
                )
            )
    return bars


def write_report(
    directory: Path,
    summary: Mapping[str, Any],
    live: UsageTracker,
    static: UsageTracker,
    records: Sequence[Mapping[str, Any]],
    capacity: int,
    gpus_per_instance: int,
    entitlements: Mapping[str, int],
) -> Path:
    """Write index.html (charts and tables of the summary) into ``directory``; returns its path."""
    teams = sorted({j.team for j in live.jobs.values()} | set(entitlements))
    end = max(summary["makespan_hours"], summary["static_partition_makespan_hours"]) * 3600
    mode = summary["mode"]
    body = "".join(
        [
            f"<h1>shareplane demo: {html.escape(mode)} on {capacity} instances</h1>",
            '<ul class="verdict">'
            + "".join(f"<li>{html.escape(line)}</li>" for line in summary["verdict"])
            + "</ul>",
            f'<p class="lead">GPU utilization <b>{summary["utilization"]:.2%}</b> with soft quotas against '
            f"<b>{summary['static_partition_utilization']:.2%}</b> with hard partitions, same workload. "
            "Hover a chart for values; drag to zoom, double-click to reset.</p>",
            headline_table(summary, capacity),
            usage_chart(mode, live, static, teams, entitlements, capacity, end),
            team_table(summary, live, static, teams, entitlements, gpus_per_instance),
            "<h2>Waits</h2>",
            wait_chart(summary),
            wait_table(summary),
            "<h2>Jobs</h2>",
            timeline_chart(job_bars(records), teams),
            outcome_table(summary),
            reclaim_table(summary.get("reclaims", [])),
            cost_table(summary["cost"], summary["gpu_hours"], gpus_per_instance),
        ]
    )
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "index.html"
    path.write_text(page("shareplane demo", body), encoding="utf-8")
    return path
