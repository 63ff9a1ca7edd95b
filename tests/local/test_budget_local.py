"""Cost, budget alerts and enforcement end to end on the local stack.

ProdExp1's budget is made small (60 USD a month, alerts at 80% and 100%, new LOWPRI drops refused
when over) in the config the stack stores (StackSpec.shares_config). One HIGHPRI job on two ml.p4d.24xlarge
runs for an hour of the emulator's virtual clock: the emulator reports its BillableTimeInSeconds,
record_state costs it once (about 78 USD at 37.688 USD per instance-hour), the watch's scheduled
ticks alert each threshold once however many ticks follow, `shareplane usage` and `shareplane
budgets` report it, and a LOWPRI spec dropped afterwards is refused with the reason and the way on.
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
from tests.local.test_failures_local import cli_json, drain_queue, emulated, subscribe_to_alerts

pytestmark = [pytest.mark.local, pytest.mark.xdist_group("stack-2")]

SPEED = 500.0
WALL_LIMIT_SECONDS = 120.0
P4D_PRICE = 37.688
SPENDER = DemoJob("spend-01", "ProdExp1", Tier.HIGHPRI, 0, 2, 60)
LOWPRI_SPEC = {
    "name": "sweep-after-budget",
    "team": "ProdExp1",
    "priority": "LOWPRI",
    "instance_type": "ml.p4d.24xlarge",
    "instance_count": 1,
    "image": "111122223333.dkr.ecr.us-east-1.amazonaws.com/prodexp1/trainer:1",
    "inputs": {"train": "s3://search-ml-datasets/prodexp1/sweep/"},
    "output_path": "s3://search-ml-training/prodexp1/sweep/",
    "max_runtime_seconds": 3600,
}


def small_budget_config() -> SharesConfig:
    raw = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())
    raw["budgets"] = {
        "ProdExp1": {"monthly_usd": 60, "alert_thresholds": [0.8, 1.0], "enforcement": "refuse_lowpri"}
    }
    return SharesConfig.model_validate(raw)


@dataclass(frozen=True)
class BudgetRun:
    costs: list[Any]
    training: dict[str, Any]  # the emulator's DescribeTrainingJob of the spender's training job
    sns: list[dict[str, Any]]  # every notification on the alerts topic
    usage: list[dict[str, Any]]  # `shareplane usage --output json`
    budgets: list[dict[str, Any]]  # `shareplane budgets --output json`
    answer: dict[str, Any]  # the answer to the LOWPRI drop made over budget


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> BudgetRun:
    config = small_budget_config()
    config_path = tmp_path_factory.mktemp("budget") / "shares.yaml"
    config_path.write_text(yaml.safe_dump(config.model_dump(mode="json", exclude_none=True)))
    shares_json = json.dumps(config.model_dump(mode="json", exclude_none=True), separators=(",", ":"))
    spec = StackSpec(REPO / "template.yaml", shares_config=shares_json)
    with LocalStack(spec, speed=SPEED, clock=SteppedClock()) as stack:
        batch, sagemaker = emulated(stack, "batch"), emulated(stack, "sagemaker")
        inbox = subscribe_to_alerts(stack)
        runner = FunctionRunner(stack)
        loop = StackLoop(stack, runner)
        store = DynamoJobStore(stack.client("dynamodb"), stack.outputs["JobsTableName"])
        deadline = time.monotonic() + WALL_LIMIT_SECONDS
        job_id = batch.submit_service_job(**submit_request(SPENDER, config))["jobId"]
        notes: list[dict[str, Any]] = []

        def alerted(count: int) -> Any:
            def check() -> bool:
                notes.extend(drain_queue(stack.client("sqs"), inbox))
                return len([n for n in notes if n.get("kind") == "budget"]) >= count

            return check

        # WHEN the job runs its hour and the watch ticks after its cost is recorded
        loop.run_until(deadline, lambda: bool(store.costs()), "the spender's cost recorded")
        loop.run_until(deadline, alerted(2), "both budget alerts")
        # ... and the watch keeps ticking for another virtual half hour
        until = stack.emulator.virtual_now() + 1800
        loop.run_until(deadline, lambda: stack.emulator.virtual_now() >= until, "half an hour more")
        notes.extend(drain_queue(stack.client("sqs"), inbox))
        # AND a LOWPRI spec is dropped while the team is over its budget
        s3, bucket = stack.client("s3"), stack.outputs["DropBucketName"]
        version = s3.put_object(
            Bucket=bucket, Key="submit/ProdExp1/sweep.json", Body=json.dumps(LOWPRI_SPEC).encode()
        )["VersionId"]
        answer_key = f"answers/ProdExp1/sweep.json/{version}.json"

        def answered() -> bool:
            return "Contents" in s3.list_objects_v2(Bucket=bucket, Prefix=answer_key)

        loop.run_until(deadline, answered, "the LOWPRI drop answered")
        described = batch.describe_service_job(jobId=job_id)
        training_name = described["latestAttempt"]["serviceResourceId"]["value"].rsplit("/", 1)[-1]
        return BudgetRun(
            costs=store.costs(),
            training=sagemaker.describe_training_job(TrainingJobName=training_name),
            sns=notes,
            usage=cli_json(stack, ["usage"]),
            budgets=cli_json(stack, ["budgets", "--config", str(config_path)]),
            answer=json.loads(s3.get_object(Bucket=bucket, Key=answer_key)["Body"].read()),
        )


def test_the_training_job_is_costed_once_from_the_billable_time_the_emulator_reports(run: BudgetRun) -> None:
    (cost,) = run.costs
    billable = run.training["BillableTimeInSeconds"]
    assert billable == run.training["TrainingTimeInSeconds"] > 3600  # on demand: all training time
    assert cost.billable_seconds == billable and cost.instance_count == 2
    assert cost.usd == pytest.approx(billable * 2 / 3600 * P4D_PRICE, abs=1e-4)
    assert (cost.team, cost.tier) == ("ProdExp1", "HIGHPRI")
    (row,) = [r for r in run.usage if r["team"] == "ProdExp1"]
    assert row["usd"] == pytest.approx(cost.usd, abs=0.01) and row["attempts"] == 1


def test_each_threshold_alerts_once_with_attributes_for_filter_policies(run: BudgetRun) -> None:
    budget = [n for n in run.sns if n.get("kind") == "budget"]
    assert sorted(n["message"]["threshold"] for n in budget) == [0.8, 1.0]
    assert {(n["team"], n["share"]) for n in budget} == {("ProdExp1", "ProdExp1")}
    assert sorted(n["severity"] for n in budget) == ["critical", "warning"]
    assert all(n["message"]["forecast_usd"] >= n["message"]["spent_usd"] for n in budget)
    (status,) = run.budgets
    assert status["over"] is True and status["spent_usd"] == pytest.approx(run.costs[0].usd, abs=0.01)


def test_a_lowpri_drop_over_budget_is_refused_saying_why_and_how_to_proceed(run: BudgetRun) -> None:
    answer = run.answer
    assert answer["outcome"] == "rejected"
    (error,) = [e for r in answer["rejected"] for e in r["errors"]]
    assert "budget" in error["message"] and "new LOWPRI jobs are refused" in error["message"]
    assert "MIDPRI or HIGHPRI" in error["fix"]
