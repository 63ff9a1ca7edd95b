"""Operator views on the local stack: `shareplane jobs JOB` tells one job's story, `shareplane top` shows
each team's usage against its entitlement and the queue's heads.

ProdExp1 fills 96 of the 100 instances with long work and runs one short job to its end; then ProdExp2
submits an 8-instance job, which waits (fair-share never preempts). Every event goes through the real
handlers into the jobs table; the commands read it and the emulated Batch as they would read AWS.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import pytest
from gpusim.engine import SteppedClock
from shareplane.domain.config.shares import SharesConfig, Tier
from shareplane_cli.config_file import load_config
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
CONFIG_PATH = REPO / "config" / "shares.yaml"
LOW, MID = Tier.LOWPRI, Tier.MIDPRI
#: ProdExp1's long work on 96 instances, and a short job on the last 4 that ends.
FILLERS = [DemoJob(f"fill-{i:02d}", "ProdExp1", LOW, 0, 32, 600) for i in (1, 2, 3)]
SHORT = DemoJob("short-01", "ProdExp1", LOW, 0, 4, 2)
WAITER = DemoJob("wait-p2-01", "ProdExp2", MID, 0, 8, 30)
GPU_QUEUE = "search-p4d-queue"


@dataclass(frozen=True)
class ViewsRun:
    """The stack's address (for running the commands) and what Batch said about each job."""

    stack: LocalStack
    config: SharesConfig
    described: dict[str, dict[str, Any]]


def invoke(run: ViewsRun, args: list[str], *, columns: int = 250) -> CliResult:
    """A `shareplane` command against the local stack, as a user with its exports would run it."""
    env = {
        **LOCAL_CREDENTIALS,
        **run.stack.environment(),
        "AWS_DEFAULT_REGION": REGION,
        "COLUMNS": str(columns),  # one table row per line, however long the history
    }
    common = ["--endpoint", run.stack.endpoint or "", "--table", run.stack.outputs["JobsTableName"]]
    return CliRunner().invoke(app, [*args, *common, "--config", str(CONFIG_PATH)], env=env)


