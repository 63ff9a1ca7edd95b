"""A lost SageMaker final event, repaired by the watch end to end on the local stack.

One ProdExp1 MIDPRI job on two ml.p4d.24xlarge trains for half an hour of the emulator's virtual
clock; the final "SageMaker Training Job State Change" event of its training job never reaches the
bus. Batch's SUCCEEDED event still arrives, so the watch's next tick finds the training job open in
the table while its Batch job has ended, asks SageMaker (DescribeTrainingJob: the IAM replay,
tests/local/test_iam_local.py, evaluates that call against WatchJobsRole), and records the answer
through the record path, which costs the attempt once to ProdExp1 from the billable time SageMaker
reports.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from gpusim.engine import SteppedClock
from shareplane.adapters.dynamodb_store import DynamoJobStore
from shareplane.domain.config.shares import SharesConfig, Tier
from shareplane_cli.demo.workload import DemoJob, submit_request
from shareplane_cli.local import LocalStack, StackSpec
from shareplane_cli.local.loop import StackLoop
from shareplane_cli.local.runner import FunctionRunner

from tests.conftest import REPO
from tests.local.test_failures_local import cli_json, emulated

pytestmark = [pytest.mark.local, pytest.mark.xdist_group("stack-1")]

SPEED = 500.0
WALL_LIMIT_SECONDS = 120.0
P4D_PRICE = 37.688
JOB = DemoJob("lost-final-01", "ProdExp1", Tier.MIDPRI, 0, 2, 30)


def losing_final_training_events(lost: list[str]) -> Any:
    """A predicate picking the SageMaker events that say a training job ended, noting each one's job."""

    def pick(entry: Any) -> bool:
        if entry.get("DetailType") != "SageMaker Training Job State Change":
            return False
        detail = json.loads(entry["Detail"])
        if detail.get("TrainingJobStatus") not in ("Completed", "Failed", "Stopped"):
            return False
        lost.append(detail["TrainingJobName"])
        return True

    return pick


@dataclass(frozen=True)
class LostEventRun:
    costs: list[Any]
    training_state: Any  # the table's state of the job's training job, after the watch
    described: dict[str, Any]  # the emulator's DescribeTrainingJob of it
    lost: list[str]  # the training jobs whose final event was lost
    watch_repairs: int  # training jobs the watch's ticks repaired (their log lines)
    usage: list[dict[str, Any]]  # `shareplane usage --output json`


def run_scenario() -> LostEventRun:
    """The scenario on a stack of its own."""
    config = SharesConfig.model_validate(yaml.safe_load((REPO / "config" / "shares.yaml").read_text()))
    lost: list[str] = []
    spec = StackSpec(REPO / "template.yaml")
    with LocalStack(
        spec, speed=SPEED, clock=SteppedClock(), lost=losing_final_training_events(lost)
    ) as stack:
        batch, sagemaker = emulated(stack, "batch"), emulated(stack, "sagemaker")
        runner = FunctionRunner(stack)
        loop = StackLoop(stack, runner)
        store = DynamoJobStore(stack.client("dynamodb"), stack.outputs["JobsTableName"])
        deadline = time.monotonic() + WALL_LIMIT_SECONDS
        job_id = batch.submit_service_job(**submit_request(JOB, config))["jobId"]

        # WHEN the job runs to its end (its training job's final event lost on the way), and the
        # watch ticks until the attempt is costed
        loop.run_until(deadline, lambda: bool(store.jobs("SUCCEEDED")), "the Batch job recorded SUCCEEDED")
        loop.run_until(deadline, lambda: bool(store.costs()), "the attempt costed by the watch's repair")
        described_job = batch.describe_service_job(jobId=job_id)
        arn = described_job["latestAttempt"]["serviceResourceId"]["value"]
        return LostEventRun(
            costs=store.costs(),
            training_state=store.load_training_job(arn),
            described=sagemaker.describe_training_job(TrainingJobName=arn.rsplit("/", 1)[-1]),
            lost=list(lost),
            watch_repairs=sum(
                i.output.count('"training_repaired":1') + i.output.count('"training_repaired": 1')
                for i in runner.invocations
                if i.function == "WatchJobsFunction"
            ),
            usage=cli_json(stack, ["usage"]),
        )


@pytest.fixture(scope="module")
def run(lost_event_run: LostEventRun) -> LostEventRun:
    return lost_event_run


def test_the_final_event_was_lost_and_the_watch_recorded_the_training_job_final(run: LostEventRun) -> None:
    assert run.lost == [run.described["TrainingJobName"]]
    assert run.watch_repairs == 1
    assert run.training_state is not None and run.training_state.status.value == "Completed"
    assert run.training_state.billable_seconds == run.described["BillableTimeInSeconds"]


def test_the_repaired_attempt_is_costed_once_to_its_batch_jobs_team_from_sagemakers_billable_time(
    run: LostEventRun,
) -> None:
    (cost,) = run.costs
    billable = run.described["BillableTimeInSeconds"]
    assert (cost.team, cost.tier, cost.instance_count) == ("ProdExp1", "MIDPRI", 2)
    assert cost.billable_seconds == billable
    assert cost.usd == pytest.approx(billable * 2 / 3600 * P4D_PRICE, abs=1e-4)
    (row,) = [r for r in run.usage if r["team"] == "ProdExp1"]
    assert row["usd"] == pytest.approx(cost.usd, abs=0.01) and row["estimated_usd"] == 0.0
