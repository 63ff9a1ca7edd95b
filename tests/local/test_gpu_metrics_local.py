"""The local stack's CloudWatch holds the emulated trainers' per-host GPU metrics, and answers GetMetricData fast."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from gpusim.gpu_metrics import GPU_UTILIZATION, IDLE_AFTER_TAG, NAMESPACE
from moto import mock_aws
from shareplane_cli.local import LocalStack, StackSpec
from shareplane_cli.local.metric_index import MetricIndex
from shareplane_cli.local.stack import patched_environ

from tests.local.test_emulator import stack_template, submit_request

pytestmark = [pytest.mark.local, pytest.mark.xdist_group("stack-2")]

HOSTS = [f"AWSBatchjob-{n}/algo-{h}" for n in range(3) for h in (1, 2)]


def query(n: int, host: str, metric: str, period: int, stat: str) -> dict[str, Any]:
    return {
        "Id": f"q{n}",
        "MetricStat": {
            "Metric": {
                "Namespace": NAMESPACE,
                "MetricName": metric,
                "Dimensions": [{"Name": "Host", "Value": host}],
            },
            "Period": period,
            "Stat": stat,
        },
    }


@pytest.mark.parametrize(
    ("period", "stat", "scan_by"),
    [
        (60, "Average", "TimestampAscending"),
        (300, "Maximum", "TimestampDescending"),
        (120, "SampleCount", "TimestampAscending"),
    ],
    ids=["one-minute averages", "five-minute maxima, newest first", "two-minute counts"],
)
def test_the_index_answers_metric_stat_queries_exactly_as_moto_does(
    period: int, stat: str, scan_by: str, aws_credentials: None
) -> None:
    from moto.cloudwatch.models import cloudwatch_backends

    rng = random.Random(period)
    base = datetime(2026, 3, 16, tzinfo=UTC)
    with mock_aws():
        cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        # Out of order, with duplicates, several hosts and metrics: what a real stream looks like.
        data = [
            {
                "MetricName": rng.choice([GPU_UTILIZATION, "GPUMemoryUtilization"]),
                "Dimensions": [{"Name": "Host", "Value": rng.choice(HOSTS)}],
                "Timestamp": base + timedelta(seconds=rng.randrange(0, 4 * 3600)),
                "Value": rng.uniform(0, 800),
                "Unit": "Percent",
            }
            for _ in range(1500)
        ]
        for first in range(0, len(data), 500):
            cloudwatch.put_metric_data(Namespace=NAMESPACE, MetricData=data[first : first + 500])
        backend = cloudwatch_backends["123456789012"]["us-east-1"]
        index = MetricIndex(backend)
        queries = [query(n, host, GPU_UTILIZATION, period, stat) for n, host in enumerate(HOSTS)]
        queries.append(query(99, "nobody/algo-1", GPU_UTILIZATION, period, stat))
        naive = base.replace(tzinfo=None)  # how moto keeps and compares times
        start, end = naive + timedelta(minutes=17, seconds=30), naive + timedelta(hours=3, minutes=1)
        expected = backend.get_metric_data(queries, start, end, scan_by)
        assert index.get_metric_data(queries, start, end, scan_by) == expected
        assert index.answered == 1
        assert sum(len(r["values"]) for r in expected) > 50
        # Data put after the index was built is seen too.
        cloudwatch.put_metric_data(Namespace=NAMESPACE, MetricData=data[:10])
        assert index.get_metric_data(queries, start, end, scan_by) == backend.get_metric_data(
            queries, start, end, scan_by
        )


def test_a_running_job_on_the_local_stack_publishes_per_host_gpu_utilization_into_its_cloudwatch(
    tmp_path: Path,
) -> None:
    with LocalStack(StackSpec(stack_template(tmp_path)), speed=2000) as stack:
        env = stack.environment()
        with patched_environ(env):
            batch = boto3.client("batch")
        request = submit_request(stack, batch, "idle-train")
        request["tags"] = {"gpusim:duration-seconds": "1800", IDLE_AFTER_TAG: "600"}
        job = batch.submit_service_job(**request)
        deadline = time.monotonic() + 60
        while batch.describe_service_job(jobId=job["jobId"])["status"] != "SUCCEEDED":
            assert time.monotonic() < deadline, "the virtual clock did not run the job to the end"
            time.sleep(0.05)
        described = batch.describe_service_job(jobId=job["jobId"])
        training = described["latestAttempt"]["serviceResourceId"]["value"].rsplit("/", 1)[-1]
        tj = stack.emulator.model.training_jobs
        (name,) = [n for n in tj if n.lower() == training.lower()]
        cloudwatch = stack.client("cloudwatch")
        assert stack.metric_index is not None
        answered = stack.metric_index.answered
        start = datetime.fromtimestamp(described["startedAt"] / 1000, UTC)
        answer = cloudwatch.get_metric_data(
            MetricDataQueries=[query(0, f"{name}/algo-1", GPU_UTILIZATION, 60, "Average")],
            StartTime=start,
            EndTime=start + timedelta(hours=1),
            ScanBy="TimestampAscending",
        )["MetricDataResults"][0]
        # the index answered it, though moto also makes the SQS queues' own AWS/ metrics by then
        assert stack.metric_index.answered == answered + 1
    # One sample a minute for the 30 minutes it trained: busy (or loading) first, then under 2% per GPU.
    values = answer["Values"]
    assert 28 <= len(values) <= 31
    stamps = answer["Timestamps"]
    training_start = stamps[0] - timedelta(seconds=60)
    idle = [v / 8 for t, v in zip(stamps, values, strict=True) if (t - training_start).total_seconds() >= 660]
    busy = [v / 8 for t, v in zip(stamps, values, strict=True) if (t - training_start).total_seconds() < 540]
    assert idle and max(idle) < 2
    assert max(busy) >= 70
