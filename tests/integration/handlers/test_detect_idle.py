"""detect_idle handler on moto: GPU metrics put with PutMetricData, the tick sample, the table and the topic."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws
from shareplane import bootstrap
from shareplane.adapters.alert_ledger import DynamoAlertLedger
from shareplane.adapters.cloudwatch_gpu_metrics import MAX_QUERIES_PER_CALL, CloudWatchGpuMetrics
from shareplane.adapters.idle_ledger import DynamoIdleLedger
from shareplane.adapters.sns_alerts import SnsAlerts
from shareplane.domain.idle.policy import GPU_MEMORY_METRIC, GPU_METRIC, IDLE_REASON_PREFIX, METRICS_NAMESPACE
from shareplane.schemas.scheduled import parse_scheduled_event, tick_time

from tests.aws import create_jobs_table, topic_with_inbox
from tests.conftest import load_event, load_handler
from tests.fakes.idle_world import IdleWorld, idle_config
from tests.sqs import sqs_batch

TABLE = "shareplane-jobs"
TICK = load_event("scheduled_event_detect_idle")
NOW = tick_time(parse_scheduled_event(TICK))
STARTED = NOW - 3 * 3600


def put_gpu_minutes(cloudwatch: Any, job: str, host: str, first: float, last: float, value: float) -> None:
    """What SageMaker publishes for one host: a datapoint a minute of both GPU metrics."""
    data = []
    at = first
    while at <= last:
        for metric in (GPU_METRIC, GPU_MEMORY_METRIC):
            data.append(
                {
                    "MetricName": metric,
                    "Dimensions": [{"Name": "Host", "Value": f"{job}/{host}"}],
                    "Timestamp": datetime.fromtimestamp(at, UTC),
                    "Value": value if metric == GPU_METRIC else 30.0,
                    "Unit": "Percent",
                }
            )
        at += 60
    for first_item in range(0, len(data), 500):
        cloudwatch.put_metric_data(
            Namespace=METRICS_NAMESPACE, MetricData=data[first_item : first_item + 500]
        )


@pytest.fixture
def world(aws_credentials: None) -> Any:
    """Fakes for the jobs' states and Batch; moto for CloudWatch, DynamoDB, SNS and SQS."""
    with mock_aws():
        region = "us-east-1"
        dynamodb = boto3.client("dynamodb", region_name=region)
        create_jobs_table(dynamodb, TABLE)
        cloudwatch = boto3.client("cloudwatch", region_name=region)
        sns, sqs = boto3.client("sns", region_name=region), boto3.client("sqs", region_name=region)
        topic, inbox = topic_with_inbox(
            sns, sqs, "team-inbox", raw_delivery=True, filter_policy={"team": ["ProdExp2"], "kind": ["idle"]}
        )
        fakes = IdleWorld(config=idle_config(action="stop_after_warning", warning_grace_seconds=600))
        fakes.run_job("idle-1", started=STARTED)
        fakes.run_job("busy-1", started=STARTED, instances=2, checkpoint=False)
        put_gpu_minutes(cloudwatch, "idle-1", "algo-1", STARTED, NOW, 0.0)
        for host in ("algo-1", "algo-2"):
            put_gpu_minutes(cloudwatch, "busy-1", host, STARTED, NOW, 560.0)
        metrics = CloudWatchGpuMetrics(cloudwatch)
        ports = replace(
            fakes.ports,
            gpu_metrics=metrics,
            ledger=DynamoIdleLedger(dynamodb, TABLE),
            sender=replace(
                fakes.ports.sender, ledger=DynamoAlertLedger(dynamodb, TABLE), topic=SnsAlerts(sns, topic)
            ),
        )
        with bootstrap.installed(bootstrap.Root({}, idle_ports=ports)):
            yield fakes, metrics, dynamodb, sqs, inbox


def test_the_tick_flags_the_idle_job_only_warns_then_stops_it(world: Any, lambda_context: Any) -> None:
    fakes, metrics, dynamodb, sqs, inbox = world
    handler = load_handler("detect_idle")
    # WHEN the schedule's tick arrives twice next to a broken record
    response = handler.lambda_handler(sqs_batch([TICK, "{not json", TICK]), lambda_context)
    # THEN only the broken record is retried; the idle job is warned, the busy one left alone
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    ledger = DynamoIdleLedger(dynamodb, TABLE)
    (warning,) = ledger.decisions("idle-1")
    assert warning.act.value == "warn" and warning.gpus == 8 and not ledger.decisions("busy-1")
    assert warning.peak_host_percent == 0.0 and warning.peak_memory_percent == 30.0
    # each tick: one GetMetricData call for 3 hosts x 2 metrics
    assert (metrics.calls, metrics.metrics_requested) == (2, 12)
    (message,) = sqs.receive_message(QueueUrl=inbox, MaxNumberOfMessages=10)["Messages"]
    body = json.loads(message["Body"])
    assert body["act"] == "warn" and body["team"] == "ProdExp2" and body["job"].endswith("idle-1")
    # AND a tick after the warning grace stops it (the samples say it stayed idle)
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    put_gpu_minutes(cloudwatch, "idle-1", "algo-1", NOW + 60, NOW + 660, 0.0)
    later = {**TICK, "time": datetime.fromtimestamp(NOW + 660, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    for host in ("algo-1", "algo-2"):
        put_gpu_minutes(cloudwatch, "busy-1", host, NOW + 60, NOW + 660, 560.0)
    assert handler.lambda_handler(sqs_batch([later]), lambda_context) == {"batchItemFailures": []}
    ((stopped, reason),) = fakes.batch.terminated
    assert stopped == "idle-1" and reason.startswith(IDLE_REASON_PREFIX)
    assert [r.act.value for r in ledger.decisions("idle-1")] == ["warn", "stop"]
    assert [r.act.value for r in ledger.since(0)] == ["warn", "stop"]


def test_more_hosts_than_one_call_takes_are_read_in_batches(world: Any) -> None:  # noqa: ARG001
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    metrics = CloudWatchGpuMetrics(cloudwatch)
    hosts = [f"many/algo-{n}" for n in range(1, 302)]
    put_gpu_minutes(cloudwatch, "many", "algo-301", NOW - 120, NOW, 100.0)
    found = metrics.gpu_samples(hosts, NOW - 600, NOW)
    # 301 hosts x 2 metrics = 602 queries: two calls of at most 500
    assert metrics.calls == 2 and metrics.metrics_requested == 602 and 602 > MAX_QUERIES_PER_CALL
    assert [s.gpu_utilization for s in found["many/algo-301"]] == [100.0, 100.0, 100.0]
    assert found["many/algo-1"] == []
