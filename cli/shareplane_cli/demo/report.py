"""The demo's HTML report: self-contained, inline SVG (the machine it runs on may have no network)."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .usage import UsageTracker

WIDTH, HEIGHT, PAD = 640, 240, 40
COLORS = ("#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2")


def _svg(title: str, body: str, height: int = HEIGHT) -> str:
    return (
        f"<figure><figcaption>{html.escape(title)}</figcaption>"
        f'<svg viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img">'
        f"{body}</svg></figure>"
    )


def _legend(names: Sequence[str]) -> str:
    parts, x = [], float(PAD)
    for i, name in enumerate(names):
        parts.append(
            f'<rect x="{x:.0f}" y="6" width="10" height="10" fill="{COLORS[i % len(COLORS)]}"/>'
            f'<text x="{x + 14:.0f}" y="15" font-size="11">{html.escape(name)}</text>'
        )
        x += 24 + 6.5 * len(name)  # about 6.5 px per character at 11 px
    return "".join(parts)


def stacked_usage(title: str, tracker: UsageTracker, shares: Sequence[str], capacity: int, end: float) -> str:
    """Instances in use by share, stacked, against the capacity line, over virtual hours."""
    plot_w, plot_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    x = lambda t: PAD + plot_w * t / end  # noqa: E731 - tiny local scales read best inline
    y = lambda v: HEIGHT - PAD - plot_h * v / capacity  # noqa: E731
    steps = [*tracker.timeline, (end, {})]
    parts = []
    for i in range(len(shares) - 1, -1, -1):  # draw the tallest stack first
        top, bottom = [], []
        for (t, use), (t_next, _) in zip(steps, steps[1:], strict=False):
            upper = sum(use.get(s, 0) for s in shares[: i + 1])
            lower = sum(use.get(s, 0) for s in shares[:i])
            top += [f"{x(t):.1f},{y(upper):.1f}", f"{x(t_next):.1f},{y(upper):.1f}"]
            bottom += [f"{x(t):.1f},{y(lower):.1f}", f"{x(t_next):.1f},{y(lower):.1f}"]
        points = " ".join(top + bottom[::-1])  # along the top, then back along the bottom
        parts.append(f'<polygon points="{points}" fill="{COLORS[i % len(COLORS)]}" opacity="0.85"/>')
    axis = (
        f'<line x1="{PAD}" y1="{y(capacity):.1f}" x2="{WIDTH - PAD}" y2="{y(capacity):.1f}" stroke="black" '
        f'stroke-dasharray="4 3"/><text x="{WIDTH - PAD}" y="{y(capacity) - 4:.1f}" font-size="10" '
        f'text-anchor="end">capacity {capacity}</text>'
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" stroke="#888"/>'
    )
    ticks = "".join(
        f'<text x="{x(h * 3600):.1f}" y="{HEIGHT - PAD + 14}" font-size="10" text-anchor="middle">{h}h</text>'
        for h in range(int(end // 3600) + 1)
    )
    return _svg(title, "".join(parts) + axis + ticks + _legend(shares))


def grouped_bars(title: str, groups: Mapping[str, Mapping[str, float | None]], unit: str) -> str:
    """One group of bars per key (e.g. tier), one bar per series (e.g. p50 soft, p50 static)."""
    series = sorted({s for g in groups.values() for s in g})
    top = max([v for g in groups.values() for v in g.values() if v] or [1.0])
    plot_h, group_w = HEIGHT - 2 * PAD, (WIDTH - 2 * PAD) / max(1, len(groups))
    bar_w = group_w * 0.8 / max(1, len(series))
    parts = []
    for gi, (group, values) in enumerate(groups.items()):
        gx = PAD + gi * group_w
        parts.append(
            f'<text x="{gx + group_w / 2:.1f}" y="{HEIGHT - PAD + 14}" font-size="11" '
            f'text-anchor="middle">{html.escape(group)}</text>'
        )
        for si, name in enumerate(series):
            value = values.get(name) or 0.0
            h = plot_h * value / top
            bx = gx + group_w * 0.1 + si * bar_w
            parts.append(
                f'<rect x="{bx:.1f}" y="{HEIGHT - PAD - h:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" '
                f'fill="{COLORS[si % len(COLORS)]}">'
                f"<title>{html.escape(name)}: {value:.0f} {unit}</title></rect>"
                f'<text x="{bx + (bar_w - 2) / 2:.1f}" y="{HEIGHT - PAD - h - 3:.1f}" font-size="9" '
                f'text-anchor="middle">{value / 60:.0f}m</text>'
            )
    return _svg(title, "".join(parts) + _legend(series))


def timeline(
    title: str, rows: Sequence[tuple[str, str, float, float, bool]], shares: Sequence[str], end: float
) -> str:
    """A job timeline: one bar per job from first start to stop, by share; failed jobs outlined red."""
    row_h = 14
    height = 2 * PAD + row_h * len(rows)
    plot_w = WIDTH - PAD - 150
    parts = []
    for i, (name, share, start, stop, failed) in enumerate(rows):
        y = PAD + i * row_h
        color = COLORS[shares.index(share) % len(COLORS)] if share in shares else "#999"
        x0, x1 = 150 + plot_w * start / end, 150 + plot_w * stop / end
        stroke = ' stroke="#d62728" stroke-width="2"' if failed else ""
        parts.append(
            f'<text x="146" y="{y + 10}" font-size="10" text-anchor="end">{html.escape(name)}</text>'
        )
        parts.append(
            f'<rect x="{x0:.1f}" y="{y}" width="{max(1.0, x1 - x0):.1f}" height="{row_h - 3}" '
            f'fill="{color}"{stroke}/>'
        )
    return _svg(title, "".join(parts) + _legend(shares), height)


def reclaim_table(reclaims: Sequence[Mapping[str, Any]]) -> str:
    """One row per victim: which waiting job it was stopped for, its checkpoint's age, the work lost."""
    if not reclaims:
        return "<h2>Reclaims</h2><p>None: no job waited past its tier's reclaim threshold.</p>"
    cells = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(str(c))}</td>"
            for c in (
                f"{r['job']} ({r['team']}, {r['tier']})",
                f"{r['waited_seconds'] / 60:.1f}",
                f"{v['job']} ({v['team']}, {v['tier']}, {v['instances']} instances)",
                "-" if v["checkpoint_age_seconds"] is None else f"{v['checkpoint_age_seconds'] / 60:.1f}",
                f"{v['minutes_lost']:.1f}",
            )
        )
        + "</tr>"
        for r in reclaims
        for v in r["victims"]
    )
    head = "".join(
        f"<th>{h}</th>"
        for h in ("waiting job", "waited (min)", "victim", "checkpoint age (min)", "minutes lost")
    )
    return f"<h2>Reclaims</h2><table border=1 cellpadding=4><tr>{head}</tr>{cells}</table>"


