"""What shareplane's own AWS resources cost to run: AWS calls -> billable units -> USD.

Pure arithmetic, no AWS: ``units_of_call`` turns one recorded call (service, operation, request,
response) into the units AWS bills (DynamoDB request units from the items' sizes, S3 request tiers,
SNS publishes, KMS requests, GetMetricData metrics, ...); ``Measured`` holds what a local-stack run
counted, split into what each job costs and what the 5-minute schedules cost per hour; ``monthly``
prices a volume of jobs a day with a table of ``Prices`` (config/prices/aws-services-us-east-1.yaml).
``make bench`` (tests/bench/test_run_cost_bench.py) fills ``Measured`` from a real run.
"""

from __future__ import annotations

import base64
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "DAYS_PER_MONTH",
    "FIXED_ITEMS",
    "LOG_EVENT_OVERHEAD_BYTES",
    "Measured",
    "Prices",
    "dynamodb_item_bytes",
    "emf_series",
    "largest",
    "log_units",
    "monthly",
    "units_of_call",
]

DAYS_PER_MONTH = 30
#: CloudWatch Logs bills each event's UTF-8 message plus 26 bytes of metadata.
LOG_EVENT_OVERHEAD_BYTES = 26
#: Items billed a month whatever the volume (their quantities are counted from the template and the run).
FIXED_ITEMS = ("custom_metric_series", "dashboards", "alarm_metrics", "kms_keys", "sqs_empty_receives")

_S3_TIER1 = {
    "PutObject",
    "CopyObject",
    "ListObjectsV2",
    "ListObjects",
    "CompleteMultipartUpload",
    "CreateMultipartUpload",
    "UploadPart",
    "PostObject",
}
_S3_TIER2 = {"GetObject", "HeadObject", "GetObjectTagging", "GetBucketLocation"}


@dataclass(frozen=True)
class Prices:
    """USD per unit of each billable item, with where the figures come from."""

    usd_per_unit: Mapping[str, float]
    as_of: str
    sources: Mapping[str, str]
    checked_against_price_list_api: bool

    @classmethod
    def load(cls, path: Path) -> Prices:
        """The dated price table of ``config/prices/``."""
        raw = yaml.safe_load(path.read_text())
        items = raw["items"]
        return cls(
            {name: float(i["usd"]) / float(i["per"]) for name, i in items.items()},
            str(raw["as_of"]),
            {name: str(i["source"]) for name, i in items.items()},
            bool(raw["checked_against_price_list_api"]),
        )


def dynamodb_item_bytes(item: Mapping[str, Any]) -> int:
    """An item's size as DynamoDB counts it: each attribute's name plus its value (wire format)."""
    return sum(len(name.encode()) + _value_bytes(value) for name, value in item.items())


def _value_bytes(value: Mapping[str, Any]) -> int:
    ((kind, inner),) = value.items()
    if kind == "S":
        return len(str(inner).encode())
    if kind == "N":
        digits = len(str(inner).lstrip("-").replace(".", "").lstrip("0")) or 1
        return math.ceil(digits / 2) + 1
    if kind == "B":
        return len(inner) if isinstance(inner, bytes) else len(base64.b64decode(inner))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS", "BS"):
        return sum(_value_bytes({kind[0]: v}) for v in inner)
    if kind == "L":
        return 3 + sum(1 + _value_bytes(v) for v in inner)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + _value_bytes(v) for k, v in inner.items())
    raise ValueError(f"unknown DynamoDB attribute type {kind}")


def _read_units(size: int, consistent: bool) -> float:
    units = max(1, math.ceil(size / 4096))
    return float(units) if consistent else units / 2


def _write_units(size: int) -> float:
    return float(max(1, math.ceil(size / 1024)))


def _written_item(request: Mapping[str, Any]) -> Mapping[str, Any]:
    """What a write puts: its item, or for an update the key and the values it sets (a lower bound
    of the item's size: DynamoDB bills the larger of the item before and after)."""
    if "Item" in request:
        item: Mapping[str, Any] = request["Item"]
        return item
    values = {f"v{i}": v for i, v in enumerate(request.get("ExpressionAttributeValues", {}).values())}
    return {**request.get("Key", {}), **values}


def _dynamodb(operation: str, params: Mapping[str, Any], response: Mapping[str, Any]) -> dict[str, float]:
    units: defaultdict[str, float] = defaultdict(float)
    consistent = bool(params.get("ConsistentRead"))
    if operation == "GetItem":
        units["dynamodb_read_units"] += _read_units(dynamodb_item_bytes(response.get("Item", {})), consistent)
    elif operation in ("Query", "Scan"):
        size = sum(dynamodb_item_bytes(i) for i in response.get("Items", []))
        units["dynamodb_read_units"] += _read_units(size, consistent)
    elif operation == "BatchGetItem":
        for table, items in response.get("Responses", {}).items():
            table_consistent = bool(params.get("RequestItems", {}).get(table, {}).get("ConsistentRead"))
            for item in items:
                units["dynamodb_read_units"] += _read_units(dynamodb_item_bytes(item), table_consistent)
    elif operation == "TransactGetItems":
        for entry in response.get("Responses", []):
            units["dynamodb_read_units"] += 2 * _read_units(dynamodb_item_bytes(entry.get("Item", {})), True)
    elif operation in ("PutItem", "UpdateItem", "DeleteItem"):
        units["dynamodb_write_units"] += _write_units(dynamodb_item_bytes(_written_item(params)))
    elif operation == "BatchWriteItem":
        for requests in params.get("RequestItems", {}).values():
            for request in requests:
                put = request.get("PutRequest", {}).get("Item") or request.get("DeleteRequest", {}).get(
                    "Key", {}
                )
                units["dynamodb_write_units"] += _write_units(dynamodb_item_bytes(put))
    elif operation == "TransactWriteItems":
        for entry in params.get("TransactItems", []):
            ((kind, request),) = entry.items()
            if kind == "ConditionCheck":
                units["dynamodb_read_units"] += 2 * _read_units(0, True)
            else:
                units["dynamodb_write_units"] += 2 * _write_units(dynamodb_item_bytes(_written_item(request)))
    return units


