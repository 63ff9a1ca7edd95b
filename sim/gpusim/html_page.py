"""One self-contained HTML page of plotly charts and tables, shared by the what-if and demo reports.

plotly.js is inlined once (``plotly.offline.get_plotlyjs``, the bundle the plotly wheel ships), so the
page opens from disk with no network; each chart is a ``<div>`` plus the call that draws it. Tables
are plain HTML: the numbers a person compares are read, not hovered.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence

import plotly.graph_objects as go  # type: ignore[import-untyped]  # plotly ships no type hints
from plotly.offline import get_plotlyjs  # type: ignore[import-untyped]  # plotly ships no type hints

#: One color per series, in order (plotly's default qualitative palette, readable on white).
COLORS = ("#636EFA", "#EF553B", "#00CC96", "#AB63FA", "#FFA15A", "#19D3F3", "#FF6692", "#B6E880")

#: The toolbar keeps zoom, pan and "download as PNG"; no plotly logo, no link out.
CHART_CONFIG = {"displaylogo": False, "responsive": True}

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1200px;
       color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: .2em; } h2 { font-size: 1.25em; margin-top: 1.8em; }
p.lead { color: #444; margin-top: 0; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: .92em; }
caption { text-align: left; font-weight: 600; padding-bottom: .3em; }
th, td { border-bottom: 1px solid #e3e3e3; padding: 5px 12px; text-align: right; white-space: nowrap; }
th { background: #f5f6f8; border-bottom: 2px solid #ccc; white-space: normal; vertical-align: bottom; }
td.text, th.text { text-align: left; }
tbody tr:hover { background: #f2f7ff; }
td.good { color: #17803d; font-weight: 600; } td.bad { color: #b42318; font-weight: 600; }
.note { color: #555; font-size: .9em; max-width: 75em; }
.chart { margin: .4em 0 1.4em; }
"""


def chart(figure: go.Figure, div_id: str) -> str:
    """A figure as a ``<div>`` and its drawing call; the page carries plotly.js once."""
    figure.update_layout(
        template="plotly_white",
        font={"family": "system-ui, sans-serif", "size": 12},
        hoverlabel={"namelength": -1},
    )
    body: str = figure.to_html(
        full_html=False, include_plotlyjs=False, div_id=div_id, config=CHART_CONFIG, default_width="100%"
    )
    return f'<div class="chart">{body}</div>'


#: The ledger's lines, each team's in its own panel: the balance, lent minus paid back (solid, drawn
#: first so the thin lines stay visible on it): above 0 the others owe the team; what it had lent
#: (dotted), and what it had been paid back (dashed: held beyond its entitlement from what others left
#: idle, which for a team that never lent is plain borrowing).
LEDGER_LINES = (
    ("balance (lent - paid back)", "#222", "solid", 2.5),
    ("lent", "#00CC96", "dot", 2.0),
    ("paid back (borrowed)", "#EF553B", "dash", 2.0),
)

#: The ledger chart's subtitle: how to read its lines.
LEDGER_KEY = (
    "balance = lent - paid back (solid): above 0 the others owe the team; lent (dotted); "
    "paid back, or borrowed for a team that lent nothing (dashed)"
)


def ledger_traces(
    x: Sequence[float],
    lent: Sequence[float],
    paid_back: Sequence[float],
    unit: str,
    at: str,
    team: str,
    *,
    visible: bool = True,
    showlegend: bool = True,
    group: str = "",
) -> list[go.Scatter]:
    """A team's ledger as three lines from 0 at ``x[0]``: lent, paid back and the balance, each point
    the cumulative figure by ``x[k + 1]``; a hover reads the line, the figure in ``unit``, the time
    (``at``, a plotly template of ``%{x}``) and the team."""
    balance = [a - b for a, b in zip(lent, paid_back, strict=True)]
    traces = []
    for (name, color, dash, width), y in zip(LEDGER_LINES, (balance, lent, paid_back), strict=True):
        traces.append(
            go.Scatter(
                x=list(x),
                y=[0.0, *y],
                mode="lines",
                name=name,
                legendgroup=f"{group}{name}",
                showlegend=showlegend,
                visible=visible,
                line={"color": color, "dash": dash, "width": width},
                meta=["ledger", name, team],
                hovertemplate=f"{name}: %{{y:,.1f}} {unit} by {at}<extra>{html.escape(team)}</extra>",
            )
        )
    return traces


def bucket_ends(count: int, width: float) -> list[float]:
    """0, then the end of each of ``count`` buckets of ``width``: where a cumulative series is read."""
    return [k * width for k in range(count + 1)]


#: A cell that reads as a number (with a unit or a percent sign): such columns align right.
NUMBER = re.compile(r"^[-+]?[\d,]*\.?\d+( ?(%|s|min|h|d|GPUs?))?( \(.*\))?$|^-$")


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[object]],
    caption: str = "",
    classes: Iterable[Sequence[str]] | None = None,
) -> str:
    """An HTML table; ``classes`` gives each cell a CSS class (``good`` / ``bad``) where it matters.

    Columns of numbers align right, so digits line up; any other column aligns left.
    """
    cells = [[str(v) for v in row] for row in rows]
    marks = [list(m) for m in classes] if classes is not None else [[""] * len(row) for row in cells]
    text = [not all(NUMBER.match(row[k]) for row in cells) for k in range(len(headers))]
    head = "".join(
        f'<th class="text">{html.escape(h)}</th>' if text[k] else f"<th>{html.escape(h)}</th>"
        for k, h in enumerate(headers)
    )
    body = []
    for row, row_marks in zip(cells, marks, strict=True):
        tds = []
        for k, (value, mark) in enumerate(zip(row, row_marks, strict=True)):
            css = " ".join(c for c in (mark, "text" if text[k] else "") if c)
            attribute = f' class="{css}"' if css else ""
            tds.append(f"<td{attribute}>{html.escape(value)}</td>")
        body.append(f"<tr>{''.join(tds)}</tr>")
    title = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{title}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def page(title: str, body: str) -> str:
    """The whole document: styles, plotly.js inline, then ``body``."""
    # A closing script tag inside the bundle would end the element early; plotly.js has none, but
    # escaping the sequence keeps that true for any bundle.
    script = get_plotlyjs().replace("</script", "<\\/script")
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style>"
        f'<script type="text/javascript">{script}</script></head>\n<body>{body}</body></html>\n'
    )
