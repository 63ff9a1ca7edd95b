"""GpuMetricsReader: the fake and CloudWatchGpuMetrics on moto read a training job's hosts alike.

SageMaker publishes one GPUUtilization datapoint a minute per ``<job>/algo-N`` host; moto stores what
PutMetricData sends and answers GetMetricData's metric queries, so the cases put the same minutes on
both and compare the samples read back: the window with both ends in, time order, every host asked
for a key of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws
from shareplane.adapters.cloudwatch_gpu_metrics import CloudWatchGpuMetrics
from shareplane.domain.idle.policy import GPU_METRIC, METRICS_NAMESPACE

from tests.fakes.idle_world import FakeGpuMetrics

REGION = "us-east-1"
#: A whole minute, as SageMaker's datapoints are.
T0 = 1_773_720_000.0


@dataclass
class MetricsUnderTest:
    metrics: Any
    put: Callable[[str, str, float, float], None]


@pytest.fixture(params=["fake", "on moto"])
def under_test(request: pytest.FixtureRequest, aws_credentials: None) -> Iterator[MetricsUnderTest]:
    if request.param == "fake":
        fake = FakeGpuMetrics()
        yield MetricsUnderTest(fake, fake.put)
        return
    with mock_aws():
        client = boto3.client("cloudwatch", region_name=REGION)

        def put(training_job: str, host: str, at: float, gpu_utilization: float) -> None:
            client.put_metric_data(
                Namespace=METRICS_NAMESPACE,
                MetricData=[
                    {
                        "MetricName": GPU_METRIC,
                        "Dimensions": [{"Name": "Host", "Value": f"{training_job}/{host}"}],
                        "Timestamp": datetime.fromtimestamp(at, UTC),
                        "Value": gpu_utilization,
                        "Unit": "Percent",
                    }
                ],
            )

        yield MetricsUnderTest(CloudWatchGpuMetrics(client), put)


def test_the_window_keeps_both_ends_and_reads_in_time_order(under_test: MetricsUnderTest) -> None:
    # GIVEN minutes put out of order, two of them outside the window
    for minute, value in [(3, 30.0), (0, 0.0), (5, 50.0), (1, 10.0), (4, 40.0), (2, 20.0)]:
        under_test.put("bert", "algo-1", T0 + 60 * minute, value)
    # WHEN minutes 1 to 4 are read
    found = under_test.metrics.gpu_samples(["bert/algo-1"], T0 + 60, T0 + 240)
    # THEN both ends are in, in time order, named by host
    assert [(s.host, s.at, s.gpu_utilization) for s in found["bert/algo-1"]] == [
        ("algo-1", T0 + 60 * m, 10.0 * m) for m in (1, 2, 3, 4)
    ]


def test_every_host_asked_for_is_a_key_and_hosts_stay_apart(under_test: MetricsUnderTest) -> None:
    under_test.put("bert", "algo-1", T0, 90.0)
    under_test.put("bert", "algo-2", T0, 0.0)
    found = under_test.metrics.gpu_samples(["bert/algo-1", "bert/algo-2", "bert/algo-3"], T0, T0 + 60)
    assert sorted(found) == ["bert/algo-1", "bert/algo-2", "bert/algo-3"]
    assert [s.gpu_utilization for s in found["bert/algo-1"]] == [90.0]
    assert [s.gpu_utilization for s in found["bert/algo-2"]] == [0.0]
    assert found["bert/algo-3"] == []
    # only GPUUtilization was published: no memory figure
    assert all(s.gpu_memory_utilization is None for s in found["bert/algo-1"])
