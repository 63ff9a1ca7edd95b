"""Priority escalation on the local stack: watch_jobs raises jobs kept waiting past their tier's SLO.

ProdExp1 fills all 100 instances with long work; then ProdExp2 submits a MIDPRI and a LOWPRI job,
which fair-share (it never preempts) keeps RUNNABLE. The wait SLOs are shortened through the
config the stack stores, StackSpec.shares_config (MIDPRI 10 min, LOWPRI 20 min, a step every 5 min), so on the
emulator's virtual clock the watch's scheduled ticks see both jobs go past their SLO within seconds:
UpdateServiceJob raises each one step per interval up to, never reaching, the next tier's priority
(DescribeServiceJob shows it), every raise lands in the job's history, and a job waiting twice its
SLO raises one ``wait_slo`` alert. Each tick also predicts the waiting jobs' starts on the live twin
and stores them on their records, the wait alert carries the newest one, and `shareplane why` answers
for a waiting job with its forecast.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from gpusim.engine import SteppedClock
from shareplane.domain.config.shares import SharesConfig, Tier
from shareplane_cli.demo.workload import DemoJob, submit_request
from shareplane_cli.local import LocalStack, StackSpec
from shareplane_cli.local.loop import StackLoop
from shareplane_cli.local.runner import FunctionRunner
from shareplane_cli.local.stack import LOCAL_CREDENTIALS, REGION
from shareplane_cli.main import app
from typer.testing import CliRunner

from tests.conftest import REPO
from tests.local.test_failures_local import cli_json, emulated

pytestmark = [pytest.mark.local, pytest.mark.xdist_group("stack-1")]

#: Virtual seconds per wall second: the hour of waiting below plays out in about seven seconds.
SPEED = 500.0
#: A wall-clock bound, so an escalation that never comes fails with what was seen instead of hanging
#: (each tick also reads the live twin and predicts the waiting jobs, so a loaded machine needs more).
WALL_LIMIT_SECONDS = 150.0
MID_SLO, LOW_SLO, EVERY, STEP = 600, 1200, 300, 5

LOW, MID = Tier.LOWPRI, Tier.MIDPRI
#: ProdExp1's long work on all 100 instances (at most 32 per job for the team).
FILLERS = [DemoJob(f"fill-{i:02d}", "ProdExp1", LOW, 0, n, 600) for i, n in enumerate((32, 32, 32, 4), 1)]
WAITING = {
    MID: DemoJob("wait-mid-01", "ProdExp2", MID, 0, 8, 30),
    LOW: DemoJob("wait-low-01", "ProdExp2", LOW, 0, 8, 30),
}
_RAISE = re.compile(r"^schedulingPriority (\d+) -> (\d+): waited (\d+)s")


def short_slo_config() -> SharesConfig:
    """config/shares.yaml with short wait SLOs and an escalation step every five minutes; the
    rebalancer applies its plans (the shipped default only audits them), so the IAM replay
    (test_iam_local.py) records its apply path: UpdateSchedulingPolicy and the audit's APPLIED mark. It
    runs the default rules (``demand_targets``), which plan from the demand at each run: the shipped
    ``owed_credits`` design moves a weight only once credits build up, later than this scenario lasts."""
    raw = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())
    raw["tiers"]["MIDPRI"]["wait_slo_seconds"] = MID_SLO
    raw["tiers"]["LOWPRI"]["wait_slo_seconds"] = LOW_SLO
    raw["failures"] = {"escalation": {"step": STEP, "every_seconds": EVERY}}
    raw["rebalance"] = {"mode": "apply"}
    return SharesConfig.model_validate(raw)


def ceiling(config: SharesConfig, tier: Tier) -> int:
    """The highest priority a job of ``tier`` may be raised to: just below the next tier's."""
    own = config.tiers[tier].scheduling_priority
    return min(c.scheduling_priority for c in config.tiers.values() if c.scheduling_priority > own) - 1


