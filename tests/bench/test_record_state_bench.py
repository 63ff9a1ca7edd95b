"""Benchmarks of the state-recording path: AWS calls per event, cold import, throughput, package size.

Run with `make bench`. Figures are ratios or counts measured in one run, printed as a table; only
the exact counts (write requests per event) are asserted, never a time.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from shareplane.adapters.dynamodb_store import DynamoJobStore
from shareplane.schemas import parse_state_event
from shareplane.service.record_state import record_observation

from tests.aws import create_jobs_table
from tests.conftest import REPO, load_scenario, scenario_names

pytestmark = pytest.mark.bench

WRITES = {"TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"}


class NullSink:
    def emit(self, *_: Any) -> None:
        return None


def _all_events() -> list[dict[str, Any]]:
    return [e for name in scenario_names() for e in load_scenario(name)]


def test_aws_calls_per_applied_event_and_per_duplicate(aws_credentials: None) -> None:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_jobs_table(client)
        store = DynamoJobStore(client, "shareplane-jobs")
        calls: Counter[str] = Counter()
        client.meta.events.register("before-call", lambda model, **_: calls.update([model.name]))
        observations = [parse_state_event(e) for e in _all_events()]
        outcomes = [record_observation(o, store, NullSink(), None).decision.value for o in observations]
        applied = sum(1 for d in outcomes if d != "DUPLICATE")
        first_calls, first_writes = sum(calls.values()), sum(calls[w] for w in WRITES)
        calls.clear()
        for obs in observations:
            record_observation(obs, store, NullSink(), None)
        dup_calls, dup_writes = sum(calls.values()), sum(calls[w] for w in WRITES)
    print("\nAWS calls per event (DynamoDB on moto)")
    print(
        f"  applied events: {applied}, calls/event {first_calls / applied:.2f}, writes/event {first_writes / applied:.2f}"
    )
    print(
        f"  duplicates:     {len(observations)}, calls/event {dup_calls / len(observations):.2f}, "
        f"writes/event {dup_writes / len(observations):.2f}"
    )
    assert first_writes == applied, "one write request per applied event"
    assert dup_writes == 0, "a duplicate caught on read costs no write"


def _timed(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=_env())
    return time.perf_counter() - start


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "POWERTOOLS_TRACE_DISABLED": "1", "AWS_DEFAULT_REGION": "us-east-1"}


def test_cold_import_of_each_handler_against_the_sdk_baseline() -> None:
    baseline = (
        "import boto3; from aws_lambda_powertools import Logger, Metrics; from pydantic import BaseModel"
    )
    rows = []
    for app in sorted((REPO / "functions").glob("*/app.py")):
        load = (
            f"import importlib.util as u; s = u.spec_from_file_location('h', {str(app)!r}); "
            "m = u.module_from_spec(s); s.loader.exec_module(m)"
        )
        ratios, handler_times, base_times = [], [], []
        for _ in range(7):  # alternate, so drift in machine speed hits both alike
            empty = _timed("pass")
            h, b = _timed(load) - empty, _timed(baseline) - empty
            handler_times.append(h)
            base_times.append(b)
            ratios.append(h / b)
        rows.append(
            (
                app.parent.name,
                statistics.median(handler_times),
                statistics.median(base_times),
                statistics.median(ratios),
            )
        )
    print("\nCold import (median of 7, interpreter start subtracted; target <= 1.25x)")
    for name, h, b, r in rows:
        print(f"  {name:<18} {h * 1000:7.0f} ms vs baseline {b * 1000:5.0f} ms = {r:.2f}x")
    assert rows


def test_events_per_second_through_the_local_path() -> None:
    from shareplane_cli.commands.local import put_events
    from shareplane_cli.local import LocalStack, StackSpec
    from shareplane_cli.local.runner import FunctionRunner

    events = _all_events() * 4
    with LocalStack(StackSpec(REPO / "template.yaml")) as stack:
        start = time.perf_counter()
        put_events(stack, events)
        FunctionRunner(stack).drain()
        elapsed = time.perf_counter() - start
    print(
        f"\nLocal path: {len(events)} events (PutEvents -> rule -> SQS -> handler -> DynamoDB) "
        f"in {elapsed:.2f} s = {len(events) / elapsed:.0f} events/s"
    )


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def test_unzipped_size_of_function_plus_core_layer() -> None:
    build = REPO / ".aws-sam" / "build"
    if build.is_dir():
        layer = next(p for p in build.iterdir() if p.name.startswith("CoreLayer"))
        function, layer_size = build / "RecordStateFunction", _size(layer)
        source = "sam build output"
    else:  # same content as sam build: our package plus the layer's requirements
        import yaml

        function = REPO / "functions" / "record_state"
        layer_size = _size(REPO / "layers" / "core" / "shareplane") + _size(Path(yaml.__file__).parent)
        source = "sources (run `make template` for the sam build figure)"
    total = _size(function) + layer_size
    print(
        f"\nUnzipped size ({source}): function {_size(function) / 1024:.0f} KiB + core layer "
        f"{layer_size / 1024:.0f} KiB = {total / 1024:.0f} KiB (Lambda limit 250 MiB)"
    )
    assert total < 250 * 1024 * 1024
