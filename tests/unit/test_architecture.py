"""Dependency rules: the domain and service layers never import boto3, botocore or Powertools."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.template import raw_template

CORE = REPO / "layers" / "core" / "shareplane"
FORBIDDEN = ("boto3", "botocore", "aws_lambda_powertools")
PURE_FILES = sorted([*(CORE / "domain").rglob("*.py"), *(CORE / "service").rglob("*.py")])


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", PURE_FILES, ids=lambda p: f"{p.parent.name}/{p.name} stays pure")
def test_pure_layers_import_no_aws_sdk(path: Path) -> None:
    bad = {m for m in imported_modules(path) if m.split(".")[0] in FORBIDDEN}
    assert not bad, f"{path.relative_to(REPO)} imports {sorted(bad)}"


@pytest.mark.parametrize(
    "path", PURE_FILES, ids=lambda p: f"{p.parent.name}/{p.name} reads no environment or clock"
)
def test_pure_layers_read_no_environment_or_clock(path: Path) -> None:
    source = path.read_text()
    for needle in ("os.environ", "time.time(", "datetime.now(", "datetime.utcnow("):
        assert needle not in source, f"{path.relative_to(REPO)} uses {needle}"


def test_the_lambda_code_never_imports_the_simulator_the_cli_the_sagemaker_sdk_or_plotly() -> None:
    lambda_files = [*CORE.rglob("*.py"), *(REPO / "functions").rglob("*.py")]
    for path in lambda_files:
        bad = {
            m
            for m in imported_modules(path)
            if m.split(".")[0] in ("gpusim", "shareplane_cli", "sagemaker", "plotly")
        }
        assert not bad, f"{path.relative_to(REPO)} imports {sorted(bad)}"


def test_the_rule_is_checked_on_real_files() -> None:
    assert len(PURE_FILES) >= 5


#: Modules only some handlers' paths use, and the handlers whose cold start may load them: the job-spec
#: parser (and PyYAML under it) is submit_job's alone, the rebalance planner rebalance_shares's, the
#: reclaim planner reclaim_capacity's (the failure path only reads its stop reason), the event models
#: record_state's and handle_failure's (it parses its FAILED events with them), and the union adapter over
#: them record_state's alone (the reconciler reads only a job's detail).
#: Powertools' parser models are no handler's: its batch utility builds them when pydantic was imported
#: before it (see shareplane/sqs_batch.py).
PATH_ONLY_MODULES = {
    "aws_lambda_powertools.utilities.parser": set(),
    "shareplane.schemas.parse": {"record_state"},
    "shareplane.schemas.batch": {"record_state", "handle_failure"},
    "shareplane.schemas.sagemaker": {"record_state", "handle_failure"},
    "shareplane.domain.submit.jobspec": {"submit_job"},
    "yaml": {"submit_job"},
    "shareplane.domain.shares.rebalance": {"rebalance_shares"},
    "shareplane.domain.shares.fairshare": {"rebalance_shares"},
    "shareplane.domain.reclaim.plan": {"reclaim_capacity"},
    # The idle detector's decision and its CloudWatch reader are detect_idle's alone.
    "shareplane.domain.idle.policy": {"detect_idle"},
    "shareplane.adapters.cloudwatch_gpu_metrics": {"detect_idle"},
    # The start forecast runs in the CLI, in watch_jobs' prediction step, which imports it only when a
    # job waits, and in submit_job's receipt, only for a drop that submitted a GPU job: no handler's cold
    # start pays for it (see the tick and drop tests below).
    "shareplane.domain.forecast.start_forecast": set(),
    "shareplane.domain.explain.wait": set(),
    "shareplane.service.live_twin": set(),
    "shareplane.service.start_predictions": set(),
    "shareplane.service.receipt_prediction": set(),
    # The job store every handler loads reads and writes these only on their own paths, so it imports
    # them there: a stored prediction (watch_jobs' prediction step, the receipt, the CLI), a recorded
    # cost (record_state's SageMaker events, the usage report; submit_job's and watch_jobs' budget checks
    # import it themselves), a submitted payload read back (handle_failure's requeue, the CLI).
    "shareplane.domain.forecast.prediction": set(),
    "shareplane.domain.cost.billing": {"submit_job", "watch_jobs"},
    "shareplane.domain.submit.payload": {"submit_job"},
    "shareplane.adapters.payload_items": set(),
    # A described job is what the paths that call DescribeServiceJob or ListServiceJobs read; record_state
    # reads events only.
    "shareplane.domain.jobs.described_job": {"handle_failure", "reclaim_capacity", "watch_jobs"},
}
HANDLERS = sorted(p.parent.name for p in (REPO / "functions").glob("*/app.py"))


@pytest.mark.parametrize("handler", HANDLERS)
def test_a_handler_imports_only_the_modules_on_its_path(handler: str) -> None:
    """Each handler imported in a fresh interpreter, as a cold start does: what it loads is what it pays for."""
    app = REPO / "functions" / handler / "app.py"
    code = (
        "import importlib.util as u, sys; "
        f"s = u.spec_from_file_location('h', {str(app)!r}); m = u.module_from_spec(s); s.loader.exec_module(m); "
        "print(' '.join(sys.modules))"
    )
    env = {**os.environ, "POWERTOOLS_TRACE_DISABLED": "1", "AWS_DEFAULT_REGION": "us-east-1"}
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
        ).stdout.split()
    )
    assert "shareplane.bootstrap" in loaded, "the handler was imported"
    stray = sorted(m for m, owners in PATH_ONLY_MODULES.items() if m in loaded and handler not in owners)
    assert not stray, f"{handler} imports {stray} at cold start, which its path never uses"


#: A watch tick over fakes, in a fresh interpreter: with ``waiting`` set a job waits on the GPU queue.
_WATCH_TICK = """
import sys
from tests.fakes.failure_world import QUEUE_ARN, World
from tests.fakes.shares_batch import FakeSharesBatch
from shareplane.domain.jobs.lifecycle import JobState, JobStatus
from shareplane.service.start_predictions import ForecastPorts
from shareplane.service.watch_jobs import watch
world = World()
if {waiting}:
    world.store.put_states(JobState(job_arn="arn:aws:batch:us-east-1:1:service-job/w", status=JobStatus.RUNNABLE,
        seq="a", job_id="w", job_name="w", job_queue=QUEUE_ARN, share_identifier="ProdExp1",
        scheduling_priority=50, created_at=1_000_000))
