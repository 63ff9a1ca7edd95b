"""Training jobs' per-host GPU metrics from CloudWatch: batched GetMetricData, plain metric queries.

SageMaker publishes ``GPUUtilization`` and ``GPUMemoryUtilization`` per host of a training job in
``/aws/sagemaker/TrainingJobs`` with the dimension ``Host`` = ``<training job name>/algo-N``, once a
minute. One GetMetricData call takes at most 500 queries (CloudWatch API reference, GetMetricData), so
the hosts are read in batches of 250 (two metrics each). No metric math: every query is a MetricStat,
which moto answers the same way CloudWatch does.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..domain.idle.policy import GPU_MEMORY_METRIC, GPU_METRIC, METRICS_NAMESPACE, GpuSample

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_cloudwatch.type_defs import MetricDataQueryTypeDef

#: GetMetricData's limit on MetricDataQueries per call.
MAX_QUERIES_PER_CALL = 500
#: SageMaker's training-job instance metrics are one-minute datapoints.
PERIOD_SECONDS = 60
_METRICS = (GPU_METRIC, GPU_MEMORY_METRIC)


def metric_queries(dimensions: Sequence[str]) -> list[MetricDataQueryTypeDef]:
    """The MetricDataQueries reading both GPU metrics of each host dimension (ids ``g<n>``, ``m<n>``)."""
    queries: list[MetricDataQueryTypeDef] = []
    for n, dimension in enumerate(dimensions):
        for metric, prefix in zip(_METRICS, ("g", "m"), strict=True):
            queries.append(
                {
                    "Id": f"{prefix}{n}",
                    "MetricStat": {
                        "Metric": {
                            "Namespace": METRICS_NAMESPACE,
                            "MetricName": metric,
                            "Dimensions": [{"Name": "Host", "Value": dimension}],
                        },
                        "Period": PERIOD_SECONDS,
                        "Stat": "Average",
                    },
                    "ReturnData": True,
                }
            )
    return queries


class CloudWatchGpuMetrics:
    """GpuMetricsReader on an injected CloudWatch client; counts the metrics it requested (the bill)."""

    def __init__(self, client: CloudWatchClient) -> None:
        self._client = client
        #: Metrics requested so far (GetMetricData is billed per metric requested) and calls made.
        self.metrics_requested = 0
        self.calls = 0

    def gpu_samples(self, dimensions: Sequence[str], start: float, end: float) -> dict[str, list[GpuSample]]:
        """One-minute samples of each ``<job>/algo-N`` dimension from ``start`` to ``end`` (epoch s, both in).

        GetMetricData's EndTime is exclusive, so the call asks up to one second past ``end``.
        """
        found: dict[str, dict[float, list[float | None]]] = {d: {} for d in dimensions}
        per_call = MAX_QUERIES_PER_CALL // len(_METRICS)
        unique = list(dict.fromkeys(dimensions))
        for first in range(0, len(unique), per_call):
            batch = unique[first : first + per_call]
            queries = metric_queries(batch)
            self.metrics_requested += len(queries)
            token: str | None = None
            while True:
                kwargs: dict[str, Any] = {
                    "MetricDataQueries": queries,
                    "StartTime": datetime.fromtimestamp(start, UTC),
                    "EndTime": datetime.fromtimestamp(end + 1, UTC),
                    "ScanBy": "TimestampAscending",
                }
                if token:
                    kwargs["NextToken"] = token
                response = self._client.get_metric_data(**kwargs)
                self.calls += 1
                for result in response.get("MetricDataResults", []):
                    query_id = str(result.get("Id") or "")
                    dimension = batch[int(query_id[1:])]
                    slot = 0 if query_id.startswith("g") else 1
                    for stamp, value in zip(
                        result.get("Timestamps", []), result.get("Values", []), strict=False
                    ):
                        at = stamp.timestamp() if isinstance(stamp, datetime) else float(stamp)
                        found[dimension].setdefault(at, [None, None])[slot] = float(value)
                token = response.get("NextToken")
                if not token:
                    break
        samples: dict[str, list[GpuSample]] = {}
        for dimension, by_time in found.items():
            host = dimension.rsplit("/", 1)[-1]
            samples[dimension] = [
                GpuSample(host, at, gpu, memory)
                for at, (gpu, memory) in sorted(by_time.items())
                if gpu is not None
            ]
        return samples
