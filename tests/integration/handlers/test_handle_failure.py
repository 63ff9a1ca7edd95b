"""handle_failure and watch_jobs handlers: events/ samples, a Lambda context, moto for table and topic."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws
from shareplane import bootstrap
from shareplane.adapters.alert_ledger import DynamoAlertLedger
from shareplane.adapters.failure_ledger import DynamoFailureLedger
from shareplane.adapters.sns_alerts import SnsAlerts
from shareplane.service.start_predictions import ForecastLimits, ForecastPorts

from tests.aws import create_jobs_table, store_shares_config, topic_with_inbox
from tests.conftest import load_event, load_handler
from tests.fakes.failure_world import World
from tests.fakes.shares_batch import FakeSharesBatch
from tests.sqs import sqs_batch

TABLE = "shareplane-jobs"


def forecast_for(ports: Any, recent: Any) -> ForecastPorts:
    """The watch's prediction step on the same job store, over a fake FIFO queue of four instances."""
    return ForecastPorts(
        store=ports.store,
        recent=recent,
        batch=FakeSharesBatch(capacity=4),
        config=ports.config,
        queue=ports.config.gpu_queue_name(),
        limits=ForecastLimits(samples=20),
    )


@pytest.fixture
def world(aws_credentials: None) -> Any:
    """Fakes for Batch and SageMaker (moto has no service jobs), moto for DynamoDB, SNS and SQS."""
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_jobs_table(dynamodb, TABLE)
        sns, sqs = boto3.client("sns", region_name="us-east-1"), boto3.client("sqs", region_name="us-east-1")
        topic, audit = topic_with_inbox(sns, sqs, "audit", raw_delivery=True)
        fakes = World()
        sender = replace(
            fakes.ports.sender, ledger=DynamoAlertLedger(dynamodb, TABLE), topic=SnsAlerts(sns, topic)
        )
        ports = replace(fakes.ports, ledger=DynamoFailureLedger(dynamodb, TABLE), sender=sender)
        # Nothing from the environment: both handlers reach only these ports.
        root = bootstrap.Root({}, failure_ports=ports, forecast_ports=forecast_for(ports, fakes.store))
        with bootstrap.installed(root):
            yield fakes, ports, sqs, audit


def described_from(event: dict[str, Any]) -> dict[str, Any]:
    payload = {
        "ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 1},
        "CheckpointConfig": {"S3Uri": "s3://b/ckpt/"},
    }
    return {**event["detail"], "serviceRequestPayload": json.dumps(payload), "tags": {}}


def test_the_failed_sample_is_decided_once_and_a_bad_record_fails_alone(
    world: Any, lambda_context: Any
) -> None:
    fakes, ports, sqs, audit = world
    event = load_event("batch_service_job_state_change_failed_internal_error")
    fakes.batch.add(described_from(event))
    handler = load_handler("handle_failure")
    # WHEN the FAILED sample arrives twice in one batch next to a broken record
    response = handler.lambda_handler(sqs_batch([event, "{not json", event]), lambda_context)
    # THEN only the broken record is retried, and one decision is stored, waiting for its delay
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    ((due, delay),) = fakes.timer.pending
    stored = ports.ledger.load_decision(due["decisionKey"])
    assert (
        stored.decision.failure_class.value == "internal_error"
        and stored.decision.action.value == "requeue"
        and delay > 0
    )
    # AND when the requeue is due, one SubmitServiceJob goes out
    fakes.clock.now += delay
    assert handler.lambda_handler(sqs_batch([due, due]), lambda_context) == {"batchItemFailures": []}
    assert len(fakes.batch.submits) == 1