ports = ForecastPorts(store=world.store, recent=world.store, batch=FakeSharesBatch(capacity=4),
    config=world.config, queue="search-p4d-queue")
report = watch(world.ports, 1_000_100.0, ports)
print(len(report.predictions), "shareplane.domain.forecast.start_forecast" in sys.modules)
"""


def _last_line_of(script: str) -> str:
    """What a fresh interpreter running ``script`` printed last."""
    env = {**os.environ, "POWERTOOLS_TRACE_DISABLED": "1", "AWS_DEFAULT_REGION": "us-east-1"}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=REPO, check=True, capture_output=True, text=True
    ).stdout
    return out.split("\n")[-2]


@pytest.mark.parametrize(
    ("waiting", "expected"),
    [(False, "0 False"), (True, "1 True")],
    ids=["a tick with no waiting job never loads the forecast", "a tick with a waiting job loads it"],
)
def test_the_watch_loads_the_forecast_only_on_the_tick_that_predicts(waiting: bool, expected: str) -> None:
    assert _last_line_of(_WATCH_TICK.format(waiting=waiting)) == expected


#: A drop through the submit path over fakes and moto, in a fresh interpreter, with the receipt's
#: forecast on: ``body`` is the dropped spec.
_SUBMIT_DROP = """
import os, sys
os.environ.update(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x", AWS_DEFAULT_REGION="us-east-1")
from dataclasses import replace
from moto import mock_aws
from shareplane.service.receipt_prediction import ReceiptForecast
from shareplane.service.start_predictions import ForecastPorts
from tests.fakes.shares_batch import FakeSharesBatch
from tests.integration.drop_world import build_world
with mock_aws():
    world = build_world()
    twin = ForecastPorts(store=world.store, recent=world.store, batch=FakeSharesBatch(capacity=4),
        config=world.config, queue="search-p4d-queue")
    world.ports = replace(world.ports, forecast=ReceiptForecast(twin=twin, clock=lambda: 0.0))
    outcome = world.handle(world.drop("submit/ProdExp1/a.yaml", {body!r}))
print(outcome.status, "shareplane.domain.forecast.start_forecast" in sys.modules)
"""
_GPU_JOB = (
    b"name: a\npriority: HIGHPRI\ninstance_type: ml.p4d.24xlarge\nframework: pytorch\n"
    b'framework_version: "2.6.0"\noutput_path: s3://search-ml-training/prodexp1/out/\n'
)


@pytest.mark.parametrize(
    ("body", "expected"),
    [(b"name: [", "rejected False"), (_GPU_JOB, "accepted True")],
    ids=["a drop that submits nothing never loads the forecast", "a drop that submits a GPU job loads it"],
)
def test_the_submit_path_loads_the_forecast_only_for_a_drop_it_forecasts(body: bytes, expected: str) -> None:
    assert _last_line_of(_SUBMIT_DROP.format(body=body)) == expected


def test_the_functions_skip_pydantics_plugin_scan() -> None:
    """No function uses a pydantic plugin; without this setting, building the first model at each cold
    start reads the entry points of every distribution on sys.path looking for one."""
    variables = raw_template()["Globals"]["Function"]["Environment"]["Variables"]
    assert variables.get("PYDANTIC_DISABLE_PLUGINS") == "__all__"


#: A unit test runs no AWS, emulated or not: moto and boto3 clients belong in tests/integration.
#: (botocore's exception types may be raised by a fake; a client cannot be built without boto3.)
UNIT_TESTS_NEVER_IMPORT = ("moto", "boto3")
UNIT_TEST_FILES = sorted((REPO / "tests" / "unit").rglob("*.py"))


def helper_file(module: str) -> Path | None:
    """The file of a ``tests.*`` module, so a unit test cannot reach moto through a shared helper."""
    if module.split(".")[0] != "tests":
        return None
    base = REPO.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def aws_sdk_imports_reached_from(path: Path) -> set[tuple[str, str]]:
    """(module, importing file) for each moto/boto3 import of a file or of the tests.* helpers it imports."""
    seen: set[Path] = set()
    pending = [path]
    found: set[tuple[str, str]] = set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        for module in imported_modules(current):
            if module.split(".")[0] in UNIT_TESTS_NEVER_IMPORT:
                found.add((module, current.name))
            helper = helper_file(module)
            if helper is not None:
                pending.append(helper)
    return found


@pytest.mark.parametrize("path", UNIT_TEST_FILES, ids=lambda p: str(p.relative_to(REPO / "tests" / "unit")))
def test_unit_tests_import_no_moto_and_no_boto3(path: Path) -> None:
    bad = aws_sdk_imports_reached_from(path)
    assert not bad, (
        f"{path.relative_to(REPO)} reaches {sorted(bad)}: a test that needs moto or a boto3 client "
        "belongs under tests/integration (same sub-folder)"
    )


def test_the_unit_rule_catches_moto_and_boto3_directly_and_through_a_helper(tmp_path: Path) -> None:
    offender = tmp_path / "test_offender.py"
    offender.write_text("import boto3\nfrom moto import mock_aws\n")
    assert {m for m, _ in aws_sdk_imports_reached_from(offender)} == {"boto3", "moto"}
    through_helper = tmp_path / "test_through_helper.py"
    through_helper.write_text(
        "from tests.aws import create_jobs_table\n"
    )  # tests/aws.py imports botocore only
    assert aws_sdk_imports_reached_from(through_helper) == set()
    through_world = tmp_path / "test_through_world.py"
    through_world.write_text("from tests.integration.drop_world import build_world\n")
    assert ("boto3", "drop_world.py") in aws_sdk_imports_reached_from(through_world)


#: The local stack's modules (embedded AWS, emulator, resolver, runner): each imports the others one way.
LOCAL_PACKAGE = REPO / "cli" / "shareplane_cli" / "local"


def local_imports(path: Path, package: str = "shareplane_cli.local") -> set[str]:
    """The sibling modules one module of a package imports, at load time or inside a function."""
    tree = ast.parse(path.read_text(), filename=str(path))
    siblings = {p.stem for p in path.parent.glob("*.py")}
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(f"{package}."):
            names = [node.module.removeprefix(f"{package}.").split(".")[0]]
        elif isinstance(node, ast.Import):
            names = [a.name.removeprefix(f"{package}.").split(".")[0] for a in node.names]
        else:
            continue
        found.update(n for n in names if n in siblings and n != path.stem)
    return found


def import_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the import graph as the modules along it (first == last), or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        path.append(module)
        for imported in sorted(graph.get(module, ())):
            if state.get(imported) == "open":
                return [*path[path.index(imported) :], imported]
            if imported not in state and (cycle := visit(imported)):
                return cycle
        state[module] = "done"
        path.pop()
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


def test_the_local_stack_modules_import_each_other_without_a_cycle() -> None:
    graph = {p.stem: local_imports(p) for p in LOCAL_PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert len(graph) >= 5 and graph["stack"], "the rule is checked on the real modules"
    cycle = import_cycle(graph)
    assert cycle is None, f"the local modules import each other in a loop: {' -> '.join(cycle)}"


def test_the_cycle_rule_sees_imports_inside_functions(tmp_path: Path) -> None:
    (tmp_path / "stack.py").write_text("from .emulator import Emulator\n")
    (tmp_path / "emulator.py").write_text("def attach():\n    from .stack import REGION\n")
    (tmp_path / "leaf.py").write_text("import json\n")
    graph = {p.stem: local_imports(p) for p in tmp_path.glob("*.py")}
    assert graph == {"stack": {"emulator"}, "emulator": {"stack"}, "leaf": set()}
    assert import_cycle(graph) == ["emulator", "stack", "emulator"]
    assert import_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
