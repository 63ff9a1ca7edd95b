"""The failure path end to end: the real template and handlers against the emulated Batch + SageMaker.

One run of a small workload on the local stack, with gpusim scripting each dispatch's outcome:

- a capacity error is Batch's to requeue (the job goes back to RUNNABLE and succeeds; shareplane
  neither requeues nor alerts);
- an internal error that uses up Batch's own retries comes back through shareplane's requeue: a
  new service job with the same payload (CheckpointConfig included), share and priority, which
  finishes;
- a spot interruption stays inside SageMaker (Interrupted, then training resumes): the Batch job
  never fails, so nothing is requeued;
- a CUDA OOM raises exactly one alert (the ALERT item, `shareplane alerts` and the SNS topic) and
  is not requeued;
- a share failing faster than the storm guard allows stops being requeued, with one storm alert.

The failure policy is overridden in the config the stack stores (StackSpec.shares_config) (a one-second
backoff, a storm guard of three failures) so the run takes seconds; config/shares.yaml is untouched.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
import yaml
from gpusim import Faults
from gpusim.engine import SteppedClock
from shareplane.domain.config.shares import SharesConfig, Tier
from shareplane.domain.jobs.arns import same_training_job
from shareplane_cli.demo.workload import DemoJob, submit_request
from shareplane_cli.local import LocalStack, StackSpec
from shareplane_cli.local.loop import StackLoop
from shareplane_cli.local.runner import FunctionRunner
from shareplane_cli.local.stack import LOCAL_CREDENTIALS, REGION
from shareplane_cli.main import app
from typer.testing import CliRunner

from tests.conftest import REPO

pytestmark = [pytest.mark.local, pytest.mark.xdist_group("stack-1")]

#: Virtual seconds per wall second: a ten-minute job plays out in about two seconds.
SPEED = 500.0
#: A wall-clock bound on the run, so a stuck failure path fails with what is left instead of hanging.
WALL_LIMIT_SECONDS = 120.0
#: The storm guard under test: more than this many failures of one share within the window is a storm.
STORM_MAX_FAILURES = 3

MID, LOW = Tier.MIDPRI, Tier.LOWPRI
CAPACITY = DemoJob("cap-eval-01", "ProdExp1", MID, 0, 1, 10, ("capacity", "ok"))
# ProdExp1's jobs get two attempts (default_retry_attempts) and Batch retries InternalServerError:
# two internal errors use up Batch's own retry.
INTERNAL = DemoJob("int-ft-01", "ProdExp1", MID, 0, 1, 10, ("internal", "internal"))
SPOT = DemoJob("spot-ft-01", "ProdExp1", LOW, 0, 1, 10, ("spot",))
CUDA_OOM = DemoJob("oom-ft-01", "ProdExp1", LOW, 0, 1, 10, ("cuda_oom",))
# ProdExp2's jobs get one attempt: each internal error fails its job at once, all within the window.
STORM = [DemoJob(f"storm-eval-{i:02d}", "ProdExp2", MID, 0, 1, 10, ("internal",)) for i in range(1, 6)]
JOBS = [CAPACITY, INTERNAL, SPOT, CUDA_OOM, *STORM]


def small_policy_config() -> SharesConfig:
    """config/shares.yaml with a failure policy small enough for a test: 1 s backoff, storm at 4 failures."""
    raw = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())
    raw["failures"] = {
        "backoff": {"base_seconds": 1, "factor": 1, "cap_seconds": 1, "jitter": 0},
        "storm": {"max_failures": STORM_MAX_FAILURES, "window_seconds": 3600},
    }
    return SharesConfig.model_validate(raw)


@dataclass(frozen=True)
class FailureRun:
    """What the run left behind, read back from Batch, the table, the CLI and the alerts topic."""

    described: dict[str, dict[str, Any]]  # DescribeServiceJob by job name, requeues included
    decisions: dict[str, list[dict[str, Any]]]  # DECISION items by the failed job's name
    alerts: list[dict[str, Any]]  # `shareplane alerts --output json`
    records: dict[str, dict[str, Any]]  # `shareplane jobs --output json` by job name
    sns: list[dict[str, Any]]  # SNS notifications delivered to an SQS subscription of the topic
    training: dict[str, dict[str, Any]]  # DescribeTrainingJob by name
    handled: list[dict[str, Any]]  # handle_failure's "handled" log lines
    dead_letters: int  # messages in the handlers' dead-letter queues


# ------------------------------------------------------------------------------------------- the run
@pytest.fixture
def run(failure_run: FailureRun) -> FailureRun:
    """This module's scenario, run once a session (``tests/local/conftest.py``: the IAM replay reads its calls)."""
    return failure_run


