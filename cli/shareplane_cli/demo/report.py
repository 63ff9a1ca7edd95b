"""The demo's HTML report: one self-contained file of plotly charts (plotly.js inline) and tables.

The machine it runs on may have no network, so nothing is fetched: gpusim's ``html_page`` inlines
the plotly.js bundle the plotly wheel ships.
"""

from __future__ import annotations

import html
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# plotly ships no type hints: its figures are untyped here as they are in gpusim's reports.
import plotly.graph_objects as go  # type: ignore[import-untyped]
from gpusim.html_page import COLORS, LEDGER_KEY, chart, ledger_traces, page, table
from plotly.subplots import make_subplots  # type: ignore[import-untyped]
from shareplane.domain.explain.durations import duration_text

from .summary import CHECK_LABELS
from .usage import UsageTracker, instance_seconds

FAILED_OUTLINE = "#d62728"
#: Why a job was stopped, when the control plane stopped it: each kind its own pattern and legend entry.
RECLAIMED = "reclaim"
IDLE_STOP = "idle"
#: What the ledger counts, as the report says it.
LEDGER_NOTE = (
    "A team lends the entitled instances it leaves idle while other teams hold more than their own "
    "entitlement, and is paid back while it holds more than its own and others leave some of theirs "
    "idle (the what-if's rule). Counted on the soft-quota run; hard partitions lend nothing."
)
#: A job the idle detector stopped held its GPUs idle: drawn grey, dotted.
IDLE_COLOR = "#9a9a9a"


@dataclass(frozen=True)
class JobBar:
    """One job on the timeline: from its first start to its stop, in seconds since the first submission.

    ``submitted``: when it was submitted (its wait runs from there to ``start``); ``stopped_by``: the
    control plane stopped it (``RECLAIMED`` for a higher tier's waiting job, ``IDLE_STOP`` for holding
    its GPUs idle), so its FAILED status is no failure of its own; None: it ended by itself.
    """

    name: str
    team: str
    start: float
    stop: float
    status: str
    tier: str | None = None
    submitted: float = 0.0
    stopped_by: str | None = None


def instance_hours(gpu_hours: float, gpus_per_instance: int) -> str:
    """Instance-hours first, the GPU-hours they are in parentheses: the report counts instances."""
    return f"{gpu_hours / max(gpus_per_instance, 1):,.1f} ({gpu_hours:,.1f} GPU-hours)"


def wait_text(seconds: float | None) -> str:
    """A wait as every view prints it (12m05s, 3h07m); ``-`` when there was none to measure."""
    return "-" if seconds is None else duration_text(seconds)


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
    """Instances in use per team, stacked (their sum against the capacity line), soft quotas beside hard
    partitions, each team's entitlement dashed."""
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
                    line={"color": color, "width": 1},
                    # stacked, so a full cluster reaches the capacity line (overlaid areas hide each other)
                    stackgroup=f"in use {col}",
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
                line={"color": "#222", "width": 2},
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
        title="Instances in use, teams stacked, against each team's entitlement (dashed) and the capacity",
        height=430,
        hovermode="x unified",
        legend={"orientation": "h", "y": -0.22},
    )
    return chart(fig, "usage")


def ledger_chart(ledger: Mapping[str, Any], entitlements: Mapping[str, int]) -> str:
    """One panel per team, soft quotas: the instance-hours it had lent and been paid back by each moment,
    and the balance (lent minus paid back). Hard partitions lend nothing, so they have no ledger."""
    teams = list(ledger["lent_instance_hours"])
    hours = [0.0, *ledger["hours"]]
    fig = make_subplots(
        rows=1,
        cols=max(len(teams), 1),
        shared_yaxes=True,
        horizontal_spacing=0.04,
        subplot_titles=[f"{team}: entitled {entitlements.get(team, 0)} instances" for team in teams],
    )
    for k, team in enumerate(teams):
        for trace in ledger_traces(
            hours,
            ledger["lent_instance_hours"][team],
            ledger["paid_back_instance_hours"][team],
            "instance-hours",
            "%{x:.2f} h",
            team,
            showlegend=k == 0,
        ):
            fig.add_trace(trace, row=1, col=k + 1)
    fig.update_xaxes(title_text="virtual hours", range=[0, hours[-1]])
    fig.update_yaxes(title_text="instance-hours", zeroline=True, zerolinecolor="#888", row=1, col=1)
    fig.update_layout(
        title="Lend/payback ledger per team with soft quotas (cumulative instance-hours)"
        f"<br><sup>{LEDGER_KEY}</sup>",
        height=420,
        margin={"t": 110},
        hovermode="closest",
        legend={"orientation": "h", "y": -0.22},
    )
    return chart(fig, "ledger")


