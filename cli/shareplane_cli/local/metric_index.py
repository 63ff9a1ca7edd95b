"""GetMetricData on the embedded CloudWatch, answered from an index instead of a scan of every datapoint.

moto answers each MetricStat query by scanning every datapoint in the time range once per period:
with the emulator's per-host GPU metrics (three metrics a minute for each of up to a hundred hosts)
one detect-idle tick reading an hour of two metrics for every host costs hundreds of millions of
comparisons. ``install`` gives the embedded CloudWatch of one account and region an index by
(namespace, metric name, dimensions) and answers plain MetricStat queries from it with moto's own
statistics (``moto.cloudwatch.models.Statistics``), in moto's result shape; any other query (metric
math, Metrics Insights) goes to moto's own implementation unchanged. ``tests/local/test_metric_index.py``
checks the two answer alike.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

Key = tuple[str, str, tuple[tuple[str, str], ...]]


class MetricIndex:
    """Datapoints of one CloudWatch backend by metric, each list in time order, kept up to date lazily."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.original: Callable[..., list[dict[str, Any]]] = backend.get_metric_data
        self._source: list[Any] | None = None
        self._seen = 0
        self._series: dict[Key, tuple[list[datetime], list[Any]]] = {}
        #: GetMetricData calls answered from the index (not handed to moto).
        self.answered = 0

    def _refresh(self) -> None:
        data: list[Any] = self.backend.metric_data
        if data is not self._source or len(data) < self._seen:
            self._source, self._seen, self._series = data, 0, {}
        for seq, datum in enumerate(data[self._seen :], start=self._seen):
            key = (
                datum.namespace,
                datum.name,
                tuple(sorted((str(d.name), str(d.value)) for d in datum.dimensions)),
            )
            stamps, items = self._series.setdefault(key, ([], []))
            at = bisect.bisect_right(stamps, datum.timestamp)
            stamps.insert(at, datum.timestamp)
            items.insert(at, (seq, datum))
        self._seen = len(data)

    def get_metric_data(
        self,
        queries: list[dict[str, Any]],
        start_time: datetime,
        end_time: datetime,
        scan_by: str = "TimestampAscending",
    ) -> list[dict[str, Any]]:
        """moto's GetMetricData, from the index when every query is a plain MetricStat."""
        # The index holds what PutMetricData stored; moto makes the AWS/ namespaces' own metrics (SQS,
        # DynamoDB...) when asked, so those queries go to moto.
        plain = all(
            "MetricStat" in q
            and q["MetricStat"]["Metric"].get("Dimensions")
            and not q["MetricStat"]["Metric"]["Namespace"].startswith("AWS/")
            for q in queries
        )
        if not plain:
            return self.original(queries, start_time, end_time, scan_by)
        from moto.cloudwatch.models import Statistics

        self._refresh()
        self.answered += 1
        # moto's own checks (and its errors) on the time range.
        start_time = start_time.replace(microsecond=0)
        end_time = end_time.replace(microsecond=0)
        if start_time >= end_time:
            return self.original(queries, start_time, end_time, scan_by)
        results = []
        for query in queries:
            stat_spec = query["MetricStat"]
            metric = stat_spec["Metric"]
            key = (
                metric["Namespace"],
                metric["MetricName"],
                tuple(sorted((d["Name"], d["Value"]) for d in metric.get("Dimensions", []))),
            )
            stamps, items = self._series.get(key, ([], []))
            delta = timedelta(seconds=int(stat_spec["Period"]))
            unit = stat_spec.get("Unit")
            stat = stat_spec["Stat"]
            values: list[Any] = []
            timestamps: list[datetime] = []
            lo = bisect.bisect_left(stamps, start_time)
            hi = bisect.bisect_left(stamps, end_time)
            period_start = start_time
            i = lo
            while i < hi:
                # Periods start at start_time and step by delta, as moto's do.
                steps = (stamps[i] - period_start) // delta
                period_start += delta * steps
                period_end = period_start + delta
                j = bisect.bisect_left(stamps, period_end, i, hi)
                # In the order they were put, as moto sums them (a float sum depends on its order).
                chosen = [
                    d for _, d in sorted(items[i:j], key=lambda item: item[0]) if not unit or d.unit == unit
                ]
                if chosen:
                    stats = Statistics([stat], period_start)
                    stats.metric_data = chosen
                    values.append(stats.get_statistics_for_type(stat))
                    timestamps.append(stats.timestamp)
                i = j
                period_start = period_end
            if scan_by == "TimestampDescending":
                timestamps.reverse()
                values.reverse()
            if query.get("ReturnData", True):
                results.append(
                    {
                        "id": query["Id"],
                        "label": query.get("Label") or f"{metric['MetricName']} {stat}",
                        "values": values,
                        "timestamps": timestamps,
                        "status_code": "Complete",
                    }
                )
        return results


def install(account: str, region: str) -> MetricIndex:
    """Answer GetMetricData of the in-process embedded CloudWatch of ``account``/``region`` from an index."""
    from moto.cloudwatch.models import cloudwatch_backends

    backend = cloudwatch_backends[account][region]
    index = MetricIndex(backend)
    # moto's backend is patched in place: answering its own GetMetricData is what this module is for.
    backend.get_metric_data = index.get_metric_data  # type: ignore[method-assign]
    return index
