"""A self-contained HTML report of a what-if run: plotly charts (plotly.js inline), tables, no network.

Charts, each with hover values: GPUs each share held over time per policy against the share's
entitlement (dashed), GPU utilization over time per policy with the work-conserving bound (dotted),
queue wait per tier (p50 and p95 per policy, log scale), and each share's GPU-hours against what it
was entitled to while it had demand (1.0 marked), and each team's lend/payback ledger over time per
policy (GPU-hours lent, paid back, and the balance). Tables: the headline numbers per policy, each
share's usage, entitlement ratio and cost per policy, and the waits and SLO attainment per tier.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import plotly.graph_objects as go  # type: ignore[import-untyped]  # plotly ships no type hints
from plotly.subplots import make_subplots  # type: ignore[import-untyped]  # plotly ships no type hints
from shareplane.domain.explain.durations import duration_text

from .html_page import COLORS, LEDGER_KEY, bucket_ends, chart, ledger_traces, page, table
from .whatif.config import TIERS
from .whatif.run import PolicyResult, WhatIfResult
from .whatif.verdict import verdict

#: The policy every other is read against: hard partitions.
BASELINE = "static"


def _color(i: int) -> str:
    return COLORS[i % len(COLORS)]


def _bucket_days(result: WhatIfResult, series_length: int) -> list[float]:
    """The middle of each report bucket, in virtual days."""
    width = result.scenario.window / max(series_length, 1)
    return [(k + 0.5) * width / 86400.0 for k in range(series_length)]


def _entitled_titles(result: WhatIfResult) -> list[str]:
    """Each share's panel title: its name and the GPUs it is entitled to."""
    sc = result.scenario
    return [
        f"{s}: entitled {e * sc.gpus_per_unit} GPUs" for s, e in zip(sc.shares, sc.entitlements, strict=True)
    ]


def _first_shown(result: WhatIfResult) -> str:
    """The policy a per-policy chart opens on: the first that is not ``static`` (the baseline)."""
    return next((name for name in result.results if name != BASELINE), BASELINE)


def _share_panels(result: WhatIfResult) -> tuple[go.Figure, int, int]:
    """A figure with one panel per share, two columns, titled with each share's entitlement; with its
    rows and columns."""
    shares = result.scenario.shares
    columns = 2 if len(shares) > 1 else 1
    rows = math.ceil(len(shares) / columns)
    fig = make_subplots(
        rows=rows,
        cols=columns,
        shared_xaxes=True,
        subplot_titles=_entitled_titles(result),
        vertical_spacing=0.35 / rows,
    )
    return fig, rows, columns


def share_usage_chart(result: WhatIfResult) -> str:
    """One panel per share: GPUs it held, and its entitlement as a dashed line.

    Six policies' lines in one panel coincide where they agree and hide each other; so each panel shows
    one policy at a time, chosen with the buttons above the chart (the first one that is not ``static``
    at first), beside ``static`` (hard partitions: the baseline every policy is read against).
    """
    sc = result.scenario
    shares = list(sc.shares)
    shown = _first_shown(result)
    fig, rows, columns = _share_panels(result)
    for k, share in enumerate(shares):
        row, col = k // columns + 1, k % columns + 1
        entitled = sc.entitlements[k] * sc.gpus_per_unit
        days: list[float] = []
        for i, (name, r) in enumerate(result.results.items()):
            series = r.share_usage_series.get(share, [])
            days = _bucket_days(result, len(series))
            fig.add_trace(
                go.Scatter(
                    x=days,
                    y=series,
                    mode="lines",
                    name=name,
                    legendgroup=name,
                    showlegend=k == 0,
                    visible=name in (BASELINE, shown),
                    line={"color": _color(i), "width": 1.5},
                    hovertemplate=(
                        f"{html.escape(name)}<br>day %{{x:.2f}}: %{{y:.1f}} GPUs"
                        f"<extra>{html.escape(share)}</extra>"
                    ),
                ),
                row=row,
                col=col,
            )
        fig.add_trace(
            go.Scatter(
                x=[0.0, sc.window / 86400.0] if not days else [days[0], days[-1]],
                y=[entitled, entitled],
                mode="lines",
                name="entitlement",
                legendgroup="entitlement",
                showlegend=k == 0,
                line={"color": "#222", "width": 2, "dash": "dash"},
                meta=["entitlement", share],
                hovertemplate=f"entitled {entitled} GPUs<extra>{html.escape(share)}</extra>",
            ),
            row=row,
            col=col,
        )
    fig.update_yaxes(title_text="GPUs", rangemode="tozero")
    fig.update_xaxes(title_text="virtual day", row=rows)
    fig.update_layout(
        title="GPUs in use by share against its entitlement (dashed): static and the policy chosen above",
        height=180 + 220 * rows,
        hovermode="closest",
        updatemenus=_policy_picker(
            [
                (name, [trace.name in (BASELINE, name, "entitlement") for trace in fig.data])
                for name in result.results
                if name != BASELINE
            ],
            rows,
        ),
    )
    return chart(fig, "share-usage")