def ledger_table(ledger: Mapping[str, Any]) -> str:
    """Per team, at the end: instance-hours lent, paid back, the balance and the paid-back share."""
    rows = []
    for team, lent in ledger["lent_instance_hours"].items():
        total, paid = lent[-1], ledger["paid_back_instance_hours"][team][-1]
        rows.append(
            (
                team,
                f"{total:,.2f}",
                f"{paid:,.2f}",
                f"{total - paid:+,.2f}",
                f"{paid / total:.0%}" if total else "-",
            )
        )
    return table(
        ["team", "lent", "paid back or borrowed", "balance (lent - paid back)", "paid back of lent"],
        rows,
        caption="Lend/payback ledger at the end, soft quotas (instance-hours)",
    )


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
                text=[wait_text(s) for s in seconds],
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


def _ran_bars(bars: Sequence[JobBar], teams: Sequence[str], reclaim_label: str) -> list[go.Bar]:
    """One bar trace per team, then one per kind of stop the control plane made (reclaim, idle), each
    bar from a job's first start to its stop, labelled with its tier."""
    traces: list[go.Bar] = []
    kinds = {RECLAIMED: (reclaim_label, "/"), IDLE_STOP: ("stopped idle", ".")}
    groups: list[tuple[str, list[JobBar], str | None]] = [
        (team, [b for b in bars if b.team == team and b.stopped_by is None], None)
        for team in [*teams, *sorted({b.team for b in bars} - set(teams))]
    ]
    groups += [(kinds[k][0], [b for b in bars if b.stopped_by == k], k) for k in kinds]
    for name, mine, kind in groups:
        if not mine:
            continue
        colors = [IDLE_COLOR if kind == IDLE_STOP else _color(b.team, teams) for b in mine]
        failed = [kind is None and b.status == "FAILED" for b in mine]
        traces.append(
            go.Bar(
                orientation="h",
                y=[b.name for b in mine],
                x=[(b.stop - b.start) / 3600 for b in mine],
                base=[b.start / 3600 for b in mine],
                name=name,
                # the tier just past the bar's end, full size: inside a bar one row high it shrinks unread
                text=[b.tier or "" for b in mine],
                textposition="outside",
                constraintext="none",
                cliponaxis=False,
                textfont={"size": 10, "color": "#333"},
                marker={
                    "color": colors,
                    "pattern": {"shape": kinds[kind][1], "fgcolor": "#222", "size": 6} if kind else {},
                    "line": {
                        "color": [FAILED_OUTLINE if f else "#222" for f in failed],
                        "width": [3 if f else (1 if kind else 0) for f in failed],
                    },
                },
                customdata=[
                    [
                        f"{b.status} ({name})" if kind else b.status,
                        b.start / 3600,
                        b.stop / 3600,
                        duration_text(b.stop - b.start),
                        b.tier or "-",
                        duration_text(b.start - b.submitted),
                        b.team,
                    ]
                    for b in mine
                ],
                hovertemplate=(
                    "%{y} (%{customdata[6]}, %{customdata[4]}): %{customdata[0]}<br>"
                    "waited %{customdata[5]}, ran %{customdata[1]:.2f} h to %{customdata[2]:.2f} h "
                    "(%{customdata[3]})<extra></extra>"
                ),
            )
        )
    return traces


def timeline_chart(bars: Sequence[JobBar], teams: Sequence[str], reclaim_label: str) -> str:
    """A job timeline: a tick at each job's submission, a thin line while it waits, then a bar from its
    first start to its stop, colored by team and labelled with its tier; failed jobs outlined red, jobs
    the control plane stopped (reclaim, idle) drawn in their own pattern."""
    fig = go.Figure()
    rows = list(dict.fromkeys(b.name for b in bars))
    waits_x: list[float | None] = []
    waits_y: list[str | None] = []
    for b in bars:
        waits_x += [b.submitted / 3600, b.start / 3600, None]
        waits_y += [b.name, b.name, None]
    fig.add_trace(
        go.Scatter(
            x=waits_x,
            y=waits_y,
            mode="lines",
            line={"color": "#888", "width": 1},
            name="queued (submission to first start)",
            hoverinfo="skip",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[b.submitted / 3600 for b in bars],
            y=[b.name for b in bars],
            mode="markers",
            marker={"symbol": "line-ns-open", "size": 12, "color": "#222", "line": {"width": 2}},
            name="submitted",
            customdata=[[b.tier or "-"] for b in bars],
            hovertemplate="%{y} (%{customdata[0]}) submitted at %{x:.2f} h<extra></extra>",
        )
    )
    for trace in _ran_bars(bars, teams, reclaim_label):
        fig.add_trace(trace)
    fig.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=rows)
    fig.update_layout(
        title="Job timeline with soft quotas: submitted (tick), queued (thin line), ran (bar, labelled "
        "by tier; red outline: failed)",
        xaxis_title="virtual hours",
        height=max(360, 160 + 20 * len(rows)),
        bargap=0.25,
        barmode="overlay",
        legend={"orientation": "h", "y": -0.08 - 40 / max(360, 160 + 20 * len(rows))},
    )
    return chart(fig, "timeline")