def units_of_call(
    service: str, operation: str, params: Mapping[str, Any], response: Mapping[str, Any]
) -> dict[str, float]:
    """The billable units one AWS call adds (nothing for calls whose price is not per request)."""
    units: defaultdict[str, float] = defaultdict(float)
    if service == "dynamodb":
        units.update(_dynamodb(operation, params, response))
    elif service == "sqs":
        entries = params.get("Entries")
        units["sqs_requests"] += 1 if entries is None else max(1, math.ceil(len(entries) / 10))
    elif service == "sns" and operation == "Publish":
        units["sns_publishes"] += 1
    elif service == "s3" and operation in _S3_TIER1:
        units["s3_tier1_requests"] += 1
    elif service == "s3" and operation in _S3_TIER2:
        units["s3_tier2_requests"] += 1
    elif service == "scheduler" and operation == "CreateSchedule":
        units["scheduler_invocations"] += 1
    elif service == "cloudwatch" and operation == "GetMetricData":
        units["getmetricdata_metrics"] += len(params.get("MetricDataQueries", []))
    return units


def log_units(output: str, platform_bytes: int) -> tuple[float, int]:
    """(GB ingested, events) for one invocation's log output plus the runtime's own lines."""
    events = [line for line in output.splitlines() if line.strip()]
    size = sum(len(line.encode()) + LOG_EVENT_OVERHEAD_BYTES for line in events) + platform_bytes
    return size / 1e9, len(events)


def emf_series(output: str) -> set[tuple[str, str, tuple[tuple[str, str], ...]]]:
    """The custom metric series the EMF documents in a log output write: (namespace, metric, dimensions)."""
    found = set()
    for line in output.splitlines():
        start = line.find("{")
        if start < 0 or '"_aws"' not in line:
            continue
        try:
            document = json.loads(line[start:])
        except json.JSONDecodeError:
            continue
        for directive in document.get("_aws", {}).get("CloudWatchMetrics", []):
            for dimension_set in directive.get("Dimensions", []):
                dims = tuple(sorted((d, str(document.get(d))) for d in dimension_set))
                for metric in directive.get("Metrics", []):
                    found.add((directive.get("Namespace", ""), metric["Name"], dims))
    return found


@dataclass
class Measured:
    """What a local-stack run counted: units per job, units per hour of the schedules, and its shape."""

    #: Units of the event-driven work (submit, record, failures, reclaim checks), summed over the run.
    job_units: dict[str, float] = field(default_factory=dict)
    #: Units of the 5-minute schedules' ticks, summed over the run.
    tick_units: dict[str, float] = field(default_factory=dict)
    jobs: int = 0
    hours: float = 0.0
    #: Mean jobs running at once over the run (the ticks' reads grow with it).
    mean_running_jobs: float = 0.0
    #: Mean hours a job ran.
    mean_job_hours: float = 0.0
    #: Quantities of the fixed monthly items (custom metric series, dashboards, alarm metrics, keys, ...).
    fixed: dict[str, float] = field(default_factory=dict)

    def per_job(self) -> dict[str, float]:
        """Each unit of the event-driven work for one job."""
        return {k: v / self.jobs for k, v in self.job_units.items()}

    def per_hour(self) -> dict[str, float]:
        """Each unit of the schedules for one hour at the run's concurrency."""
        return {k: v / self.hours for k, v in self.tick_units.items()}

    def daily(self, jobs_per_day: float) -> dict[str, float]:
        """Units a day at ``jobs_per_day``: the jobs' units, and the ticks' scaled with concurrency.

        The ticks read every running job, so their units are scaled by the concurrency the volume
        implies (Little's law: jobs a day x mean run hours / 24) over the run's, never below the run's:
        an upper bound for the part of a tick that does not grow with the jobs.
        """
        concurrency = jobs_per_day * self.mean_job_hours / 24
        scale = max(1.0, concurrency / self.mean_running_jobs) if self.mean_running_jobs else 1.0
        units: defaultdict[str, float] = defaultdict(float)
        for name, value in self.per_job().items():
            units[name] += value * jobs_per_day
        for name, value in self.per_hour().items():
            units[name] += value * 24 * scale
        return dict(units)


def monthly(measured: Measured, jobs_per_day: float, prices: Prices) -> dict[str, float]:
    """USD a month (30 days) per item at ``jobs_per_day``, the fixed items included."""
    quantities: defaultdict[str, float] = defaultdict(float)
    for name, value in measured.daily(jobs_per_day).items():
        quantities[name] += value * DAYS_PER_MONTH
    for name, value in measured.fixed.items():
        quantities[name] += value
    unpriced = sorted(set(quantities) - set(prices.usd_per_unit) - {"sqs_empty_receives"})
    if unpriced:
        raise KeyError(f"no price for {unpriced} in the price table")
    cost = {}
    for name, quantity in quantities.items():
        price_key = "sqs_requests" if name == "sqs_empty_receives" else name
        cost[name] = quantity * prices.usd_per_unit[price_key]
    return cost


def largest(costs: Mapping[str, float]) -> tuple[str, float]:
    """The item that costs most, and its share of the total."""
    total = sum(costs.values())
    name = max(costs, key=lambda k: costs[k])
    return name, (costs[name] / total if total else 0.0)


def total(costs: Iterable[float]) -> float:
    """The sum of a month's items."""
    return sum(costs)