@dataclass(frozen=True)
class EscalationRun:
    """What the run left behind: Batch's view, the job records and the alerts."""

    config: SharesConfig
    described: dict[str, dict[str, Any]]  # DescribeServiceJob by job name
    records: dict[str, dict[str, Any]]  # `shareplane jobs --output json` by job name
    alerts: list[dict[str, Any]]  # `shareplane alerts --output json`
    why: dict[str, Any]  # `shareplane why wait-mid-01 --output json`, while it waits


@pytest.fixture
def run(escalation_run: EscalationRun) -> EscalationRun:
    """This module's scenario, run once a session (``tests/local/conftest.py``: the IAM replay reads its calls)."""
    return escalation_run


def run_scenario() -> EscalationRun:
    """The scenario on a stack of its own."""
    config = short_slo_config()
    shares_json = json.dumps(config.model_dump(mode="json", exclude_none=True), separators=(",", ":"))
    spec = StackSpec(REPO / "template.yaml", shares_config=shares_json)
    with LocalStack(spec, speed=SPEED, clock=SteppedClock()) as stack:
        batch = emulated(stack, "batch")
        runner = FunctionRunner(stack)
        loop = StackLoop(stack, runner)
        deadline = time.monotonic() + WALL_LIMIT_SECONDS
        ids = {job.name: batch.submit_service_job(**submit_request(job, config))["jobId"] for job in FILLERS}
        # GIVEN the fillers hold every instance before ProdExp2 asks for any
        loop.run_until(
            deadline,
            lambda: all(status(batch, i) == "RUNNING" for i in ids.values()),
            "fillers running",
        )
        for job in WAITING.values():
            ids[job.name] = batch.submit_service_job(**submit_request(job, config))["jobId"]
        # WHEN the watch ticks until both waiting jobs sit at their ceiling and alerted
        targets = {WAITING[t].name: ceiling(config, t) for t in WAITING}

        def escalated() -> bool:
            at_ceiling = all(
                batch.describe_service_job(jobId=ids[n])["schedulingPriority"] == c
                for n, c in targets.items()
            )
            return at_ceiling and len(cli_json(stack, ["alerts"])) >= len(targets)

        loop.run_until(deadline, escalated, "both waiting jobs at their ceiling, with their wait alerts")
        return EscalationRun(
            config=config,
            described={n: batch.describe_service_job(jobId=i) for n, i in ids.items()},
            records={r["jobName"]: r for r in cli_json(stack, ["jobs"])},
            alerts=cli_json(stack, ["alerts"]),
            why=why_json(stack, WAITING[MID].name),
        )


def why_json(stack: LocalStack, job: str) -> dict[str, Any]:
    """`shareplane why JOB --output json` on the local stack: Batch is the emulator, the rest moto."""
    env = {
        **LOCAL_CREDENTIALS,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ENDPOINT_URL_BATCH": stack.environment()["AWS_ENDPOINT_URL_BATCH"],
    }
    args = ["why", job, "--endpoint", stack.endpoint or "", "--table", stack.outputs["JobsTableName"]]
    result = CliRunner().invoke(app, [*args, "--output", "json"], env=env)
    assert result.exit_code == 0, result.output
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


def status(batch: Any, job_id: str) -> str:
    """A service job's status in the emulated Batch."""
    return str(batch.describe_service_job(jobId=job_id)["status"])


def raises(record: dict[str, Any]) -> list[tuple[int, int, int]]:
    """(from, to, waited seconds) of every PRIORITY_ESCALATED entry in a job's history, oldest first."""
    found = []
    for entry in record["history"]:
        if entry["kind"] == "PRIORITY_ESCALATED":
            matched = _RAISE.match(entry["reason"])
            assert matched, entry["reason"]
            found.append((int(matched[1]), int(matched[2]), int(matched[3])))
    return found