def test_the_cuda_oom_sample_alerts_once_through_sns(world: Any, lambda_context: Any) -> None:
    fakes, ports, sqs, audit = world
    event = load_event("sagemaker_training_job_state_change_failed_cuda_oom")
    detail = event["detail"]
    job = load_event("batch_service_job_state_change_failed_internal_error")
    job["detail"] |= {
        "statusReason": "Received status from SageMaker: " + detail["FailureReason"],
        "latestAttempt": {"serviceResourceId": {"name": "TrainingJobArn", "value": detail["TrainingJobArn"]}},
    }
    fakes.batch.add(described_from(job))
    fakes.store.links[detail["TrainingJobArn"]] = job["detail"]["jobArn"]
    fakes.training.jobs[detail["TrainingJobName"]] = detail
    handler = load_handler("handle_failure")
    assert handler.lambda_handler(sqs_batch([event, event, job]), lambda_context) == {"batchItemFailures": []}
    messages = sqs.receive_message(QueueUrl=audit, MaxNumberOfMessages=10)["Messages"]
    (message,) = messages
    body = json.loads(message["Body"])
    assert body["class"] == "gpu_oom" and fakes.batch.submits == []
    (listed,) = ports.sender.ledger.alerts(since=0)
    assert listed.kind == "failure"


def test_the_watch_handler_takes_ticks_and_refuses_anything_else(world: Any, lambda_context: Any) -> None:
    handler = load_handler("watch_jobs")
    response = handler.lambda_handler(sqs_batch([{"shareplane": "watch"}, {"what": "else"}]), lambda_context)
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}


def test_the_watch_handler_runs_the_schedule_rules_tick_at_the_ticks_time(
    world: Any, lambda_context: Any
) -> None:
    fakes, ports, sqs, audit = world
    from shareplane.adapters.dynamodb_store import DynamoJobStore
    from shareplane.schemas import parse_state_event
    from shareplane.service.record_state import record_observation

    # GIVEN a LOWPRI job RUNNABLE since 22:26:40 (its SLO is 4 h), recorded in the table and in Batch,
    # and the function's clock a minute past the tick it receives
    store = DynamoJobStore(boto3.client("dynamodb", region_name="us-east-1"), TABLE)
    runnable = load_event("batch_service_job_state_change_capacity_requeue")
    detail = runnable["detail"]
    record_observation(parse_state_event(runnable), store, fakes.metrics, ports.config)
    fakes.batch.add(dict(detail))
    fakes.batch.listed[(detail["jobQueue"], "RUNNABLE")] = [
        {"jobArn": detail["jobArn"], "jobId": detail["jobId"]}
    ]
    tick_at = datetime.fromisoformat(load_event("scheduled_event_watch_jobs")["time"].replace("Z", "+00:00"))
    fakes.clock.now = tick_at.timestamp() + 60
    ticked = replace(ports, store=store, clock=fakes.clock)
    handler = load_handler("watch_jobs")
    root = bootstrap.Root({}, failure_ports=ticked, forecast_ports=forecast_for(ticked, fakes.store))
    with bootstrap.installed(root):
        # WHEN the schedule rule's tick for 06:10:00 arrives (and is delivered twice)
        tick = load_event("scheduled_event_watch_jobs")
        response = handler.lambda_handler(sqs_batch([tick, tick, {**tick, "time": "soon"}]), lambda_context)
    # THEN the job has waited 7 h 43 min by the tick, so it rises one step (10 -> 15), recorded once;
    # only the tick without a readable time fails
    assert response == {"batchItemFailures": [{"itemIdentifier": "m2"}]}
    assert fakes.batch.priorities == [(detail["jobId"], 15), (detail["jobId"], 15)]
    (entry,) = [h for h in store.job_history(detail["jobArn"]) if h.kind.value == "PRIORITY_ESCALATED"]
    assert "waited 27800s" in entry.reason


def test_bootstrap_builds_the_failure_ports_from_the_environment(aws_credentials: None) -> None:
    from tests.fakes.failure_world import shares_config

    with mock_aws():
        environment = {
            "TABLE_NAME": TABLE,
            **store_shares_config(
                boto3.client("ssm", region_name="us-east-1"), shares_config().model_dump_json()
            ),
            "ALERTS_TOPIC_ARN": "arn:aws:sns:us-east-1:123456789012:alerts",
            "FAILURE_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/hf",
            "GPU_JOB_QUEUE": "arn:aws:batch:us-east-1:123456789012:job-queue/search-p4d-queue",
        }
        ports = bootstrap.Root(environment).failure_ports
    assert ports.gpu_queue == "search-p4d-queue" and ports.region == "us-east-1"
    assert ports.config.teams
