"""A self-contained HTML report of a what-if run: inline SVG charts, no scripts, no network.

Three charts: GPU utilization over time per policy (with the work-conserving bound dashed), queue
wait per tier (p50 and p95 bars per policy, log scale), and each share's GPU-hours against what it
was entitled to while it had demand (the entitlement ratio, 1.0 marked).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from pathlib import Path

from .whatif import TIERS, WhatIfResult

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
WIDTH, HEIGHT, PAD = 760, 260, 48


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _frame(title: str, body: str, height: int = HEIGHT) -> str:
    return (
        f"<figure><figcaption>{_esc(title)}</figcaption>"
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{_esc(title)}">{body}</svg></figure>'
    )


def _legend(names: Sequence[str], x: float = PAD, y: float = 14) -> str:
    out = []
    for i, name in enumerate(names):
        cx = x + i * 170
        out.append(f'<rect x="{cx}" y="{y - 9}" width="12" height="10" fill="{COLORS[i % len(COLORS)]}"/>')
        out.append(f'<text x="{cx + 16}" y="{y}" font-size="11">{_esc(name)}</text>')
    return "".join(out)


def utilization_chart(result: WhatIfResult) -> str:
    """Utilization per report bucket for each policy, and each policy's bound (dashed)."""
    names = list(result.results)
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    days = result.scenario.window / 86400.0
    parts = [_legend(names)]
    for frac in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = PAD + inner_h * (1 - frac)
        parts.append(f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(
            f'<text x="{PAD - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{frac:.0%}</text>'
        )
    parts.append(
        f'<text x="{WIDTH / 2}" y="{HEIGHT - 10}" font-size="11" text-anchor="middle">'
        f"virtual days (window {days:.1f} days)</text>"
    )
    for i, name in enumerate(names):
        r = result.results[name]
        color = COLORS[i % len(COLORS)]
        for series, dash in ((r.bound_series, ' stroke-dasharray="4 3"'), (r.utilization_series, "")):
            n = max(1, len(series) - 1)
            pts = " ".join(
                f"{PAD + inner_w * k / n:.1f},{PAD + inner_h * (1 - min(max(v, 0.0), 1.0)):.1f}"
                for k, v in enumerate(series)
            )
            parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.4"{dash} points="{pts}"/>')
    return _frame("GPU utilization over time (solid) and the work-conserving bound (dashed)", "".join(parts))


def wait_chart(result: WhatIfResult) -> str:
    """p50 (solid) and p95 (light) queue wait per tier and policy, on a log scale of hours."""
    names = list(result.results)
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    values = [
        r.wait_seconds[t.value][q] for r in result.results.values() for t in TIERS for q in ("p50", "p95")
    ]
    top = max([v for v in values if v > 0] or [3600.0])
    floor = 60.0
    span = max(math.log10(max(top, floor * 10)) - math.log10(floor), 1.0)

    def y_of(seconds: float) -> float:
        frac = (math.log10(max(seconds, floor)) - math.log10(floor)) / span
        return PAD + inner_h * (1 - frac)

    parts = [_legend(names)]
    for label, seconds in (("1 min", 60), ("1 h", 3600), ("1 day", 86400), ("1 week", 604800)):
        if seconds <= top * 1.01:
            y = y_of(seconds)
            parts.append(f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
            parts.append(
                f'<text x="{PAD - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{label}</text>'
            )
    group = inner_w / len(TIERS)
    bar = group * 0.8 / max(1, len(names))
    for k, tier in enumerate(TIERS):
        gx = PAD + group * k + group * 0.1
        parts.append(
            f'<text x="{PAD + group * (k + 0.5):.1f}" y="{HEIGHT - 10}" font-size="11" '
            f'text-anchor="middle">{tier.value}</text>'
        )
        for i, name in enumerate(names):
            w = result.results[name].wait_seconds[tier.value]
            x = gx + i * bar
            color = COLORS[i % len(COLORS)]
            for q, opacity in (("p95", 0.35), ("p50", 1.0)):
                y = y_of(w[q])
                parts.append(
                    f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar * 0.9:.1f}" height="{PAD + inner_h - y:.1f}" '
                    f'fill="{color}" fill-opacity="{opacity}"><title>{_esc(name)} {tier.value} {q}: '
                    f"{w[q] / 3600:.2f} h</title></rect>"
                )
    return _frame("Queue wait by tier: p50 (solid) and p95 (light), log scale", "".join(parts))


def share_chart(result: WhatIfResult) -> str:
    """Each share's entitlement ratio per policy; the line at 1.0 is exactly its entitlement."""
    names = list(result.results)
    shares = list(result.scenario.shares)
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    top = max([1.5] + [v for r in result.results.values() for v in r.team_entitlement_ratio.values()])
    parts = [_legend(names)]
    for frac in (0.0, 0.5, 1.0, 1.5, 2.0, 3.0):
        if frac <= top:
            y = PAD + inner_h * (1 - frac / top)
            stroke = "#555" if frac == 1.0 else "#ddd"
            parts.append(f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{y:.1f}" y2="{y:.1f}" stroke="{stroke}"/>')
            parts.append(
                f'<text x="{PAD - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{frac:g}</text>'
            )
    group = inner_w / max(1, len(shares))
    bar = group * 0.8 / max(1, len(names))
    for k, share in enumerate(shares):
        gx = PAD + group * k + group * 0.1
        ent = result.scenario.entitlements[k] * result.scenario.gpus_per_unit
        parts.append(
            f'<text x="{PAD + group * (k + 0.5):.1f}" y="{HEIGHT - 22}" font-size="10" '
            f'text-anchor="middle">{_esc(share)}</text>'
            f'<text x="{PAD + group * (k + 0.5):.1f}" y="{HEIGHT - 10}" font-size="9" '
            f'text-anchor="middle">{ent} GPUs</text>'
        )
        for i, name in enumerate(names):
            r = result.results[name]
            v = r.team_entitlement_ratio[share]
            y = PAD + inner_h * (1 - min(v, top) / top)
            parts.append(
                f'<rect x="{gx + i * bar:.1f}" y="{y:.1f}" width="{bar * 0.9:.1f}" '
                f'height="{PAD + inner_h - y:.1f}" fill="{COLORS[i % len(COLORS)]}">'
                f"<title>{_esc(name)} {_esc(share)}: ratio {v:.3f}, {r.gpu_hours[share]:.0f} GPU-h of "
                f"{r.entitled_gpu_hours[share]:.0f} entitled</title></rect>"
            )
    return _frame(
        "GPU-hours received against entitlement while demanding (ratio; 1.0 = entitled)", "".join(parts)
    )


def summary_table(result: WhatIfResult) -> str:
    """The headline numbers as an HTML table, policies as columns."""
    names = list(result.results)
    rows = [
        ("utilization", lambda r: f"{r.utilization:.3f}"),
        ("work-conserving bound", lambda r: f"{r.work_conserving_bound:.3f}"),
        (
            "utilization / bound",
            lambda r: f"{r.utilization / r.work_conserving_bound:.3f}" if r.work_conserving_bound else "-",
        ),
        ("worst team entitlement ratio", lambda r: f"{r.worst_team_entitlement_ratio:.3f}"),
        ("Jain index", lambda r: f"{r.jain_index:.3f}"),
        ("GPU-hours lost to preemption", lambda r: f"{r.preemption_gpu_hours_lost:.0f}"),
        ("rebalance plans applied", lambda r: str(r.applied_plans)),
        ("jobs", lambda r: str(r.jobs)),
    ]
    head = "".join(f"<th>{_esc(n)}</th>" for n in names)
    body = "".join(
        f"<tr><td>{_esc(label)}</td>"
        + "".join(f"<td>{_esc(fn(result.results[n]))}</td>" for n in names)
        + "</tr>"
        for label, fn in rows
    )
    return f"<table><tr><th>metric</th>{head}</tr>{body}</table>"


def render(result: WhatIfResult) -> str:
    """The whole report as one HTML document."""
    sc = result.scenario
    shares = ", ".join(
        f"{_esc(s)} ({e * sc.gpus_per_unit} GPUs)" for s, e in zip(sc.shares, sc.entitlements, strict=True)
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>shareplane what-if</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #ccc; padding: 4px 10px; text-align: right; }}
td:first-child, th:first-child {{ text-align: left; }}
figure {{ margin: 1.5em 0; }} figcaption {{ font-weight: 600; margin-bottom: .4em; }}
</style></head><body>
<h1>What-if: {len(sc.jobs)} jobs under {len(result.results)} share policies</h1>
<p>Capacity {sc.capacity_gpus} GPUs; offered load {sc.offered_gpus:.1f} GPUs
({sc.offered_load:.2f} of capacity);
window {sc.window / 86400:.1f} days; seed {result.seed}. Shares: {shares}.</p>
{summary_table(result)}
{utilization_chart(result)}
{wait_chart(result)}
{share_chart(result)}
</body></html>
"""


def write_report(result: WhatIfResult, directory: Path | str) -> Path:
    """Write ``index.html`` into ``directory`` (created if needed) and return its path."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "index.html"
    path.write_text(render(result), encoding="utf-8")
    return path