# ------------------------------------------------------------------------------------------ the tests
@pytest.mark.parametrize("tier", [MID, LOW], ids=["a MIDPRI job", "a LOWPRI job"])
def test_a_job_kept_waiting_past_its_slo_rises_in_bounded_steps_to_just_below_the_next_tier(
    run: EscalationRun, tier: Tier
) -> None:
    job = WAITING[tier]
    own, top = run.config.tiers[tier].scheduling_priority, ceiling(run.config, tier)
    described = run.described[job.name]
    # GIVEN it never ran: every instance stayed with ProdExp1's fillers (fair-share never preempts)
    assert described["status"] == "RUNNABLE"
    assert all(run.described[f.name]["status"] == "RUNNING" for f in FILLERS)
    # THEN Batch holds it at its tier's ceiling, below the next tier's priority
    assert described["schedulingPriority"] == top
    # AND its history records each raise, from where the last one left it: only past the SLO, one
    # step per interval waited (a tick that comes later covers the intervals it missed), and none
    # once it reached the ceiling
    history = raises(run.records[job.name])
    slo = run.config.tiers[tier].wait_slo_seconds
    targets = [to for _, to, _ in history]
    assert [frm for frm, _, _ in history] == [own, *targets[:-1]], history
    assert targets == sorted(set(targets)) and targets[-1] == top, history
    for _, to, waited in history:
        # `waited` is the whole seconds the reason names (floored): a raise at 1200.4 s reads 1200
        steps = 1 + (waited - slo) // EVERY
        assert waited >= slo and to == min(top, own + steps * STEP), (to, waited, history)


def test_a_job_waiting_twice_its_slo_alerts_once_naming_where_escalation_stops(run: EscalationRun) -> None:
    waits = [a for a in run.alerts if a["kind"] == "wait_slo"]
    by_job = {a["job"]: a for a in waits}
    assert len(waits) == len(by_job) == len(WAITING)
    for tier, job in WAITING.items():
        alert = by_job[run.described[job.name]["jobArn"]]
        # the team x tier layout: the job's identifier, its team and tier beside it
        share = run.config.share_for("ProdExp2", tier)
        assert (alert["share"], alert["team"], alert["tier"], alert["severity"]) == (
            share,
            "ProdExp2",
            tier.value,
            "warning",
        )
        assert f"escalation stops at {ceiling(run.config, tier)}" in alert["body"]["reason"]


def test_running_jobs_are_never_escalated(run: EscalationRun) -> None:
    for job in FILLERS:
        assert raises(run.records[job.name]) == []
        assert run.described[job.name]["schedulingPriority"] == run.config.tiers[LOW].scheduling_priority


def test_each_tick_stores_the_waiting_jobs_predicted_start_on_its_record(run: EscalationRun) -> None:
    for job in WAITING.values():
        record = run.records[job.name]
        prediction = record["prediction"]
        # made at a tick after the job's submission, from the template's FORECAST_SAMPLES runs
        assert prediction is not None and prediction["predictedAt"] >= record["createdAt"]
        assert prediction["samples"] == 100 and prediction["startedFraction"] > 0
        assert prediction["predictedAt"] <= prediction["startP10"] <= prediction["startP50"]
    for job in FILLERS:  # running when the watch first ticked: never waiting, never predicted
        assert run.records[job.name]["prediction"] is None


def test_a_wait_alert_carries_the_jobs_latest_prediction(run: EscalationRun) -> None:
    for alert in (a for a in run.alerts if a["kind"] == "wait_slo"):
        prediction = alert["body"]["prediction"]
        assert prediction is not None and prediction["startP10"] is not None
        assert "predicted start p50" in alert["body"]["reason"]


def test_why_answers_for_a_waiting_job_with_a_forecast(run: EscalationRun) -> None:
    why = run.why
    assert why["job"] == WAITING[MID].name and why["waiting"] is True, why
    assert why["forecast"]["samples"] == 100 and why["forecast"]["startP10"] is not None
    assert why["heldBackBy"], "a job kept waiting by a full queue has a reason"