def run_scenario() -> FailureRun:
    """The scenario on a stack of its own."""
    config = small_policy_config()
    shares_json = json.dumps(config.model_dump(mode="json", exclude_none=True), separators=(",", ":"))
    spec = StackSpec(REPO / "template.yaml", shares_config=shares_json)
    faults = Faults(scripted={job.name: job.outcomes for job in JOBS})
    with LocalStack(spec, speed=SPEED, faults=faults, clock=SteppedClock()) as stack:
        batch = emulated(stack, "batch")
        inbox = subscribe_to_alerts(stack)
        queue = stack.outputs["GpuJobQueueArn"]
        for job in JOBS:
            batch.submit_service_job(**submit_request(job, config))
        runner = FunctionRunner(stack)
        settle(stack, runner, StackLoop(stack, runner), batch, queue)
        table = stack.outputs["JobsTableName"]
        return FailureRun(
            described=describe_all(batch, queue),
            decisions=decisions_by_job(stack.client("dynamodb"), table),
            alerts=cli_json(stack, ["alerts", "--since", "1h"]),
            records={r["jobName"]: r for r in cli_json(stack, ["jobs"])},
            sns=drain_queue(stack.client("sqs"), inbox),
            training=describe_training_jobs(emulated(stack, "sagemaker")),
            handled=handled_lines(runner),
            dead_letters=dead_letters(stack),
        )


def emulated(stack: LocalStack, service: str) -> Any:
    """A boto3 client of the emulated Batch or SageMaker, set up only by the stack's exported variables."""
    env = stack.environment()
    return boto3.client(
        service,
        endpoint_url=env[f"AWS_ENDPOINT_URL_{service.upper()}"],
        region_name=REGION,
        aws_access_key_id=LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )


def subscribe_to_alerts(stack: LocalStack) -> str:
    """An SQS queue subscribed to the alerts topic (as a team's endpoint would be); returns its URL."""
    sqs, sns = stack.client("sqs"), stack.client("sns")
    url = sqs.create_queue(QueueName="failure-test-alerts")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=stack.outputs["AlertsTopicArn"], Protocol="sqs", Endpoint=arn)
    return url


def settle(stack: LocalStack, runner: FunctionRunner, loop: StackLoop, batch: Any, queue: str) -> None:
    """Drive schedules and queues until every job (requeues too) ended and every decision is applied."""
    table = stack.outputs["JobsTableName"]
    dynamodb = stack.client("dynamodb")
    deadline = time.monotonic() + WALL_LIMIT_SECONDS

    def busy() -> bool:
        return any(d["status"] not in FINAL for d in describe_all(batch, queue).values()) or any(
            not d["applied"] for ds in decisions_by_job(dynamodb, table).values() for d in ds
        )

    while True:
        if time.monotonic() > deadline:
            active = [n for n, d in describe_all(batch, queue).items() if d["status"] not in FINAL]
            pending = [
                d["jobName"]
                for ds in decisions_by_job(dynamodb, table).values()
                for d in ds
                if not d["applied"]
            ]
            raise TimeoutError(
                f"not settled in {WALL_LIMIT_SECONDS:.0f} s: active {active}, pending {pending}"
            )
        # The schedules (watch, rebalance) keep firing on the virtual clock, so "nothing handled" never
        # comes: settled is every job final, every decision applied, and the last events handled.
        loop.step()
        if busy():
            continue  # a requeue backs off on the virtual clock (an SQS delay the loop releases)
        assert stack.emulator is not None and stack.emulator.wait_for_events(10)
        runner.drain()
        if not busy() and not delayed(stack):
            return


