"""The demo and what-if reports, opened from disk in headless Chromium: they render, offline, with data.

GIVEN a report written from a small deterministic scenario WHEN a real browser opens the file with
every network request refused THEN each chart is drawn from non-empty traces, the usage chart holds
one dashed entitlement line per share at the configured value, a hover shows values, the tables
replace the raw JSON, and a full-page screenshot is a PNG with a picture in it.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gpusim.whatif.config import Policy

from tests.browser.chromium import Browser, drawn_charts, open_report
from tests.browser.pictures import save_page, save_pictures
from tests.browser.reports import Report, demo_report, whatif_report

#: One worker runs the tests that redraw docs/assets/pictures (the demo's and the reports') and those
#: that build the site from docs/: run beside the report tests, the site's search found nothing.
pytestmark = pytest.mark.xdist_group("stack-1")

#: Each report's charts, by the id of the element plotly draws into.
CHARTS = {
    "what-if": {"share-usage", "utilization", "entitlement-ratio", "ledger", "waits"},
    "demo": {"usage", "ledger", "waits", "timeline"},
}
USAGE_CHART = {"what-if": "share-usage", "demo": "usage"}
#: How many panels repeat each share's entitlement line (the demo shows soft and hard side by side).
PANELS = {"what-if": 1, "demo": 2}
BUILDERS: dict[str, Callable[[Path], Report]] = {"what-if": whatif_report, "demo": demo_report}

#: Decodes a PNG in the page itself (no imaging library in the test): size, distinct colors on a
#: grid, and the part of that grid that is not near-white.
PNG_FACTS = """async (b64) => {
    const img = new Image();
    img.src = 'data:image/png;base64,' + b64;
    await img.decode();
    const canvas = document.createElement('canvas');
    canvas.width = img.width; canvas.height = img.height;
    const ctx = canvas.getContext('2d');
    ctx.drawImage(img, 0, 0);
    const pixels = ctx.getImageData(0, 0, img.width, img.height).data;
    const colors = new Set();
    let inked = 0, sampled = 0;
    for (let y = 0; y < img.height; y += 4) {
        for (let x = 0; x < img.width; x += 4) {
            const i = (y * img.width + x) * 4;
            colors.add((pixels[i] << 16) | (pixels[i + 1] << 8) | pixels[i + 2]);
            sampled += 1;
            if (pixels[i] < 235 || pixels[i + 1] < 235 || pixels[i + 2] < 235) inked += 1;
        }
    }
    return {width: img.width, height: img.height, colors: colors.size, inked: inked / sampled};
}"""

#: The top of the tallest bar in a chart, scrolled to the middle of the window, for a real mouse
#: (near the top: on a log axis a bar's shape reaches far below the visible plot).
TALLEST_BAR = """(id) => {
    const bars = [...document.getElementById(id).querySelectorAll('.bars .point path')];
    const top = b => b.getBoundingClientRect().top;
    const tallest = bars.filter(b => b.getBoundingClientRect().height > 2).sort((a, b) => top(a) - top(b))[0];
    if (!tallest) return null;
    window.scrollBy(0, top(tallest) - window.innerHeight / 2);
    const r = tallest.getBoundingClientRect();
    return {x: r.x + r.width / 2, y: r.top + 4};
}"""


@pytest.fixture(scope="module", params=list(BUILDERS), ids=lambda kind: f"the {kind} report")
def opened(request: pytest.FixtureRequest, browser: Browser, tmp_path_factory: pytest.TempPathFactory):
    """The report written, opened in the browser and drawn; the page and what it is checked against."""
    kind = request.param
    report = BUILDERS[kind](tmp_path_factory.mktemp(kind.replace("-", "")))
    page, errors = open_report(browser, report.path, len(CHARTS[kind]))
    if kind == "what-if" and not errors:
        save_pictures(page, "whatif")  # the documentation's pictures of the what-if report, redrawn
    yield kind, report, page, errors
    page.close()


def test_the_report_opens_offline_without_errors(opened: Any, browser: Browser) -> None:
    kind, report, page, errors = opened
    assert errors == [], f"script errors in the {kind} report: {errors}"
    assert browser.refused == [], f"the {kind} report asked the network for {browser.refused}"
    html = report.path.read_text()
    assert "<script src" not in html and "<link" not in html, "one file: nothing loaded from elsewhere"


def test_every_chart_is_drawn_from_data(opened: Any) -> None:
    kind, _, page, _ = opened
    charts = drawn_charts(page)
    assert set(charts) == CHARTS[kind]
    for chart_id, chart in charts.items():
        assert chart["traces"], f"{chart_id} has no traces"
        assert sum(t["points"] for t in chart["traces"]) > 0, f"{chart_id} traces are empty"
        assert chart["paths"] > 0, f"{chart_id} drew no SVG paths"
        assert any(v for t in chart["traces"] for v in t["y"]), f"{chart_id} is all zeros"


def test_the_usage_chart_draws_each_shares_entitlement_line(opened: Any) -> None:
    kind, report, page, _ = opened
    usage = drawn_charts(page)[USAGE_CHART[kind]]
    lines = [t for t in usage["traces"] if t["meta"] and t["meta"][0] == "entitlement"]
    drawn: dict[str, list[float]] = {}
    for line in lines:
        assert line["dash"] == "dash"
        assert len(set(line["y"])) == 1, "an entitlement is a flat line"
        drawn.setdefault(line["meta"][1], []).append(line["y"][0])
    assert drawn == {share: [value] * PANELS[kind] for share, value in report.entitlements.items()}
    # and the usage beside it is not flat zero: at least one share used the cluster
    assert any(max(t["y"]) > 0 for t in usage["traces"] if not t["meta"])
    legend = page.text_content(f"#{USAGE_CHART[kind]} .legend") or ""
    assert "entitlement" in legend


def test_hovering_a_bar_shows_its_value(opened: Any) -> None:
    _, _, page, _ = opened
    point = page.evaluate(TALLEST_BAR, "waits")
    assert point is not None, "the wait chart has a bar to hover"
    page.mouse.move(point["x"], point["y"])
    label = page.wait_for_selector("#waits .hoverlayer .hovertext", timeout=5_000)
    assert label is not None
    text = label.text_content() or ""
    assert re.search(r"\d+[smhd](\d\d[smh])?", text), text  # a span as every view prints it (12m05s, 3h07m)


def test_tables_replace_the_raw_json(opened: Any) -> None:
    kind, _, page, _ = opened
    assert page.locator("pre").count() == 0, "no raw JSON dump"
    captions = page.locator("table caption").all_inner_texts()
    assert any("utilization" in c.lower() for c in captions), captions
    assert any("wait" in c.lower() for c in captions), captions
    rows = page.locator("table tbody tr").count()
    assert rows >= 8, f"the {kind} report's tables have {rows} rows"


def test_a_full_page_screenshot_is_a_picture(opened: Any, browser: Browser, tmp_path: Path) -> None:
    kind, _, page, _ = opened
    png = page.screenshot(full_page=True, path=tmp_path / f"{kind}.png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    blank = browser.context.new_page()
    try:
        facts = blank.evaluate(PNG_FACTS, base64.b64encode(png).decode())
    finally:
        blank.close()
    assert facts["width"] >= 1200 and facts["height"] >= 1500, facts
    assert facts["colors"] >= 50, f"a blank or flat page: {facts}"
    assert 0.03 <= facts["inked"] <= 0.9, f"mostly empty or mostly ink: {facts}"


def test_the_report_leads_with_its_verdict(opened: Any) -> None:
    kind, _, page, _ = opened
    lines = page.locator("ul.verdict li").all_inner_texts()
    if kind == "what-if":
        # the load first (what replayed, what the share names are), the best policies, then each policy;
        # and each tier's SLO drawn on the wait bars, to read each bar against
        lead = page.locator("p.lead").inner_text()
        assert lead.startswith("Replays ") and "hashed" in lead
        assert lines[0].startswith("Highest utilization: ")
        assert [line.split(":")[0] for line in lines[1:]] == [p.value for p in Policy]
        assert "tier's SLO" in (page.text_content("#waits .legend") or "")
    else:
        assert lines[0].startswith("Soft quotas kept ") and lines[1].startswith("HIGHPRI started ")


#: The usage chart's stacked areas as drawn: per panel (x axis), each trace's name, x, its own y and
#: the stacked top plotly computed for it.
STACKS = """() => {
    const gd = document.getElementById('usage');
    return gd._fullData.filter(t => t.stackgroup).map((t, i) => ({
        name: t.name,
        panel: t.xaxis,
        stackgroup: t.stackgroup,
        x: Array.from(t.x),
        y: Array.from(t.y),
        top: gd.calcdata[t.index].map(p => p.y),
    }));
}"""


@pytest.fixture(scope="module")
def demo_page(browser: Browser, tmp_path_factory: pytest.TempPathFactory):
    """The demo report, opened and drawn, with what it was written from."""
    report = demo_report(tmp_path_factory.mktemp("demo"))
    page, errors = open_report(browser, report.path, len(CHARTS["demo"]))
    assert errors == []
    save_page(page, "demo-report")  # the whole demo report, to look at
    yield report, page
    page.close()


def test_the_demo_usage_chart_stacks_the_teams_so_a_full_cluster_reaches_capacity(demo_page: Any) -> None:
    report, page = demo_page
    stacks = page.evaluate(STACKS)
    capacity = report.capacity
    for panel in {s["panel"] for s in stacks}:
        traces = [s for s in stacks if s["panel"] == panel]
        assert [t["name"] for t in traces] == list(report.entitlements), "one area per team"
        assert len({t["stackgroup"] for t in traces}) == 1, "the teams' areas stack in one group"
        # at a moment the cluster is full, the teams' counts sum to the capacity and so does the drawn top
        totals = [sum(t["y"][i] for t in traces) for i in range(len(traces[0]["y"]))]
        assert max(totals) == capacity, f"{panel}: the cluster is never full ({max(totals)} of {capacity})"
        full = totals.index(capacity)
        assert traces[-1]["top"][full] == capacity, "the top area reaches the capacity line"
        assert all(t["top"][full] <= capacity for t in traces)


#: The timeline's traces as drawn: name, type, the rows (job names) and the texts (tiers) of each.
TIMELINE = """() => document.getElementById('timeline')._fullData.map(t => ({
    name: t.name, type: t.type, mode: t.mode || null, y: Array.from(t.y), text: t.text ? Array.from(t.text) : null,
}))"""


def test_the_demo_timeline_draws_stopped_jobs_as_stopped_with_tiers_and_submissions(demo_page: Any) -> None:
    report, page = demo_page
    traces = {t["name"]: t for t in page.evaluate(TIMELINE)}
    (reclaim,) = report.summary["reclaims"]
    victims = [v["job"] for v in reclaim["victims"]]
    stopped_idle = [s["job"] for s in report.summary["idle"]["stops"]]
    # GIVEN a reclaim victim and an idle stop, THEN each is drawn in its own trace, named in the legend
    assert traces["stopped for HIGHPRI (reclaim)"]["y"] == victims
    assert traces["stopped idle"]["y"] == stopped_idle
    legend = page.text_content("#timeline .legend") or ""
    assert "stopped for HIGHPRI (reclaim)" in legend and "stopped idle" in legend
    # and in no team's trace, where a FAILED job is drawn as failed
    for team in report.entitlements:
        assert not set(traces[team]["y"]) & {*victims, *stopped_idle}
    # each bar carries its tier, and the HIGHPRI job's bar says HIGHPRI
    bars = [t for t in traces.values() if t["type"] == "bar"]
    tiers = {y: text for t in bars for y, text in zip(t["y"], t["text"], strict=True)}
    assert set(tiers.values()) == {"HIGHPRI", "MIDPRI", "LOWPRI"}
    assert tiers[reclaim["job"]] == "HIGHPRI"
    # each job's submission is ticked on its row, so a wait reads from the tick to the bar
    assert set(traces["submitted"]["y"]) == set(tiers)
    drawn = page.evaluate(
        "() => [...document.querySelectorAll('#timeline text.bartext')].map(t => t.textContent)"
    )
    assert drawn.count("HIGHPRI") == 1 and len(drawn) == sum(len(t["y"]) for t in bars), "every tier drawn"


def test_the_demo_report_has_an_idle_gpus_section(demo_page: Any) -> None:
    report, page = demo_page
    idle = report.summary["idle"]
    (stop,) = idle["stops"]
    heading = page.locator("h2", has_text="Idle GPUs")
    assert heading.count() == 1
    sentence = page.locator("p.idle").inner_text()
    assert f"stopped {idle['jobs_stopped']}" in sentence and all(t in sentence for t in stop["taken_by"])
    rows = page.locator("table", has=page.locator("caption", has_text="idle detector")).locator("tbody tr")
    assert rows.count() == len(idle["flagged"])
    cells = rows.first.locator("td").all_inner_texts()
    assert cells[0] == stop["job"] and cells[2] == "yes" and cells[3] != "-"
    assert cells[1] == f"{stop['gpus'] // 8} ({stop['gpus']} GPUs)", "instances first, GPUs in parentheses"


#: The names of the usage chart's traces now shown (plotly's own visibility, after any button).
SHOWN = """(id) => document.getElementById(id)._fullData.filter(t => t.visible === true).map(t => t.name)"""


def test_the_what_if_usage_panels_show_static_beside_the_policy_chosen(opened: Any) -> None:
    kind, _, page, _ = opened
    chart = USAGE_CHART[kind]
    if kind == "demo":
        # the demo compares one run with hard partitions in two panels: nothing to choose
        assert page.locator(f"#{chart} .updatemenu-button").count() == 0
        return
    # at first: hard partitions and the first policy beside them, each share's entitlement
    assert set(page.evaluate(SHOWN, chart)) == {"static", "fairshare", "entitlement"}
    # WHEN another policy is chosen THEN it replaces the first, static and the entitlements stay
    page.locator(f"#{chart} .updatemenu-button", has_text="quota").first.click()
    page.wait_for_function(f"() => {SHOWN}('{chart}').includes('quota')")
    assert set(page.evaluate(SHOWN, chart)) == {"static", "quota", "entitlement"}


#: The ledger's lines now shown: each one's kind (balance, lent, paid back), team label and last point.
LEDGER_SHOWN = """() => document.getElementById('ledger')._fullData.filter(t => t.visible === true).map(t => ({
    kind: t.meta[1], team: t.meta[2], last: t.y[t.y.length - 1],
}))"""


def _ledger_ends(page: Any) -> dict[str, dict[str, float]]:
    """Each team label's last balance, lent and paid back as drawn, by the line's first word."""
    ends: dict[str, dict[str, float]] = {}
    for line in page.evaluate(LEDGER_SHOWN):
        ends.setdefault(line["team"], {})[line["kind"].split()[0]] = line["last"]
    return ends


def test_the_ledger_chart_draws_each_teams_balance_as_lent_minus_paid_back(opened: Any) -> None:
    kind, report, page, _ = opened
    ends = _ledger_ends(page)
    for team, end in ends.items():
        assert set(end) == {"balance", "lent", "paid"}, team
        assert end["balance"] == pytest.approx(end["lent"] - end["paid"]), team
    # what is lent is what is borrowed: the teams' balances sum to 0
    assert sum(e["lent"] for e in ends.values()) == pytest.approx(sum(e["paid"] for e in ends.values()))
    assert any(e["lent"] > 0 for e in ends.values()), "somebody lent"
    if kind == "demo":
        # the lines end where the demo's JSON does
        ledger = report.summary["ledger"]
        assert {t: (e["lent"], e["paid"]) for t, e in ends.items()} == {
            t: (lent[-1], ledger["paid_back_instance_hours"][t][-1])
            for t, lent in ledger["lent_instance_hours"].items()
        }
        return
    # the what-if's: the first policy that is not static at first; WHEN another is chosen THEN its lines
    assert {team.split(", ")[1] for team in ends} == {"fairshare"}
    page.locator("#ledger .updatemenu-button", has_text="quota").first.click()
    page.wait_for_function(f"() => ({LEDGER_SHOWN})().every(t => t.team.endsWith(', quota'))")
    assert len(_ledger_ends(page)) == len(report.entitlements)