def as_json(run: ViewsRun, args: list[str]) -> Any:
    result = invoke(run, [*args, "--output", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def run() -> Any:
    config = load_config(CONFIG_PATH)
    with LocalStack(StackSpec(REPO / "template.yaml"), speed=SPEED, clock=SteppedClock()) as stack:
        batch = emulated(stack, "batch")
        runner = FunctionRunner(stack)
        loop = StackLoop(stack, runner)
        deadline = time.monotonic() + 90.0
        ids = {
            j.name: batch.submit_service_job(**submit_request(j, config))["jobId"] for j in [*FILLERS, SHORT]
        }
        # GIVEN ProdExp1's fillers run and its short job has ended (and been costed)
        loop.run_until(
            deadline,
            lambda: (
                all(status(batch, ids[j.name]) == "RUNNING" for j in FILLERS)
                and status(batch, ids[SHORT.name]) == "SUCCEEDED"
            ),
            "fillers running, the short job done",
        )
        # WHEN ProdExp2 submits a job that does not fit in the 4 instances left
        ids[WAITER.name] = batch.submit_service_job(**submit_request(WAITER, config))["jobId"]
        views = ViewsRun(stack, config, {})
        loop.run_until(
            deadline,
            lambda: (
                status(batch, ids[WAITER.name]) == "RUNNABLE"
                and any(r["jobName"] == WAITER.name for r in as_json(views, ["jobs"]))
                and runner.queues_empty()
            ),
            "the ProdExp2 job recorded RUNNABLE",
        )
        yield ViewsRun(stack, config, {n: batch.describe_service_job(jobId=i) for n, i in ids.items()})


def first_dispatch_ms(record: dict[str, Any]) -> int:
    """The first SCHEDULED of the record's history, read straight off the entries."""
    return min(h["at"] for h in record["history"] if h["status"] == "SCHEDULED")


# ------------------------------------------------------------------------------------------ jobs JOB
def test_a_finished_jobs_story_labels_every_state_by_source_and_measures_its_wait(run: ViewsRun) -> None:
    (story,) = as_json(run, ["jobs", SHORT.name])
    labels = [e["label"] for e in story["timeline"]]
    # Batch's states and SageMaker's training-job states, each said by its source
    assert {"batch:RUNNABLE", "batch:SCHEDULED", "batch:SUCCEEDED"} <= set(labels), labels
    assert any(label.startswith("sagemaker:") for label in labels), labels
    assert {e["source"] for e in story["timeline"]} >= {"batch", "sagemaker"}
    assert all(
        label.split(":", 1)[0] in {"batch", "reconciled", "submit", "shareplane", "sagemaker"}
        for label in labels
    )
    # the timeline is in time order, SageMaker's events between Batch's
    times = [e["at"] for e in story["timeline"] if e["at"] is not None]
    assert times == sorted(times)
    # the wait ends at the first dispatch (SCHEDULED), from createdAt
    assert story["wait"]["ended"] is True
    assert story["wait"]["firstDispatchAt"] == first_dispatch_ms(story)
    assert story["wait"]["seconds"] == round((first_dispatch_ms(story) - story["createdAt"]) / 1000)
    # its one attempt was costed at the config's price
    (attempt,) = story["cost"]["attempts"]
    assert attempt["instanceCount"] == SHORT.instances and attempt["usd"] > 0
    assert story["cost"]["usd"] == attempt["usd"]
    assert story["placement"]["now"]["queue"].endswith(GPU_QUEUE)
    assert story["prediction"] is None  # no watch tick stored one for a job that never waited long


def test_a_running_jobs_cost_is_estimated_so_far(run: ViewsRun) -> None:
    (story,) = as_json(run, ["jobs", FILLERS[0].name])
    assert story["status"] == "RUNNING" and story["wait"]["ended"] is True
    (attempt,) = story["cost"]["attempts"]
    assert attempt["source"] == "running" and attempt["instanceCount"] == FILLERS[0].instances
    assert attempt["billableSeconds"] > 0 and attempt["usd"] > 0


def test_a_waiting_jobs_story_says_it_is_still_waiting(run: ViewsRun) -> None:
    (story,) = as_json(run, ["jobs", WAITER.name])
    assert story["status"] == "RUNNABLE"
    assert story["wait"]["ended"] is False and story["wait"]["firstDispatchAt"] is None
    assert story["wait"]["seconds"] >= 0 and story["wait"]["text"].endswith("so far")
    assert story["placement"]["now"]["share"] == "ProdExp2"
    assert story["placement"]["now"]["tier"] == "MIDPRI"
    # --job is the same view, and the table view shows the labelled timeline
    assert as_json(run, ["jobs", "--job", WAITER.name])[0]["jobArn"] == story["jobArn"]
    table = invoke(run, ["jobs", SHORT.name])
    assert table.exit_code == 0, table.output
    assert "batch:SCHEDULED" in table.output and "timeline (source:state)" in table.output
    assert "submission to first dispatch" in table.output


def test_the_jobs_list_has_a_wait_column_and_the_story_a_labelled_history(run: ViewsRun) -> None:
    result = invoke(run, ["jobs"], columns=400)
    assert result.exit_code == 0, result.output
    header = next(line for line in result.output.splitlines() if line.startswith("job ") and "wait" in line)
    assert "status" in header and "history" not in header  # one line per job: the history is the story's
    (row,) = [line for line in result.output.splitlines() if line.startswith(f"{SHORT.name} ")]
    (story,) = as_json(run, ["jobs", SHORT.name])
    assert story["wait"]["text"] in row
    (waiting,) = [line for line in result.output.splitlines() if line.startswith(f"{WAITER.name} ")]
    assert "so far" in waiting
    told = invoke(run, ["jobs", SHORT.name], columns=400)
    assert told.exit_code == 0 and "batch:SCHEDULED" in told.output, told.output


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["jobs", "no-such-job"], 5, "no recorded job"),
        (["jobs", "--job", "no-such-job"], 5, "no recorded job"),
        (["jobs", SHORT.name, "--job", WAITER.name], 2, "name different jobs"),
    ],
    ids=["an unknown JOB is not found", "an unknown --job is not found", "JOB and --job must agree"],
)
def test_bad_job_names_get_a_clean_error(run: ViewsRun, args: list[str], code: int, said: str) -> None:
    result = invoke(run, args)
    assert result.exit_code == code, result.output
    assert said in result.output and "Traceback" not in result.output


# ------------------------------------------------------------------------------------------------- top
def test_top_shows_usage_against_entitlement_and_the_waiting_job_at_the_head(run: ViewsRun) -> None:
    frame = as_json(run, ["top"])
    gpu = next(q for q in frame["queues"] if q["queue"] == GPU_QUEUE)
    rows = {(s["team"], s["instanceType"]): s for s in gpu["shares"]}
    p1, p2 = rows[("ProdExp1", "ml.p4d.24xlarge")], rows[("ProdExp2", "ml.p4d.24xlarge")]
    # Batch's count: the three fillers hold 96; the short job has ended; ProdExp2 holds none and waits for 8
    assert (p1["held"], p1["entitled"]) == (3 * 32, 60)
    assert (p2["held"], p2["entitled"], p2["waiting"]) == (0, 40, WAITER.instances)
    assert gpu["inUse"] == 96 and gpu["capacity"] == 100 and gpu["waitingJobs"] == 1
    (head,) = gpu["heads"]
    assert head["job"] == WAITER.name and head["placedBy"] == "GetJobQueueSnapshot"
    assert head["instances"] == WAITER.instances and head["share"] == "ProdExp2"
    codes = [f["code"] for f in head["heldBackBy"]]
    assert "capacity_held" in codes
    starts = head["startsInSeconds"]
    assert starts["p50"] is not None and starts["p10"] <= starts["p50"]
    assert head["forecast"]["samples"] == 50


def test_top_once_prints_one_frame_for_people(run: ViewsRun) -> None:
    result = invoke(run, ["top", "--once", "--heads", "3", "--samples", "10"])
    assert result.exit_code == 0, result.output
    assert "usage vs entitlement" in result.output and "queue heads" in result.output
    line = next(row for row in result.output.splitlines() if WAITER.name in row)
    assert "it needs 8 instances and 4 are free" in line
    bad = invoke(run, ["top", "--once", "--interval", "0.1"])
    assert bad.exit_code == 2 and "--interval" in bad.output
