"""Benchmarks of the state-recording path: AWS calls per event, cold import, throughput, package size.

Run with `make bench`. Figures are ratios or counts measured in one run, printed as a table. Asserted:
the exact counts (write requests per event) and docs/benchmarks.md's cold-import target, a ratio of two
times measured side by side; never an absolute time.
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
from tests.template import raw_template

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


def _timed(code: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    return time.perf_counter() - start


def _function_environment() -> dict[str, str]:
    """The environment variables template.yaml gives every function that are plain strings.

    Both sides of the ratio run with them, as a deployed function does: some change what an import
    costs (PYDANTIC_DISABLE_PLUGINS). Values that are references (!Ref, !GetAtt) name resources and
    change nothing at import.
    """
    variables = raw_template()["Globals"]["Function"]["Environment"]["Variables"]
    return {name: value for name, value in variables.items() if isinstance(value, str)}


def _env(site: Path | None = None) -> dict[str, str]:
    """A handler's import environment: the built CoreLayer first on the path, as /opt/python is on Lambda.

    Nothing compiled at import is kept (PYTHONDONTWRITEBYTECODE): /opt is read-only on Lambda, so
    a module the layer ships without its .pyc is compiled again on every cold start.
    """
    import os

    env = {
        **os.environ,
        **_function_environment(),
        "POWERTOOLS_TRACE_DISABLED": "1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return env


def _built_layer() -> Path | None:
    """The CoreLayer's python/ directory from `sam build` (`make template`), if there is one."""
    build = REPO / ".aws-sam" / "build"
    sites = sorted(p / "python" for p in build.glob("CoreLayer*") if (p / "python").is_dir())
    return sites[0] if sites else None


#: docs/benchmarks.md's target for a handler's cold import against BASELINE.
COLD_IMPORT_TARGET = 1.25
BASELINE = "import boto3; from aws_lambda_powertools import Logger, Metrics; from pydantic import BaseModel"


def _median_ratio(code: str, env: dict[str, str], base_env: dict[str, str]) -> tuple[float, float, float]:
    ratios, times, base_times = [], [], []
    for _ in range(7):  # alternate, so drift in machine speed hits both alike
        empty = _timed("pass", env)
        h, b = _timed(code, env) - empty, _timed(BASELINE, base_env) - empty
        times.append(h)
        base_times.append(b)
        ratios.append(h / b)
    return statistics.median(times), statistics.median(base_times), statistics.median(ratios)


def _load(app: Path) -> str:
    return (
        f"import importlib.util as u; s = u.spec_from_file_location('h', {str(app)!r}); "
        "m = u.module_from_spec(s); s.loader.exec_module(m)"
    )


def test_cold_import_of_each_handler_against_the_sdk_baseline(tmp_path: Path) -> None:
    """Each handler's import against the baseline, both importing boto3 from the same place.

    With a `sam build` output, both run on the built CoreLayer (its boto3, its bytecode), and the
    same layer stripped of its .pyc files is measured beside it; without one, on the sources.
    """
    site = _built_layer()
    envs = {"as built" if site else "sources": _env(site)}
    if site is not None:
        import shutil

        bare = tmp_path / "python"
        shutil.copytree(site, bare, ignore=shutil.ignore_patterns("__pycache__"))
        envs["without .pyc"] = _env(bare)
    rows = []
    for app in sorted((REPO / "functions").glob("*/app.py")):
        for label, env in envs.items():
            rows.append((app.parent.name, label, *_median_ratio(_load(app), env, env)))
    python = ".".join(map(str, sys.version_info[:2]))
    print(f"\nCold import on python{python} (median of 7, interpreter start subtracted; target <= 1.25x)")
    for name, label, h, b, r in rows:
        print(f"  {name:<18} {label:<13} {h * 1000:7.0f} ms vs baseline {b * 1000:5.0f} ms = {r:.2f}x")
    over = [f"{name} ({label}) {r:.2f}x" for name, label, _, _, r in rows if r > COLD_IMPORT_TARGET]
    assert rows and not over, f"cold import above docs/benchmarks.md's {COLD_IMPORT_TARGET}x target: {over}"


def _size(path: Path, *, bytecode: bool = False) -> int:
    return sum(
        p.stat().st_size
        for p in path.rglob("*")
        if p.is_file() and (bytecode or "__pycache__" not in p.parts)
    )


def test_unzipped_size_of_function_plus_core_layer() -> None:
    build = REPO / ".aws-sam" / "build"
    if build.is_dir():
        layer = next(p for p in build.iterdir() if p.name.startswith("CoreLayer"))
        # The built layer ships its bytecode: count it.
        function, layer_size = build / "RecordStateFunction", _size(layer, bytecode=True)
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
