"""The forecast's 30-day read on a Philly-scale jobs table: every finished job's record against the
arrival counts and the newest finished jobs.

The watch (each tick) and the submit receipt (each drop) forecast from the last 30 days' arrivals. On
the Philly trace's day 50, 46,205 jobs were submitted in those 30 days. Both reads below are parsed
as boto3 parses DynamoDB's answers: the wire JSON in 1 MB pages through botocore's own parser, then
this code's unmarshal and item readers; each job's record is the one the recorder folds from Batch's
sample events (``events/``). DynamoDB's time per page is not measured (no account here): it comes on
top, one round trip per page.

Claims (set before the run): the new read parses at most a tenth of the old one's bytes and takes at
most a tenth of its CPU, measured side by side in one run. Read capacity follows the bytes the index
reads, so it falls in proportion. The jobs here are all SUCCEEDED; the twin reads the newest 500 of
each finished status, so with FAILED jobs in the window too it reads up to 500 records more.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import boto3
import botocore.parsers
import pytest
from gpusim.trace import NAMED_TRACES, load_trace
from gpusim.whatif.config import load_whatif_config
from gpusim.whatif.scenario import build_scenario
from shareplane.adapters.arrival_items import counts_from_item, hour_sk
from shareplane.adapters.dynamodb_items import marshal, unmarshal
from shareplane.adapters.dynamodb_store import job_state_from_item, job_state_item
from shareplane.domain.forecast.arrivals import ArrivalKey, hour_of
from shareplane.domain.jobs.lifecycle import JobState, ObservationKind, decide
from shareplane.schemas.service_job import ServiceJobDetail, service_job_observation

pytestmark = pytest.mark.bench

REPO = Path(__file__).resolve().parents[2]
DAY = 86400.0
NOW = 50 * DAY
WINDOW = 30 * DAY
#: The newest finished jobs read whole, per finished status (``FORECAST_HISTORY_JOBS``).
NEWEST = 500
PAGE_BYTES = 1_000_000
ARN = "arn:aws:batch:us-east-1:123456789012:service-job/"


def finished_record(n: int, created_ms: int) -> dict[str, Any]:
    """A SUCCEEDED job's STATE item as the recorder writes it: Batch's sample events folded in order."""
    detail = json.loads((REPO / "events" / "batch_service_job_state_change_succeeded.json").read_text())[
        "detail"
    ]
    detail = {**detail, "jobArn": f"{ARN}{n:08d}", "jobId": f"{n:08d}", "createdAt": created_ms}
    state: JobState | None = None
    for status in ("SUBMITTED", "RUNNABLE", "SCHEDULED", "STARTING", "RUNNING", "SUCCEEDED"):
        event = {**detail, "status": status}
        if status in ("SUBMITTED", "RUNNABLE"):
            event = {k: v for k, v in event.items() if k not in ("attempts", "latestAttempt")}
        observation = service_job_observation(
            ServiceJobDetail.model_validate(event), ObservationKind.STATE_CHANGE
        )
        state = decide(state, observation).state
    assert state is not None
    return job_state_item(state)


def pages(items: Sequence[dict[str, Any]]) -> list[bytes]:
    """``items`` (plain values) as DynamoDB's Query answers them: wire JSON, at most 1 MB a page."""
    bodies, page, size = [], [], 0
    for item in items:
        wire = marshal(item)
        length = len(json.dumps(wire))
        if page and size + length > PAGE_BYTES:
            bodies.append(page)
            page, size = [], 0
        page.append(wire)
        size += length
    bodies.append(page)
    return [json.dumps({"Items": p, "Count": len(p), "ScannedCount": len(p)}).encode() for p in bodies]


def parsed(bodies: Sequence[bytes], read: Callable[[dict[str, Any]], Any]) -> tuple[float, int]:
    """CPU seconds to parse ``bodies`` as boto3 does and read each item with ``read``; items read."""
    shape = boto3.client("dynamodb", region_name="us-east-1").meta.service_model.operation_model("Query")
    parser = botocore.parsers.create_parser("json")
    started, count = time.process_time(), 0
    for body in bodies:
        answer = parser.parse({"status_code": 200, "headers": {}, "body": body}, shape.output_shape)
        for item in answer["Items"]:
            read(unmarshal(item))
            count += 1
    return time.process_time() - started, count


def test_the_arrival_counts_read_a_tenth_of_the_records_bytes_and_cpu() -> None:
    scenario = build_scenario(
        load_trace(NAMED_TRACES["philly"]), load_whatif_config(REPO / "config" / "whatif.yaml"), None, 0
    )
    window = [j for j in scenario.jobs if NOW - WINDOW <= j.submit < NOW]
    base = finished_record(0, 0)
    # Before: every job of the window as its finished record (its ARN, creation time and keys its own).
    records = []
    for n, job in enumerate(window):
        created = int(job.submit * 1000)
        arn = f"{ARN}{n:08d}"
        records.append(
            {
                **base,
                "pk": f"JOB#{arn}",
                "job_arn": arn,
                "created_at": created,
                "gsi1sk": f"{created:013d}#{arn}",
            }
        )
    # Now: the newest finished records of each finished status (all SUCCEEDED here: one status read
    # whole, the other empty) and one count item an hour, by share, instances and priority.
    counts: Counter[ArrivalKey] = Counter(
        ArrivalKey("gpu", hour_of(int(j.submit * 1000)), j.share, j.units, j.priority) for j in window
    )
    hours: dict[int, dict[str, Any]] = {}
    for key, n in counts.items():
        item = hours.setdefault(
            key.hour_ms, {"pk": "ARRIVALS#gpu", "sk": hour_sk(key.hour_ms), "entity": "arrivals"}
        )
        item[f"{key.share}|{key.instances}|{key.priority}"] = n
    before = pages(records)
    now_records, now_counts = pages(records[-NEWEST:]), pages(list(hours.values()))
    old_cpu, old_items = parsed(before, job_state_from_item)
    newest_cpu, _ = parsed(now_records, job_state_from_item)
    counted: list[tuple[ArrivalKey, int]] = []
    counts_cpu, hour_items = parsed(now_counts, lambda item: counted.extend(counts_from_item("gpu", item)))
    old_bytes = sum(map(len, before))
    new_bytes = sum(map(len, now_records)) + sum(map(len, now_counts))
    new_cpu = newest_cpu + counts_cpu
    print(
        f"\nthe forecast's 30-day read at Philly's day 50 ({len(window)} jobs submitted in the window):\n"
        f"  every finished record: {old_items} items, {len(before)} pages, {old_bytes / 2**20:.1f} MiB, "
        f"{old_cpu:.2f} s CPU\n"
        f"  newest {NEWEST} records + counts: {NEWEST} + {hour_items} items, "
        f"{len(now_records) + len(now_counts)} pages, {new_bytes / 2**20:.2f} MiB, {new_cpu:.2f} s CPU "
        f"({newest_cpu:.2f} + {counts_cpu:.2f})\n"
        f"  ratio: bytes {new_bytes / old_bytes:.3f}, CPU {new_cpu / old_cpu:.3f}"
    )
    # The counts hold every arrival of the window.
    assert sum(n for _, n in counted) == len(window) == old_items
    assert new_bytes <= old_bytes / 10
    assert new_cpu <= old_cpu / 10