def _policy_picker(choices: list[tuple[str, list[bool]]], rows: int, active: int = 0) -> list[dict[str, Any]]:
    """Buttons above a chart, one per policy: each shows the chart's traces its ``choices`` entry marks
    (one flag per trace, in order), ``active`` first. None when there is nothing to pick."""
    buttons = [
        {"label": name, "method": "restyle", "args": [{"visible": visible}]} for name, visible in choices
    ]
    if not buttons:
        return []
    return [
        {
            "type": "buttons",
            "direction": "right",
            "buttons": buttons,
            "active": active,
            "x": 0,
            "xanchor": "left",
            "y": 1.0 + 0.6 / rows,
            "yanchor": "bottom",
        }
    ]


def ledger_chart(result: WhatIfResult) -> str:
    """One panel per team: the GPU-hours it had lent and been paid back by each moment, and the balance
    (lent minus paid back), for the policy chosen with the buttons above the chart (at first the first
    one that is not ``static``: hard partitions lend nothing). The rule is
    ``shareplane.domain.shares.lending.loans``."""
    sc = result.scenario
    shares = list(sc.shares)
    policies = list(result.results)
    shown = _first_shown(result)
    fig, rows, columns = _share_panels(result)
    owners: list[str] = []  # each trace's policy, in order
    for k, share in enumerate(shares):
        for name, r in result.results.items():
            lent, paid = r.lent_series.get(share, []), r.paid_back_series.get(share, [])
            days = bucket_ends(len(lent), r.bucket_hours / 24)
            for trace in ledger_traces(
                days,
                lent,
                paid,
                "GPU-hours",
                "day %{x:.2f}",
                f"{share}, {name}",
                visible=name == shown,
                showlegend=k == 0,
                group=name,
            ):
                fig.add_trace(trace, row=k // columns + 1, col=k % columns + 1)
                owners.append(name)
    fig.update_yaxes(title_text="GPU-hours", zeroline=True, zerolinecolor="#888")
    fig.update_xaxes(title_text="virtual day", row=rows)
    fig.update_layout(
        title="Lend/payback ledger per team, for the policy chosen above (cumulative GPU-hours)"
        f"<br><sup>{LEDGER_KEY}</sup>",
        height=200 + 220 * rows,
        hovermode="closest",
        legend={"orientation": "h", "y": -0.3 / rows},
        updatemenus=_policy_picker(
            [(name, [owner == name for owner in owners]) for name in policies], rows, policies.index(shown)
        ),
    )
    return chart(fig, "ledger")


def utilization_chart(result: WhatIfResult) -> str:
    """Utilization per report bucket for each policy, and each policy's bound (dotted)."""
    fig = go.Figure()
    for i, (name, r) in enumerate(result.results.items()):
        days = _bucket_days(result, len(r.utilization_series))
        fig.add_trace(
            go.Scatter(
                x=days,
                y=r.utilization_series,
                mode="lines",
                name=name,
                legendgroup=name,
                line={"color": _color(i), "width": 1.5},
                hovertemplate=f"{html.escape(name)}<br>day %{{x:.2f}}: %{{y:.1%}} of capacity<extra></extra>",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=days,
                y=r.bound_series,
                mode="lines",
                name=f"{name} bound",
                legendgroup=name,
                showlegend=False,
                line={"color": _color(i), "width": 1, "dash": "dot"},
                hovertemplate=(
                    f"{html.escape(name)} work-conserving bound<br>day %{{x:.2f}}: %{{y:.1%}}<extra></extra>"
                ),
            )
        )
    fig.update_layout(
        title="GPU utilization (solid) and the work-conserving bound, min(capacity, demand) (dotted)",
        xaxis_title="virtual day",
        yaxis={"title": "share of capacity", "tickformat": ".0%", "rangemode": "tozero"},
        height=380,
        hovermode="x unified",
    )
    return chart(fig, "utilization")


#: Where the wait chart's log axis is labelled, as a person reads a wait.
WAIT_TICKS = (
    (1, "1 s"),
    (60, "1 min"),
    (600, "10 min"),
    (3600, "1 h"),
    (21600, "6 h"),
    (86400, "1 d"),
    (604800, "1 w"),
)


def wait_chart(result: WhatIfResult) -> str:
    """p50 and p95 queue wait per tier and policy, on a log scale (no bar: no wait at all)."""
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, subplot_titles=("p50 wait", "p95 wait"))
    tiers = [t.value for t in TIERS]
    longest = 1.0
    for col, quantile in ((1, "p50"), (2, "p95")):
        for i, (name, r) in enumerate(result.results.items()):
            seconds = [r.wait_seconds[t][quantile] for t in tiers]
            longest = max([longest, *seconds])
            fig.add_trace(
                go.Bar(
                    x=tiers,
                    # A zero wait has no place on a log axis: it gets no bar (the table says 0 s).
                    y=[s if s >= 1 else None for s in seconds],
                    name=name,
                    legendgroup=name,
                    showlegend=col == 1,
                    marker_color=_color(i),
                    customdata=[duration_text(s) for s in seconds],
                    hovertemplate=f"{html.escape(name)} %{{x}} {quantile}: %{{customdata}}<extra></extra>",
                ),
                row=1,
                col=col,
            )
    slos = [result.scenario.config.tiers[t].wait_slo_seconds for t in TIERS]
    longest = max([longest, *slos])
    for col in (1, 2):
        # Each tier's SLO as a bar-wide tick across its group: a bar above it missed the SLO.
        fig.add_trace(
            go.Scatter(
                x=tiers,
                y=slos,
                mode="markers",
                marker={
                    "symbol": "line-ew-open",
                    "size": 60,
                    "color": "#222",
                    "line": {"width": 3, "color": "#222"},
                },
                name="tier's SLO",
                legendgroup="slo",
                showlegend=col == 1,
                customdata=[duration_text(s) for s in slos],
                hovertemplate="%{x} SLO: %{customdata}<extra></extra>",
            ),
            row=1,
            col=col,
        )
    ticks = [(v, label) for v, label in WAIT_TICKS if v <= longest * 3]
    fig.update_yaxes(
        type="log",
        tickvals=[v for v, _ in ticks],
        ticktext=[label for _, label in ticks],
        range=[0, math.log10(longest * 1.5)],
    )
    fig.update_yaxes(title_text="wait (log scale)", row=1, col=1)
    fig.update_layout(
        title="Queue wait by tier against its SLO (submission to first dispatch; no bar: no wait)",
        barmode="group",
        height=400,
    )
    return chart(fig, "waits")


