"""Idle GPUs end to end: the real template and handlers, the emulated Batch + SageMaker, metrics in moto.

ProdExp2 runs ``p2-idle`` (1 ml.p4d.24xlarge) whose GPUs sit idle from its start (gpusim's
``gpusim:idle-after-seconds`` script), ProdExp1 runs ``p1-busy`` (a busy trainer, with gpusim's
data-loading phase and evaluation pauses). The emulator publishes the hosts' ``GPUUtilization``
into the embedded CloudWatch one datapoint a virtual minute, as SageMaker does. With ProdExp2's idle
policy set to warn then stop (grace 15 min, window 10 min, warning grace 5 min), on the emulator's
virtual clock:

- detect_idle (its 5-minute tick) warns ProdExp2 about ``p2-idle`` (SNS, kind=idle), then stops it
  with a ``shareplane idle:`` reason once it stayed idle through the warning grace;
- the stop's FAILED event reaches handle_failure, which classifies it ``idle_stopped`` and does not
  requeue it;
- ``p1-busy`` is never warned nor stopped.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from gpusim.engine import SteppedClock
from shareplane.domain.config.shares import SharesConfig, Tier
from shareplane.domain.idle.policy import IDLE_REASON_PREFIX
from shareplane.domain.idle.record import IdleRecord
from shareplane_cli.demo.run import stack_root
from shareplane_cli.demo.workload import DemoJob, submit_request
from shareplane_cli.local import LocalStack, StackSpec
from shareplane_cli.local.loop import StackLoop
from shareplane_cli.local.runner import FunctionRunner

from tests.conftest import REPO
from tests.local.test_escalation_local import status
from tests.local.test_failures_local import emulated

pytestmark = [pytest.mark.local, pytest.mark.xdist_group("stack-1")]

SPEED = 100.0
WALL_LIMIT_SECONDS = 180.0
IDLE = DemoJob("p2-idle", "ProdExp2", Tier.LOWPRI, 0, 1, 120, idle_after_minutes=0)
BUSY = DemoJob("p1-busy", "ProdExp1", Tier.MIDPRI, 0, 1, 120)


def idle_config() -> SharesConfig:
    """config/shares.yaml with ProdExp2 stopping idle jobs after a warning, on short windows.

    The grace outlasts a busy trainer's data loading (at most 12 minutes in gpusim), as the default does.
    """
    raw = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())
    raw["idle"] = {
        "grace_seconds": 900,
        "window_seconds": 600,
        "teams": {"ProdExp2": {"action": "stop_after_warning", "warning_grace_seconds": 300}},
    }
    return SharesConfig.model_validate(raw)


@dataclass(frozen=True)
class IdleRun:
    """What the run left behind."""

    described: dict[str, dict[str, Any]]
    decisions: list[IdleRecord]
    alerts: list[dict[str, Any]]
    job_names: list[str]


@pytest.fixture
def run(idle_run: IdleRun) -> IdleRun:
    """This module's scenario, run once a session (``tests/local/conftest.py``: the IAM replay reads its calls)."""
    return idle_run


def run_scenario() -> IdleRun:
    """The scenario on a stack of its own."""
    config = idle_config()
    shares_json = json.dumps(config.model_dump(mode="json", exclude_none=True), separators=(",", ":"))
    spec = StackSpec(
        REPO / "template.yaml", shares_config=shares_json, parameters={"RebalanceDryRun": "true"}
    )
    with LocalStack(spec, speed=SPEED, clock=SteppedClock()) as stack:
        batch = emulated(stack, "batch")
        sqs, sns = stack.client("sqs"), stack.client("sns")
        inbox = sqs.create_queue(QueueName="prodexp2-idle-alerts")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=inbox, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(
            TopicArn=stack.outputs["AlertsTopicArn"],
            Protocol="sqs",
            Endpoint=arn,
            Attributes={
                "RawMessageDelivery": "true",
                "FilterPolicy": json.dumps({"kind": ["idle"], "team": ["ProdExp2"]}),
            },
        )
        runner = FunctionRunner(stack)
        loop = StackLoop(stack, runner)
        deadline = time.monotonic() + WALL_LIMIT_SECONDS
        ids = {
            job.name: str(batch.submit_service_job(**submit_request(job, config))["jobId"])
            for job in (IDLE, BUSY)
        }
        loop.run_until(deadline, lambda: status(batch, ids[IDLE.name]) == "FAILED", "the idle job stopped")
        loop.run_until(deadline, lambda: runner.drain() >= 0, "the last events handled")
        described = {name: batch.describe_service_job(jobId=i) for name, i in ids.items()}
        alerts = [
            json.loads(m["Body"])
            for m in sqs.receive_message(QueueUrl=inbox, MaxNumberOfMessages=10).get("Messages", [])
        ]
        listed = batch.list_service_jobs(
            jobQueue=stack.outputs["GpuJobQueueArn"], filters=[{"name": "JOB_NAME", "values": ["*"]}]
        )
        return IdleRun(
            described=described,
            decisions=stack_root(stack).idle_ledger.since(0),
            alerts=alerts,
            job_names=sorted(s["jobName"] for s in listed["jobSummaryList"]),
        )


def test_the_idle_job_is_warned_then_stopped_and_not_requeued(run: IdleRun) -> None:
    idle = run.described[IDLE.name]
    assert idle["status"] == "FAILED" and idle["isTerminated"]
    assert IDLE_REASON_PREFIX in idle["statusReason"]
    assert [(d.job_id, d.act.value) for d in run.decisions] == [
        (idle["jobId"], "warn"),
        (idle["jobId"], "stop"),
    ]
    stop = run.decisions[-1]
    assert stop.stopped and stop.team == "ProdExp2" and stop.gpus == 8
    assert stop.decided_at >= run.decisions[0].decided_at + 300
    # the failure path does not requeue a job stopped for idleness
    assert f"{IDLE.name}-rq1" not in run.job_names


def test_the_team_gets_the_warning_and_the_stop_with_links(run: IdleRun) -> None:
    assert [a["act"] for a in run.alerts] == ["warn", "stop"]
    assert all(
        a["team"] == "ProdExp2" and "TrainingJobs" in a["metrics"].replace("%2F", "/") for a in run.alerts
    )


def test_the_busy_job_is_never_touched(run: IdleRun) -> None:
    busy = run.described[BUSY.name]
    assert busy["status"] in ("RUNNING", "SUCCEEDED") and not busy["isTerminated"]
    assert all(d.job_id != busy["jobId"] for d in run.decisions)