def headline_table(summary: Mapping[str, Any], capacity: int) -> str:
    """Utilization and makespan, soft quotas beside hard partitions."""
    return table(
        ["", f"soft quotas ({summary['mode']})", "hard partitions"],
        [
            (
                f"utilization (instance-hours busy / {capacity} instances x makespan)",
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
    """Per team: entitlement, peak and mean instances in use, both ways, and instance-hours (GPU-hours)."""
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
                instance_hours(summary["gpu_hours"].get(team, 0.0), gpus_per_instance),
                instance_hours(static_used.get(team, 0.0) * gpus_per_instance / 3600, gpus_per_instance),
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
            "instance-hours, soft (GPU-hours)",
            "instance-hours, hard (GPU-hours)",
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
                wait_text(soft[tier]["p50"]),
                wait_text(soft[tier]["p95"]),
                wait_text(hard[tier]["p50"]),
                wait_text(hard[tier]["p95"]),
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
    checks = [
        (CHECK_LABELS.get(check, check.replace("_", " ")), "yes" if ok else "NO")
        for check, ok in summary["checks"].items()
    ]
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
            duration_text(r["waited_seconds"]),
            f"{v['job']} ({v['team']}, {v['tier']}, {v['instances']} instances)",
            wait_text(v["checkpoint_age_seconds"]),
            duration_text(v["minutes_lost"] * 60),
        )
        for r in reclaims
        for v in r["victims"]
    ]
    return "<h2>Reclaims</h2>" + table(
        ["waiting job", "waited", "victim (stopped, requeued, resumes)", "checkpoint age", "work lost"], rows
    )


def cost_table(cost: Mapping[str, Any], gpu_hours: Mapping[str, float], gpus_per_instance: int) -> str:
    """Cost per team beside the instance-hours the GPU-hours count, and why the two differ."""
    price = cost.get("instance_hour_usd")
    rows = [
        (
            team,
            instance_hours(gpu_hours.get(team, 0.0), gpus_per_instance),
            f"{cost['by_team_billable_instance_hours'].get(team, 0.0):,.2f}",
            f"{usd:,.2f}",
        )
        for team, usd in cost["by_team_usd"].items()
    ]
    priced = f" at {price} USD per instance-hour" if price else ""
    return (
        f"<h2>Cost per team{html.escape(priced)}</h2>"
        + table(["team", "instance-hours held (GPU-hours)", "billable instance-hours", "cost (USD)"], rows)
        + f'<p class="note">{html.escape(str(cost["note"]))}</p>'
    )


def idle_section(
    idle: Mapping[str, Any] | None, bars: Sequence[JobBar], records: Sequence[Mapping[str, Any]], gpus: int
) -> str:
    """What the idle detector did: one row per job it flagged (stopped or not, when, the instances it gave
    back and which waiting jobs took them), after one sentence that sums it up."""
    if idle is None:
        return ""
    stops = {s["job"]: s for s in idle["stops"]}
    stopped_bars = {b.name: b for b in bars if b.stopped_by == IDLE_STOP}
    instances = {str(r["jobName"]): r.get("instanceCount") for r in records}
    rows = []
    for job in idle["flagged"]:
        stop, bar = stops.get(job), stopped_bars.get(job)
        count = stop["gpus"] // max(gpus, 1) if stop else instances.get(job)
        taken_by = stop["taken_by"] if stop else []
        rows.append(
            (
                job,
                "-" if count is None else f"{count} ({count * gpus} GPUs)",
                "yes" if stop else "no (flagged only)",
                duration_text(bar.stop) if bar else "-",
                duration_text(bar.stop - bar.start) if bar else "-",
                ", ".join(taken_by) if taken_by else ("no waiting job" if stop else "-"),
                f"{duration_text(stop['taken_after_seconds'])} later" if stop and taken_by else "-",
            )
        )
    given_back = idle["reclaimed_gpu_hours"]
    takers = sorted({t for s in idle["stops"] for t in s["taken_by"]})
    flagged, busy = idle["jobs_flagged"], idle["busy_jobs_flagged"]
    sentence = (
        f"The idle detector flagged {flagged} job{'' if flagged == 1 else 's'} as holding idle GPUs "
        f"({busy} busy job{'' if busy == 1 else 's'} among them) and stopped {idle['jobs_stopped']}, "
        "giving back "
        f"{given_back / max(gpus, 1):,.1f} instance-hours ({given_back:,.1f} GPU-hours) of idle time "
        + (f"to {', '.join(takers)}." if takers else "that no waiting job took.")
    )
    return (
        "<h2>Idle GPUs</h2>"
        + f'<p class="idle">{html.escape(sentence)}</p>'
        + table(
            [
                "job flagged idle",
                "instances",
                "stopped",
                "stopped at",
                "ran for",
                "its instances taken by",
                "when",
            ],
            rows,
            caption="The idle detector's jobs (stopped at: virtual time since the first submission)",
        )
    )


def stopped_records(records: Sequence[Mapping[str, Any]], names: Collection[str]) -> set[int]:
    """The records (by ``id``) of the jobs of ``names`` the control plane stopped: for each name, its
    earliest FAILED record (a reclaimed job is requeued under its name, and that later run is its own)."""
    out: set[int] = set()
    for name in names:
        mine = [r for r in records if r["jobName"] == name and r["stoppedAt"]]
        failed = [r for r in mine if r["status"] == "FAILED"] or mine
        if failed:
            out.add(id(min(failed, key=lambda r: r["stoppedAt"])))
    return out


def job_bars(
    records: Sequence[Mapping[str, Any]], reclaimed: Collection[str] = (), idled: Collection[str] = ()
) -> list[JobBar]:
    """Each job that started and stopped, from its first start to its stop, by submission order; the
    jobs named in ``reclaimed`` (reclaim victims) and ``idled`` (idle stops) marked as stopped by them."""
    if not records:
        return []
    origin = min(r["createdAt"] for r in records)
    stopped_by = {i: IDLE_STOP for i in stopped_records(records, idled)}
    stopped_by |= {i: RECLAIMED for i in stopped_records(records, reclaimed)}
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
                    r.get("tier"),
                    (r["createdAt"] - origin) / 1000,
                    stopped_by.get(id(r)),
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
    reclaims = summary.get("reclaims", [])
    idle = summary.get("idle")
    bars = job_bars(
        records,
        reclaimed={v["job"] for r in reclaims for v in r["victims"]},
        idled={s["job"] for s in idle["stops"]} if idle else set(),
    )
    for_tiers = "/".join(sorted({r["tier"] for r in reclaims})) or "a higher tier"
    body = "".join(
        [
            f"<h1>shareplane demo: {html.escape(mode)} on {capacity} instances</h1>",
            '<ul class="verdict">'
            + "".join(f"<li>{html.escape(line)}</li>" for line in summary["verdict"])
            + "</ul>",
            f'<p class="lead">Utilization (instances busy) <b>{summary["utilization"]:.2%}</b> with soft '
            "quotas against "
            f"<b>{summary['static_partition_utilization']:.2%}</b> with hard partitions, same workload. "
            "Hover a chart for values; drag to zoom, double-click to reset.</p>",
            headline_table(summary, capacity),
            usage_chart(mode, live, static, teams, entitlements, capacity, end),
            team_table(summary, live, static, teams, entitlements, gpus_per_instance),
            "<h2>Lending and payback</h2>",
            f'<p class="note">{html.escape(LEDGER_NOTE)}</p>',
            ledger_chart(summary["ledger"], entitlements),
            ledger_table(summary["ledger"]),
            "<h2>Waits</h2>",
            wait_chart(summary),
            wait_table(summary),
            "<h2>Jobs</h2>",
            timeline_chart(bars, teams, f"stopped for {for_tiers} (reclaim)"),
            outcome_table(summary),
            reclaim_table(reclaims),
            idle_section(idle, bars, records, gpus_per_instance),
            cost_table(summary["cost"], summary["gpu_hours"], gpus_per_instance),
        ]
    )
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "index.html"
    path.write_text(page("shareplane demo", body), encoding="utf-8")
    return path