def share_chart(result: WhatIfResult) -> str:
    """Each share's entitlement ratio per policy; the line at 1.0 is exactly its entitlement."""
    shares = list(result.scenario.shares)
    fig = go.Figure()
    for i, (name, r) in enumerate(result.results.items()):
        fig.add_trace(
            go.Bar(
                x=shares,
                y=[r.team_entitlement_ratio[s] for s in shares],
                name=name,
                marker_color=_color(i),
                customdata=[[r.gpu_hours[s], r.entitled_gpu_hours[s]] for s in shares],
                hovertemplate=(
                    f"{html.escape(name)} %{{x}}: ratio %{{y:.3f}}<br>"
                    "%{customdata[0]:,.0f} GPU-h of %{customdata[1]:,.0f} entitled<extra></extra>"
                ),
            )
        )
    fig.add_hline(
        y=1.0,
        line={"color": "#222", "dash": "dash"},
        annotation_text="entitled (1.0)",
        annotation_position="top left",
    )
    fig.update_layout(
        title="GPU-hours received against entitlement while demanding (ratio; 1.0 = entitled)",
        barmode="group",
        yaxis_title="ratio",
        height=380,
    )
    return chart(fig, "entitlement-ratio")


def ratio_text(value: float | None) -> str:
    """A ratio to three decimals, or "-" where it is undefined."""
    return "-" if value is None else f"{value:.3f}"


def summary_table(result: WhatIfResult) -> str:
    """The headline numbers, policies as columns."""
    names = list(result.results)
    rows: list[tuple[str, Callable[[PolicyResult], str]]] = [
        ("utilization", lambda r: f"{r.utilization:.2%}"),
        ("work-conserving bound", lambda r: f"{r.work_conserving_bound:.2%}"),
        (
            "utilization / bound",
            lambda r: f"{r.utilization / r.work_conserving_bound:.2%}" if r.work_conserving_bound else "-",
        ),
        ("worst share entitlement ratio", lambda r: f"{r.worst_team_entitlement_ratio:.3f}"),
        ("disparity (max / min share ratio)", lambda r: ratio_text(r.disparity)),
        ("worst paid-back share of what a share lent", lambda r: ratio_text(r.worst_paid_back_share)),
        ("Jain index", lambda r: f"{r.jain_index:.3f}"),
        ("GPU-hours used", lambda r: f"{r.gpu_hours_used:,.0f}"),
        ("GPU-hours lost to preemption", lambda r: f"{r.preemption_gpu_hours_lost:,.1f}"),
        ("GPU-hours lost to reclaim", lambda r: f"{r.reclaim_gpu_hours_lost:,.1f}"),
        ("reclaim victims", lambda r: str(r.reclaim_victims)),
        ("rebalance plans applied", lambda r: str(r.applied_plans)),
        ("cost (USD)", lambda r: f"{sum(r.cost_usd.values()):,.0f}"),
        ("jobs (finished)", lambda r: f"{r.jobs} ({r.finished})"),
    ]
    return table(
        ["metric", *names],
        ([label, *(fn(result.results[n]) for n in names)] for label, fn in rows),
        caption="Headline numbers per policy",
    )