def delayed(stack: LocalStack) -> int:
    """Messages the failure path sent itself with a delay (requeues not due yet)."""
    attributes = stack.client("sqs").get_queue_attributes(
        QueueUrl=stack.outputs["HandleFailureQueueUrl"], AttributeNames=["ApproximateNumberOfMessagesDelayed"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessagesDelayed"])


FINAL = ("SUCCEEDED", "FAILED")


def describe_all(batch: Any, queue: str) -> dict[str, dict[str, Any]]:
    """DescribeServiceJob of every job in the queue, by name."""
    listed = batch.list_service_jobs(jobQueue=queue, filters=[{"name": "JOB_NAME", "values": ["*"]}])
    summaries = listed["jobSummaryList"]
    return {s["jobName"]: batch.describe_service_job(jobId=s["jobId"]) for s in summaries}


def describe_training_jobs(sagemaker: Any) -> dict[str, dict[str, Any]]:
    """DescribeTrainingJob of every training job the emulated SageMaker ran, by name."""
    names = [
        t["TrainingJobName"]
        for page in sagemaker.get_paginator("list_training_jobs").paginate()
        for t in page["TrainingJobSummaries"]
    ]
    return {n: sagemaker.describe_training_job(TrainingJobName=n) for n in names}


def training_jobs_of(run: FailureRun, name: str) -> list[dict[str, Any]]:
    """The training jobs Batch started for the service job ``name``, oldest first."""
    found = [t for n, t in run.training.items() if n.startswith(f"AWSBatch{name}")]
    return sorted(found, key=lambda t: t["CreationTime"])


def decisions_by_job(dynamodb: Any, table: str) -> dict[str, list[dict[str, Any]]]:
    """The failure path's DECISION items, by the failed job's name."""
    from boto3.dynamodb.types import TypeDeserializer

    out: dict[str, list[dict[str, Any]]] = {}
    deserialize = TypeDeserializer().deserialize
    for page in dynamodb.get_paginator("scan").paginate(
        TableName=table, FilterExpression="entity = :d", ExpressionAttributeValues={":d": {"S": "decision"}}
    ):
        for item in page["Items"]:
            decision = {k: deserialize(v) for k, v in item.items()}
            out.setdefault(decision["jobName"], []).append(decision)
    return out


def cli_json(stack: LocalStack, args: list[str]) -> list[dict[str, Any]]:
    """A `shareplane` command's --output json against the local stack."""
    env = {**LOCAL_CREDENTIALS, "AWS_DEFAULT_REGION": REGION}
    common = [
        "--endpoint",
        stack.endpoint or "",
        "--table",
        stack.outputs["JobsTableName"],
        "--output",
        "json",
    ]
    result = CliRunner().invoke(app, [*args, *common], env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def drain_queue(sqs: Any, url: str) -> list[dict[str, Any]]:
    """Every SNS notification on the subscribed queue: subject, message and attributes."""
    notes: list[dict[str, Any]] = []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in messages:
            body = json.loads(message["Body"])
            attributes = {k: v["Value"] for k, v in body.get("MessageAttributes", {}).items()}
            notes.append(
                {"subject": body.get("Subject"), "message": json.loads(body["Message"]), **attributes}
            )
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return notes


def handled_lines(runner: FunctionRunner) -> list[dict[str, Any]]:
    """handle_failure's structured "handled" log lines (one per message)."""
    lines = []
    for invocation in runner.invocations:
        if invocation.function != "HandleFailureFunction":
            continue
        for line in invocation.output.splitlines():
            if line.startswith("{") and '"handled"' in line:
                lines.append(json.loads(line))
    return lines


def dead_letters(stack: LocalStack) -> int:
    """Messages in every dead-letter queue of the stack's handlers."""
    sqs = stack.client("sqs")
    total = 0
    for key, url in stack.outputs.items():
        if key.endswith("DeadLetterQueueUrl"):
            attributes = sqs.get_queue_attributes(
                QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"]
            )
            total += int(attributes["Attributes"]["ApproximateNumberOfMessages"])
    return total


def requeues_of(run: FailureRun, name: str) -> list[str]:
    """Names of the service jobs that resubmit ``name``."""
    return sorted(n for n in run.described if n.startswith(f"{name}-rq"))


def alerts_of(run: FailureRun, kind: str, share: str | None = None) -> list[dict[str, Any]]:
    """`shareplane alerts` rows of one kind (and share)."""
    return [a for a in run.alerts if a["kind"] == kind and (share is None or a["share"] == share)]


# ------------------------------------------------------------------------------------------ the tests
def test_the_run_ends_with_nothing_dead_lettered_and_only_two_alerts(run: FailureRun) -> None:
    assert run.dead_letters == 0
    assert all(d["status"] in FINAL for d in run.described.values())
    # The CUDA OOM's alert and the storm's digest; the capacity error, the retried and the spot
    # interruption raise none, and the storm's other failures are folded into its digest.
    # (team x tier: each alert names the job's identifier and, beside it, the team)
    expected = [("failure", "ProdExp1", "ProdExp1"), ("storm", "ProdExp2", "ProdExp2")]
    assert sorted((a["kind"], a["team"], a["share"]) for a in run.alerts) == expected
    assert sorted((n["kind"], n["team"], n["share"]) for n in run.sns) == expected


def test_a_capacity_error_is_left_to_batch_which_runs_the_job_again(run: FailureRun) -> None:
    job = run.described[CAPACITY.name]
    # GIVEN a dispatch that ends in a SageMaker CapacityError
    # THEN Batch put the job back to RUNNABLE itself (no attempt spent) and it succeeded
    assert job["status"] == "SUCCEEDED"
    record = run.records[CAPACITY.name]
    assert record["capacityRequeues"] >= 1
    statuses = [h["status"] for h in record["history"]]
    assert statuses[statuses.index("SCHEDULED") + 1] == "RUNNABLE", statuses
    # AND shareplane saw the failed training job and left it to Batch: no decision, requeue or alert
    failed, succeeded = training_jobs_of(run, CAPACITY.name)
    assert failed["TrainingJobStatus"] == "Failed" and failed["FailureReason"].startswith("CapacityError")
    assert succeeded["TrainingJobStatus"] == "Completed"
    # The event names the training job AWSBatch...; SageMaker's Describe lower-cases it on the local stack.
    seen = [
        line
        for line in run.handled
        if same_training_job(line.get("correlation_id"), failed["TrainingJobArn"])
    ]
    assert seen and all(
        line["result"].startswith(("Batch still owns it", "no Batch job linked")) for line in seen
    ), seen
    job_arn = job["jobArn"]
    assert CAPACITY.name not in run.decisions
    assert requeues_of(run, CAPACITY.name) == []
    assert [a for a in run.alerts if a["job"] == job_arn] == []
    assert [n for n in run.sns if n["message"].get("job") == job_arn] == []


def test_an_internal_error_past_batchs_retries_is_requeued_with_the_same_payload_and_finishes(
    run: FailureRun,
) -> None:
    original = run.described[INTERNAL.name]
    # GIVEN Batch retried the internal error once and then ended the job FAILED
    assert original["status"] == "FAILED"
    assert len(original["attempts"]) == original["retryStrategy"]["attempts"] == 2
    # THEN shareplane decided once to requeue it, spending one unit of the failure budget
    (decision,) = run.decisions[INTERNAL.name]
    assert (decision["class"], decision["action"], decision["applied"]) == ("internal_error", "requeue", True)
    assert decision["attempt"] == 1
    (requeue_name,) = requeues_of(run, INTERNAL.name)
    requeued = run.described[requeue_name]
    assert decision["newJobArn"] == requeued["jobArn"]
    # AND the new service job carries the same payload (checkpoint included), queue, share and priority
    payload = json.loads(original["serviceRequestPayload"])
    assert payload["CheckpointConfig"]["S3Uri"].endswith(f"checkpoints/{INTERNAL.name}/")
    assert json.loads(requeued["serviceRequestPayload"]) == payload
    for field in ("jobQueue", "shareIdentifier", "schedulingPriority", "retryStrategy", "serviceJobType"):
        assert requeued[field] == original[field], field
    assert requeued["tags"]["shareplane:origin-job"] == original["jobId"]
    assert requeued["tags"]["shareplane:failures"] == "1"
    # AND it finished, with no alert for either job
    assert requeued["status"] == "SUCCEEDED"
    assert [a for a in run.alerts if a["job"] in (original["jobArn"], requeued["jobArn"])] == []


def test_a_spot_interruption_stays_inside_sagemaker_and_never_fails_the_batch_job(run: FailureRun) -> None:
    job = run.described[SPOT.name]
    # GIVEN a dispatch whose spot capacity is reclaimed mid-training
    (tj,) = training_jobs_of(run, SPOT.name)
    assert same_training_job(tj["TrainingJobArn"], job["latestAttempt"]["serviceResourceId"]["value"])
    # THEN SageMaker interrupted and resumed the training job itself
    transitions = [t["Status"] for t in tj["SecondaryStatusTransitions"]]
    assert "Interrupted" in transitions and transitions[-1] == "Completed"
    assert transitions.index("Interrupted") < len(transitions) - 1
    # AND the Batch job ran once and succeeded: nothing for shareplane to requeue or alert on
    assert (job["status"], len(job["attempts"])) == ("SUCCEEDED", 1)
    assert SPOT.name not in run.decisions
    assert requeues_of(run, SPOT.name) == []
    assert [a for a in run.alerts if a["job"] == job["jobArn"]] == []


def test_a_cuda_oom_raises_exactly_one_alert_and_is_not_requeued(run: FailureRun) -> None:
    job = run.described[CUDA_OOM.name]
    # GIVEN a training script that ran out of GPU memory (Batch does not retry it: EXIT on other reasons)
    assert (job["status"], len(job["attempts"])) == ("FAILED", 1)
    # THEN one decision: alert, not retried
    (decision,) = run.decisions[CUDA_OOM.name]
    assert (decision["class"], decision["action"], decision["applied"]) == ("gpu_oom", "alert", True)
    assert requeues_of(run, CUDA_OOM.name) == []
    # AND exactly one alert, in `shareplane alerts` and on the topic, saying what to do
    (listed,) = [a for a in run.alerts if a["job"] == job["jobArn"]]
    assert (listed["kind"], listed["share"], listed["severity"]) == ("failure", "ProdExp1", "warning")
    assert listed["body"]["class"] == "gpu_oom" and "batch size" in listed["body"]["fix"]
    (sent,) = [n for n in run.sns if n["message"].get("job") == job["jobArn"]]
    assert (sent["kind"], sent["share"], sent["severity"]) == ("failure", "ProdExp1", "warning")
    assert (sent["team"], sent["tier"]) == ("ProdExp1", "LOWPRI")
    assert sent["subject"] == listed["subject"] and CUDA_OOM.name in sent["subject"]


def test_a_failure_storm_stops_requeueing_for_the_share_with_one_storm_alert(run: FailureRun) -> None:
    # GIVEN five ProdExp2 jobs failing within the storm window (the guard allows three)
    names = [job.name for job in STORM]
    assert all(run.described[n]["status"] == "FAILED" for n in names)
    decisions = {n: d for n in names for d in run.decisions[n]}
    assert len(decisions) == len(names)  # one decision per failed job
    # THEN the first three are requeued and finish, and requeueing stops for the share after that
    requeued = [n for n in names if requeues_of(run, n)]
    assert len(requeued) == STORM_MAX_FAILURES
    assert all(run.described[f"{n}-rq1"]["status"] == "SUCCEEDED" for n in requeued)
    assert Counter((d["action"], d["storm"]) for d in decisions.values()) == {
        ("requeue", False): STORM_MAX_FAILURES,
        ("alert", True): 1,
        ("ignore", True): 1,
    }
    assert {n for n, d in decisions.items() if d["action"] == "requeue"} == set(requeued)
    # AND exactly one storm alert went out, for the share, listing its failures
    (storm,) = alerts_of(run, "storm")
    # (the storm guard counts per share identifier: in team x tier, the team's share, where MIDPRI runs)
    assert (storm["share"], storm["team"], storm["severity"]) == ("ProdExp2", "ProdExp2", "critical")
    assert storm["body"]["failureCount"] == STORM_MAX_FAILURES + 1
    (delivered,) = [n for n in run.sns if n["kind"] == "storm"]
    assert (delivered["share"], delivered["team"], delivered["severity"]) == (
        "ProdExp2",
        "ProdExp2",
        "critical",
    )
    assert delivered["subject"] == storm["subject"]
    assert len(delivered["message"]["failures"]) == STORM_MAX_FAILURES + 1
    # AND no per-job failure alert for the share's stormed jobs
    assert alerts_of(run, "failure", "ProdExp2") == []


def test_failure_decisions_show_in_the_job_history_with_class_rule_and_action(run: FailureRun) -> None:
    for name, (cls, action) in {
        INTERNAL.name: ("internal_error", "requeue"),
        CUDA_OOM.name: ("gpu_oom", "alert"),
    }.items():
        (entry,) = [h for h in run.records[name]["history"] if h["kind"] == "FAILURE_DECISION"]
        (decision,) = run.decisions[name]
        assert (entry["class"], entry["rule"], entry["action"]) == (cls, decision["rule"], action)
        assert entry["status"] == "FAILED" and cls in entry["reason"]
