"""The demo on the local stack: the blog's story holds, and soft quotas beat hard partitions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from shareplane_cli.demo.workload import blog_workload
from shareplane_cli.local.loop import MAX_VIRTUAL_SECONDS_PER_STEP
from shareplane_cli.main import app
from typer.testing import CliRunner

from tests.browser.chromium import Browser, drawn_charts, open_report
from tests.browser.pictures import save_pictures
from tests.conftest import REPO

pytestmark = pytest.mark.local


# One mode on each xdist worker (tests/local/conftest.py): the two demos are the longest tests.
@pytest.mark.parametrize(
    "mode",
    [
        pytest.param("fairshare", marks=pytest.mark.xdist_group("stack-1")),
        pytest.param("quota", marks=pytest.mark.xdist_group("stack-2")),
    ],
    ids=lambda m: f"in {m} mode",
)
def test_the_demo_tells_the_blogs_story(tmp_path: Path, mode: str, browser: Browser) -> None:
    result = CliRunner().invoke(
        app,
        [
            "demo",
            "--mode",
            mode,
            "--output",
            "json",
            "--report",
            str(tmp_path / "report"),
            "--config",
            str(REPO / "config" / "shares.yaml"),
            "--template",
            str(REPO / "template.yaml"),
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    # moto's warnings are kept in the demo's log beside its report, not shown on the screen
    log = tmp_path / "report" / "demo.log"
    assert "No Moto CloudFormation support" not in result.output and "UserWarning" not in result.output
    assert f"log: {log}" in result.stderr
    assert "No Moto CloudFormation support for AWS::CloudWatch::Alarm" in log.read_text()
    # and the log holds what the demo says it holds: every schedule tick and every handler invocation
    kinds = {line.split(" ", 3)[2] for line in log.read_text().splitlines() if line[:2] == "20"}
    assert {"schedule:", "invocation:"} <= kinds, kinds
    # AND with stderr not a terminal, progress comes as a line per virtual half hour, counting every job
    progress = [line for line in result.stderr.splitlines() if line.startswith("demo: virtual ")]
    assert progress[0].startswith("demo: virtual 0:00, 0 of ") and len(progress) >= 4, progress
    # GIVEN the blog's workload WHEN it runs through the emulated cluster and the real handlers
    assert summary["mode"] == mode
    # THEN the answer comes first: utilization against hard partitions, then HIGHPRI against its SLO
    assert summary["verdict"][0].startswith("Soft quotas kept ")
    assert (
        summary["verdict"][1].startswith("HIGHPRI started ")
        and "within its 15m00s SLO" in summary["verdict"][1]
    )
    # THEN ProdExp1 borrows, ProdExp2 gets its 40 back, and the HIGHPRI job submitted last starts
    # within its SLO, before its own team's and the other team's earlier queued work
    assert all(summary["checks"].values()), summary["checks"]
    assert set(summary["checks"]) >= {
        "highpri_started_within_its_slo",
        "highpri_started_before_earlier_queued_work",
        "highpri_started_before_other_teams_earlier_queued_work",
    }
    assert summary["wait_seconds"]["HIGHPRI"]["p95"] <= 900
    # and soft quotas use the cluster better than hard 60/40 partitions
    assert summary["utilization"] > summary["static_partition_utilization"] + 0.05
    # every job reached DynamoDB and ended; the scripted failures happened; each reclaim victim ended
    # FAILED (terminated) and its requeue is a job of its own
    victims = sum(len(r["victims"]) for r in summary["reclaims"])
    jobs = len(blog_workload())
    # (FAILED: the CUDA OOM job, the stuck job the idle detector stopped, and each reclaim victim)
    assert sum(summary["jobs"].values()) == jobs + victims
    assert summary["jobs"]["FAILED"] == 2 + victims
    # AND the idle detector, reading the emulator's GPU metrics of every running trainer (data-loading
    # and evaluation dips included), flags the stuck job and none of the busy ones, and stops it under
    # ProdExp1's LOWPRI policy (in quota mode too, where the job has a quota share, no share identifier)
    idle = summary["idle"]
    assert idle["flagged"] == ["p1-lowpri-stuck-01"]
    assert (idle["jobs_flagged"], idle["jobs_stopped"], idle["busy_jobs_flagged"]) == (1, 1, 0)
    assert idle["reclaimed_gpu_hours"] > 0
    (stop,) = idle["stops"]
    assert stop["job"] == "p1-lowpri-stuck-01" and stop["gpus"] == 40
    if mode == "fairshare":
        # AND its instances went to waiting work: jobs waiting at the stop were the next dispatched.
        # (In quota mode the HIGHPRI job's in-share preemption takes it before it can be flagged, and
        # it is stopped in its second attempt, by when the queue may have drained.)
        assert stop["taken_by"] and stop["taken_after_seconds"] >= 0, stop
    assert summary["capacity_requeues"] >= 1
    if mode == "quota":
        assert summary["preemptions"] >= 1, "ProdExp2 reclaims its lent instances by preemption"
    else:
        assert summary["preemptions"] == 0, "fair-share never preempts"
        # the control plane reclaimed for the HIGHPRI job: a checkpointing LOWPRI victim, audited
        (reclaim,) = summary["reclaims"]
        assert reclaim["tier"] == "HIGHPRI" and reclaim["victims"]
        # when it became due (300 s): its delayed re-check on the virtual clock decides at its due time,
        # or a 5-minute tick that came within two of the loop's turns of it (with moto's wall-clock
        # delay only a tick decided, up to 5 minutes later, and the sweep's trials could end first)
        assert 300 <= reclaim["waited_seconds"] <= 300 + 2 * MAX_VIRTUAL_SECONDS_PER_STEP
        for victim in reclaim["victims"]:
            assert victim["tier"] == "LOWPRI" and victim["checkpoint_age_seconds"] is not None
            assert 0 <= victim["minutes_lost"] <= 15 + 3, "since its last 15-minute checkpoint, plus start-up"
        assert "Reclaims" in html_of(tmp_path)
    assert set(summary["wait_seconds"]) == {"HIGHPRI", "MIDPRI", "LOWPRI"}
    # AND the ledger: ProdExp2 lent the instances it left idle to ProdExp1, which borrowed them (was
    # "paid back" by the rule): what one lent is what the other borrowed, every five minutes
    ledger = summary["ledger"]
    lent, paid = ledger["lent_instance_hours"], ledger["paid_back_instance_hours"]
    assert lent["ProdExp2"][-1] > 0 and paid["ProdExp1"][-1] > 0
    for k in range(len(ledger["hours"])):
        assert sum(s[k] for s in lent.values()) == pytest.approx(sum(s[k] for s in paid.values()), abs=0.01)
    html = html_of(tmp_path)
    assert html.count('class="plotly-graph-div"') == 4 and "hard partitions" in html.lower()
    # AND each team's cost is its training jobs' billable instance-hours at the on-demand price, below
    # the instance-hours it held (GPU-hours / 8): provisioning is held but never billed
    cost = summary["cost"]
    assert cost["instance_hour_usd"] == 37.688
    assert set(cost["by_team_usd"]) == set(summary["gpu_hours"]) == {"ProdExp1", "ProdExp2"}
    for team, usd in cost["by_team_usd"].items():
        billable = cost["by_team_billable_instance_hours"][team]
        assert 0 < billable < summary["gpu_hours"][team] / 8
        assert usd == pytest.approx(billable * 37.688, abs=0.5)
    assert "Cost per team" in html and "provisioning is not billed" in html
    # AND the report, opened in a real browser with no network, draws every chart from the run's data,
    # each team's entitlement a dashed line at its configured value in both panels
    page, errors = open_report(browser, tmp_path / "report" / "index.html", charts=4)
    charts = drawn_charts(page)
    if mode == "fairshare" and not errors:
        save_pictures(page, "demo")  # the documentation's pictures of the demo (`make demo`'s mode), redrawn
    page.close()
    assert errors == [] and browser.refused == []
    assert set(charts) == {"usage", "ledger", "waits", "timeline"}
    assert all(any(t["points"] for t in c["traces"]) for c in charts.values())
    entitlement_lines = sorted(
        (t["meta"][1], t["y"][0])
        for t in charts["usage"]["traces"]
        if t["meta"] and t["meta"][0] == "entitlement"
    )
    assert entitlement_lines == [("ProdExp1", 60), ("ProdExp1", 60), ("ProdExp2", 40), ("ProdExp2", 40)]
    assert len([t for t in charts["timeline"]["traces"] if t["name"] in summary["gpu_hours"]]) == 2, (
        "one bar trace per team"
    )
    # AND the jobs the control plane stopped are drawn as stopped, not failed, each in its own legend entry,
    # and the idle detector's work has a section of its own
    drawn = {t["name"] for t in charts["timeline"]["traces"]}
    assert "stopped idle" in drawn and "Idle GPUs" in html
    assert ("stopped for HIGHPRI (reclaim)" in drawn) == bool(summary["reclaims"])


def html_of(tmp_path: Path) -> str:
    return (tmp_path / "report" / "index.html").read_text()