def share_table(result: WhatIfResult) -> str:
    """Shares as rows, policies as columns: each share's entitlement ratio (mean GPUs in use beside it)."""
    sc = result.scenario
    names = list(result.results)
    rows, marks = [], []
    for k, share in enumerate(sc.shares):
        entitled = sc.entitlements[k] * sc.gpus_per_unit
        cells = []
        for name in names:
            r = result.results[name]
            series = r.share_usage_series.get(share, [])
            mean = sum(series) / len(series) if series else 0.0
            cells.append(f"{r.team_entitlement_ratio[share]:.3f} ({mean:,.1f} GPUs)")
        rows.append([share, f"{entitled:,}", *cells])
        marks.append(
            [
                "",
                "",
                *("good" if result.results[n].team_entitlement_ratio[share] >= 1.0 else "bad" for n in names),
            ]
        )
    return table(
        ["share", "entitled GPUs", *names],
        rows,
        caption=(
            "Per-share entitlement ratio and utilization: GPU-hours received over GPU-hours entitled while "
            "the share had work (green at or above 1.0), mean GPUs in use beside it"
        ),
        classes=marks,
    )


def wait_table(result: WhatIfResult) -> str:
    """Per tier and policy: wait p50 / p95 / p99 and the share of jobs within the tier's SLO."""
    slos = result.scenario.config.tiers
    rows, marks = [], []
    for tier in TIERS:
        slo = slos[tier].wait_slo_seconds
        for name, r in result.results.items():
            w = r.wait_seconds[tier.value]
            met = r.slo_attainment.get(tier.value)
            rows.append(
                [
                    tier.value,
                    name,
                    _hours(w["p50"]),
                    _hours(w["p95"]),
                    _hours(w["p99"]),
                    _hours(slo),
                    "-" if met is None else f"{met:.1%}",
                ]
            )
            marks.append(["", "", "", "good" if w["p95"] <= slo else "bad", "", "", ""])
    return table(
        ["tier", "policy", "p50 wait (h)", "p95 wait (h)", "p99 wait (h)", "SLO (h)", "jobs within SLO"],
        rows,
        caption="Waits per tier (p95 green when within the tier's SLO)",
        classes=marks,
    )


def _hours(seconds: float | None) -> str:
    """A wait in hours: one unit for a whole column, so the eye compares digits, not units."""
    return "-" if seconds is None else f"{seconds / 3600:,.2f}"


def render(result: WhatIfResult) -> str:
    """The whole report as one HTML document."""
    sc = result.scenario
    load, *verdicts = verdict(result)
    body = "".join(
        [
            f"<h1>What-if: {len(sc.jobs):,} jobs under {len(result.results)} share policies</h1>",
            f'<p class="lead">{html.escape(load)} '
            "Hover a chart for values; drag to zoom, double-click to reset.</p>",
            '<ul class="verdict">' + "".join(f"<li>{html.escape(line)}</li>" for line in verdicts) + "</ul>",
            summary_table(result),
            share_usage_chart(result),
            utilization_chart(result),
            "<h2>Shares</h2>",
            share_chart(result),
            share_table(result),
            "<h2>Lending and payback</h2>",
            ledger_chart(result),
            "<h2>Waits</h2>",
            wait_chart(result),
            wait_table(result),
            '<p class="note">Wait is submission to first dispatch (SCHEDULED). GPUs in use are averaged '
            "over each of the report's time buckets. The entitlement ratio counts GPU-hours only while the "
            "share had work waiting or running. A team lends the entitlement it leaves idle while others "
            "hold more than theirs, and is paid back while it holds more than its own and others leave "
            "theirs idle; the ledger's balance is what it had lent minus what it had been paid back.</p>",
        ]
    )
    return page("shareplane what-if", body)


def write_report(result: WhatIfResult, directory: Path | str) -> Path:
    """Write ``index.html`` into ``directory`` (created if needed) and return its path."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "index.html"
    path.write_text(render(result), encoding="utf-8")
    return path
