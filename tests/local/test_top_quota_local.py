"""`shareplane top` on the local stack in quota mode, beside the CPU FIFO queue the config also lists.

The config's quota mode is the GPU queue's: the CPU FIFO queue has no quota shares (a scheduling
policy's type is fixed once set, and a FIFO queue has none). `top` shows the quota-share queue's
usage against each team's entitlement from Batch's quotaShareUtilization, and the FIFO queue's heads
with no usage rows, saying why.

ProdExp1 runs 60 instances (its entitlement), ProdExp2 runs 32 of its 40 and waits with a 16-instance
LOWPRI job that the 8 free instances cannot take (no share is over its quota and nothing of its
own share has a lower priority, so nothing is preempted). On the CPU queue one job holds the 4
instances and another waits behind it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from gpusim.engine import SteppedClock
from shareplane.domain.config.shares import SchedulingMode, SharesConfig, Tier
from shareplane_cli.config_file import load_config
from shareplane_cli.demo.run import template_for
from shareplane_cli.demo.workload import DemoJob, submit_request
from shareplane_cli.local import LocalStack, StackSpec
from shareplane_cli.local.loop import StackLoop
from shareplane_cli.local.runner import FunctionRunner
from shareplane_cli.local.stack import LOCAL_CREDENTIALS, REGION
from shareplane_cli.main import app
from typer.testing import CliRunner
from typer.testing import Result as CliResult

from tests.conftest import REPO
from tests.local.test_escalation_local import status
from tests.local.test_failures_local import emulated

pytestmark = [pytest.mark.local, pytest.mark.xdist_group("stack-2")]

SPEED = 500.0
LOW, MID = Tier.LOWPRI, Tier.MIDPRI
CPU = "ml.c5.xlarge"
GPU_QUEUE, CPU_QUEUE = "search-p4d-queue", "search-cpu-fifo-queue"
RUNNING = [
    DemoJob("p1-a", "ProdExp1", LOW, 0, 30, 600),
    DemoJob("p1-b", "ProdExp1", LOW, 0, 30, 600),
    DemoJob("p2-a", "ProdExp2", LOW, 0, 16, 600),
    DemoJob("p2-b", "ProdExp2", LOW, 0, 16, 600),
    DemoJob("cpu-hold", "ProdExp1", MID, 0, 4, 600, instance_type=CPU),
]
#: LOWPRI like the running work: a higher priority would preempt a LOWPRI job of its own share.
GPU_WAITER = DemoJob("p2-wait", "ProdExp2", LOW, 0, 16, 30)
CPU_WAITER = DemoJob("cpu-wait", "ProdExp1", MID, 0, 1, 30, instance_type=CPU)


@dataclass(frozen=True)
class QuotaRun:
    """The stack, and the quota-mode config file the commands read."""

    stack: LocalStack
    config: SharesConfig
    config_path: Path


def invoke(run: QuotaRun, args: list[str]) -> CliResult:
    """A `shareplane` command against the local stack, as a user with its exports would run it."""
    env = {
        **LOCAL_CREDENTIALS,
        **run.stack.environment(),
        "AWS_DEFAULT_REGION": REGION,
        "COLUMNS": "250",
    }
    common = ["--endpoint", run.stack.endpoint or "", "--table", run.stack.outputs["JobsTableName"]]
    return CliRunner().invoke(app, [*args, *common, "--config", str(run.config_path)], env=env)


def as_json(run: QuotaRun, args: list[str]) -> Any:
    result = invoke(run, [*args, "--output", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    workdir = tmp_path_factory.mktemp("top-quota")
    fairshare = load_config(REPO / "config" / "shares.yaml")
    template, config = template_for(
        SchedulingMode.QUOTA, fairshare, REPO / "template.yaml", workdir, stem="demo-top"
    )
    config_path = workdir / "shares.yaml"
    config_path.write_text(yaml.safe_dump(config.model_dump(mode="json", exclude_none=True)))
    try:
        with LocalStack(StackSpec(template), speed=SPEED, clock=SteppedClock()) as stack:
            batch = emulated(stack, "batch")
            runner = FunctionRunner(stack)
            loop = StackLoop(stack, runner)
            deadline = time.monotonic() + 120.0
            ids = {j.name: batch.submit_service_job(**submit_request(j, config))["jobId"] for j in RUNNING}
            # GIVEN every share's work running: ProdExp1 at its 60, ProdExp2 at 32 of its 40, the CPU queue full
            loop.run_until(
                deadline,
                lambda: all(status(batch, ids[j.name]) == "RUNNING" for j in RUNNING),
                "the running work started",
            )
            # WHEN a 16-instance ProdExp2 job and a CPU job are submitted behind them
            for job in (GPU_WAITER, CPU_WAITER):
                ids[job.name] = batch.submit_service_job(**submit_request(job, config))["jobId"]
            quota_run = QuotaRun(stack, config, config_path)
            loop.run_until(
                deadline,
                lambda: (
                    all(status(batch, ids[j.name]) == "RUNNABLE" for j in (GPU_WAITER, CPU_WAITER))
                    and {GPU_WAITER.name, CPU_WAITER.name}
                    <= {r["jobName"] for r in as_json(quota_run, ["jobs"]) if r["status"] == "RUNNABLE"}
                    and runner.queues_empty()
                ),
                "both waiting jobs recorded RUNNABLE",
            )
            yield quota_run
    finally:
        template.unlink(missing_ok=True)


def test_top_shows_the_quota_share_queues_usage_and_the_fifo_queue_beside_it(run: QuotaRun) -> None:
    frame = as_json(run, ["top", "--samples", "20"])
    queues = {q["queue"]: q for q in frame["queues"]}
    assert list(queues) == [GPU_QUEUE, CPU_QUEUE]  # the config's two queues, GPU first
    gpu, cpu = queues[GPU_QUEUE], queues[CPU_QUEUE]
    # THEN the GPU queue is a quota-share queue, each team's instances from Batch's quotaShareUtilization
    assert gpu["kind"] == "QUOTA" and gpu["sharesSkipped"] is None
    assert (gpu["capacity"], gpu["inUse"], gpu["waitingJobs"]) == (100, 92, 1)
    assert set(gpu["identifiers"]) == {"ProdExp1", "ProdExp2"}  # the quota share names Batch lists
    rows = {(s["team"], s["instanceType"]): s for s in gpu["shares"]}
    p1, p2 = rows[("ProdExp1", "ml.p4d.24xlarge")], rows[("ProdExp2", "ml.p4d.24xlarge")]
    assert (p1["share"], p1["held"], p1["entitled"], p1["waiting"]) == ("ProdExp1", 60, 60, 0)
    assert (p2["share"], p2["held"], p2["entitled"], p2["waiting"]) == ("ProdExp2", 32, 40, 16)
    (head,) = gpu["heads"]
    assert (head["job"], head["share"], head["instances"]) == (GPU_WAITER.name, "ProdExp2", 16)
    assert head["placedBy"] == "GetJobQueueSnapshot"
    assert "capacity_held" in [f["code"] for f in head["heldBackBy"]]
    assert head["forecast"]["samples"] == 20
    # AND the CPU queue is what Batch made it, a FIFO queue: its own capacity and heads, no usage rows
    assert cpu["kind"] == "FIFO" and cpu["shares"] == [] and cpu["identifiers"] == {}
    assert "FIFO queue has no shares" in cpu["sharesSkipped"]
    assert (cpu["capacity"], cpu["inUse"], cpu["waitingJobs"]) == (4, 4, 1)
    (cpu_head,) = cpu["heads"]
    assert (cpu_head["job"], cpu_head["instances"], cpu_head["share"]) == (CPU_WAITER.name, 1, None)
    reasons = {f["code"]: f["text"] for f in cpu_head["heldBackBy"]}
    assert reasons["capacity_held"] == "it needs 1 instances and 0 are free; held by jobs without a share 4"
    assert cpu_head["forecast"]["samples"] == 20
    starts = cpu_head["startsInSeconds"]
    assert starts["p50"] is not None and starts["p10"] <= starts["p50"]


def test_top_once_prints_both_queues_for_people(run: QuotaRun) -> None:
    result = invoke(run, ["top", "--once", "--samples", "10"])
    assert result.exit_code == 0, result.output
    assert f"{GPU_QUEUE} (quota): 92/100 instances in use, 1 jobs waiting" in result.output
    assert f"{CPU_QUEUE} (fifo): 4/4 instances in use, 1 jobs waiting" in result.output
    assert "usage vs entitlement (instances)" in result.output
    assert "usage vs entitlement: none (a FIFO queue has no shares" in result.output
    assert GPU_WAITER.name in result.output and CPU_WAITER.name in result.output