def cost_table(cost: Mapping[str, Any], gpu_hours: Mapping[str, float], gpus_per_instance: int) -> str:
    """Cost per team beside the instance-hours the GPU-hours count, and why the two differ."""
    price = cost.get("instance_hour_usd")
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(str(c))}</td>"
            for c in (
                team,
                gpu_hours.get(team, 0.0),
                round(gpu_hours.get(team, 0.0) / max(gpus_per_instance, 1), 1),
                cost["by_team_billable_instance_hours"].get(team, 0.0),
                f"{usd:,.2f}",
            )
        )
        + "</tr>"
        for team, usd in cost["by_team_usd"].items()
    )
    head = "".join(
        f"<th>{h}</th>"
        for h in ("team", "GPU-hours", "instance-hours held", "billable instance-hours", "cost (USD)")
    )
    priced = f" at {price} USD per instance-hour" if price else ""
    return (
        f"<h2>Cost per team{html.escape(priced)}</h2>"
        f"<table border=1 cellpadding=4><tr>{head}</tr>{rows}</table>"
        f"<p>{html.escape(str(cost['note']))}</p>"
    )


def write_report(
    directory: Path,
    summary: Mapping[str, Any],
    live: UsageTracker,
    static: UsageTracker,
    records: Sequence[Mapping[str, Any]],
    capacity: int,
    gpus_per_instance: int,
) -> Path:
    """Write index.html (charts + the summary JSON) into ``directory``; returns its path."""
    shares = sorted({j.team for j in live.jobs.values()})
    end = max(summary["makespan_hours"], summary["static_partition_makespan_hours"]) * 3600
    waits = {
        tier: {
            "p50 soft quotas": values["p50"],
            "p95 soft quotas": values["p95"],
            "p50 hard partitions": summary["static_partition_wait_seconds"][tier]["p50"],
            "p95 hard partitions": summary["static_partition_wait_seconds"][tier]["p95"],
        }
        for tier, values in summary["wait_seconds"].items()
    }
    origin = min(r["createdAt"] for r in records)
    rows = []
    for r in sorted(records, key=lambda r: r["createdAt"]):
        starts = [h["at"] for h in r["history"] if h["status"] in ("STARTING", "RUNNING")]
        if starts and r["stoppedAt"]:
            rows.append(
                (
                    r["jobName"],
                    r["team"] or r["shareIdentifier"] or r["quotaShareName"],
                    (starts[0] - origin) / 1000,
                    (r["stoppedAt"] - origin) / 1000,
                    r["status"] == "FAILED",
                )
            )
    body = "".join(
        [
            f"<h1>shareplane demo: {html.escape(summary['mode'])} on {capacity} instances</h1>",
            f"<p>GPU utilization <b>{summary['utilization']:.1%}</b> with soft quotas against "
            f"<b>{summary['static_partition_utilization']:.1%}</b> with hard partitions, same workload.</p>",
            '<div style="display:flex;flex-wrap:wrap;gap:16px">',
            stacked_usage(
                f"Soft quotas ({summary['mode']}): instances in use by team", live, shares, capacity, end
            ),
            stacked_usage("Hard partitions: instances in use by team", static, shares, capacity, end),
            "</div>",
            grouped_bars("Queue wait by priority tier (bar labels in minutes)", waits, "s"),
            timeline("Job timeline (first start to stop; red outline: failed)", rows, shares, end),
            reclaim_table(summary.get("reclaims", [])),
            cost_table(summary["cost"], summary["gpu_hours"], gpus_per_instance),
            f"<h2>Summary</h2><pre>{html.escape(json.dumps(summary, indent=2))}</pre>",
        ]
    )
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "index.html"
    path.write_text(
        '<!doctype html><meta charset="utf-8"><title>shareplane demo</title>'
        f'<body style="font-family:sans-serif">{body}</body>'
    )
    return path
