"""The walls of the code: what each part may import, read and load.

Who may import whom is import-linter's ([tool.importlinter] in pyproject.toml, `make lint`): the core's
layers, the domain's packages in theirs, domain and service never reaching the AWS SDK or Powertools, the
Lambda code never reaching the simulator, the CLI, the SageMaker SDK or plotly, no import loop in the core
or the local stack. This file runs them, proves that one stray import breaks the contract it should, and
holds what import-linter cannot see: clock and environment reads, each handler's cold start, unit tests
importing no moto or boto3 themselves or through the tests.* helpers they use (a contract would also
forbid the boto3 that shareplane's own modules import).
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.template import raw_template

CORE = REPO / "layers" / "core" / "shareplane"
PURE_FILES = sorted([*(CORE / "domain").rglob("*.py"), *(CORE / "service").rglob("*.py")])

#: The contracts of pyproject.toml, name by id.
CONTRACTS = {
    contract["id"]: contract["name"]
    for contract in tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
}


def lint_imports(tree: Path) -> tuple[int, str, set[str]]:
    """lint-imports with pyproject.toml's contracts over the code of ``tree`` (a checkout, or a copy of
    one): its exit status, its output and the names of the contracts it found broken."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(str(tree / folder) for folder in ("layers/core", "sim", "cli")),
        "COLUMNS": "1000",  # one line per contract, however long its name
    }
    result = subprocess.run(
        [Path(sys.executable).with_name("lint-imports"), "--no-cache", "--no-logo", REPO / "pyproject.toml"],
        cwd=tree,  # where `functions` is found
        env=env,
        capture_output=True,
        text=True,
    )
    # One line per contract: its name, KEPT or BROKEN, and how many imports it ignores if any.
    broken = {
        found[1] for found in re.finditer(r"^(.+) BROKEN(?: \(\d+ ignored imports?\))?$", result.stdout, re.M)
    }
    return result.returncode, result.stdout + result.stderr, broken


def test_the_code_keeps_every_import_contract() -> None:
    status, output, broken = lint_imports(REPO)
    assert (status, broken) == (0, set()), output
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in output


#: An import that goes up a layer closes a loop too, the upper layer importing the lower one (an adapter
#: names the service's ports), so no-loops breaks with the layers.
@pytest.mark.parametrize(
    ("module", "added", "contracts"),
    [
        (
            "layers/core/shareplane/domain/jobs/arns.py",
            "from ..explain import wait\n",
            {"domain-packages", "no-loops"},
        ),
        (
            "layers/core/shareplane/domain/idle/record.py",
            "from ...schemas import idle\n",
            {"core-layers", "no-loops"},
        ),
        ("layers/core/shareplane/domain/cost/billing.py", "def sdk():\n    import botocore\n", {"pure-core"}),
        (
            "layers/core/shareplane/service/submit_job.py",
            "from ..adapters import aws_errors\n",  # and through it botocore
            {"core-layers", "pure-core", "no-loops"},
        ),
        (
            "layers/core/shareplane/domain/jobs/arns.py",
            "def key():\n    from .lifecycle import JobState\n",  # lifecycle imports arns
            {"no-loops"},
        ),
        (
            "cli/shareplane_cli/local/intrinsics.py",
            "def attach():\n    from .emulator import Emulator\n",  # the emulator imports intrinsics
            {"local-stack"},
        ),
        ("functions/watch_jobs/app.py", "import plotly\n", {"lambda-code"}),
        ("functions/submit_job/app.py", "from shareplane.adapters import sns_alerts\n", {"handlers"}),
    ],
    ids=[
        "a domain package imports one above it",
        "the domain imports a schema",
        "the domain reaches botocore inside a function",
        "the service imports an adapter",
        "two modules import each other",
        "two modules of the local stack import each other",
        "a handler imports plotly",
        "a handler builds an adapter of its own",
    ],
)
def test_one_import_that_breaks_a_contract_fails_lint_imports_naming_it(
    tmp_path: Path, module: str, added: str, contracts: set[str]
) -> None:
    for folder in ("layers/core/shareplane", "functions", "cli/shareplane_cli"):
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "sim").symlink_to(REPO / "sim")
    with (tmp_path / module).open("a") as source:
        source.write(added)
    status, output, broken = lint_imports(tmp_path)
    assert status != 0 and broken == {CONTRACTS[contract] for contract in contracts}, output


def module_name(path: Path) -> str:
    """The dotted name a file is imported under: its folders, up to the first without an __init__.py."""
    parts = [] if path.stem == "__init__" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts)


def imported_from(node: ast.ImportFrom, path: Path) -> str:
    """The absolute name of the module a ``from ... import`` names, relative ones resolved from ``path``."""
    if node.level == 0:
        return node.module or ""
    package = module_name(path).split(".")
    if path.stem != "__init__":
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, absolute or relative, at load time or inside a function (a name
    imported from a package counts as its submodule too: it may be one)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = imported_from(node, path)
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


#: What reads the clock or the environment, by the name it is defined under.
CLOCK_AND_ENVIRONMENT = frozenset(
    {
        *(
            f"time.{name}{ns}"
            for name in ("time", "monotonic", "perf_counter", "process_time")
            for ns in ("", "_ns")
        ),
        "time.clock_gettime",
        "time.clock_gettime_ns",
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "datetime.date.today",
        "os.environ",
        "os.environb",
        "os.getenv",
        "os.getenvb",
    }
)
#: These read the clock only when called without the time they convert: at most this many arguments.
CLOCK_WHEN_GIVEN_NO_TIME = {
    "time.gmtime": 0,
    "time.localtime": 0,
    "time.ctime": 0,
    "time.asctime": 0,
    "time.strftime": 1,
}


def import_bindings(tree: ast.AST, path: Path) -> dict[str, str]:
    """Each name the file's imports bind (anywhere in it), to what it names: ``now`` to ``time.time``
    for ``from time import time as now``, ``dt`` to ``datetime`` for ``import datetime as dt``."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom):
            module = imported_from(node, path)
            bound.update((alias.asname or alias.name, f"{module}.{alias.name}") for alias in node.names)
    return bound


def resolved_name(node: ast.expr, bound: dict[str, str]) -> str | None:
    """What a name or attribute chain refers to through the imports (None when it starts elsewhere:
    a local variable or a parameter named ``time`` is not the module)."""
    if isinstance(node, ast.Name):
        return bound.get(node.id)
    if isinstance(node, ast.Attribute):
        base = resolved_name(node.value, bound)
        return None if base is None else f"{base}.{node.attr}"
    return None


def clock_and_environment_reads(path: Path) -> list[str]:
    """Where a file reads the clock or the environment: ``line N: name`` (names resolved, not matched
    as text, so an alias is seen and a comment or a string is not)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    bound = import_bindings(tree, path)
    found: set[tuple[int, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = imported_from(node, path)
            found.update(
                (node.lineno, f"{module}.{a.name}")
                for a in node.names
                if f"{module}.{a.name}" in CLOCK_AND_ENVIRONMENT
            )
        elif isinstance(node, ast.Name | ast.Attribute):
            name = resolved_name(node, bound)
            if name in CLOCK_AND_ENVIRONMENT:
                found.add((node.lineno, name))
        elif isinstance(node, ast.Call):
            name = resolved_name(node.func, bound)
            given = len(node.args) + len(node.keywords)
            if name in CLOCK_WHEN_GIVEN_NO_TIME and given <= CLOCK_WHEN_GIVEN_NO_TIME[name]:
                found.add((node.lineno, f"{name}()"))
    return [f"line {line}: {name}" for line, name in sorted(found)]


@pytest.mark.parametrize(
    "path", PURE_FILES, ids=lambda p: f"{p.parent.name}/{p.name} reads no environment or clock"
)
def test_pure_layers_read_no_environment_or_clock(path: Path) -> None:
    reads = clock_and_environment_reads(path)
    assert not reads, f"{path.relative_to(REPO)} reads the clock or the environment: {reads}"


def test_the_rule_is_checked_on_real_files() -> None:
    assert len(PURE_FILES) >= 5


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from time import time as now\nstamp = now()\n", ["line 1: time.time", "line 2: time.time"]),
        (
            "import datetime as dt\n\ndef f():\n    return dt.datetime.now()\n",
            ["line 4: datetime.datetime.now"],
        ),
        ("from datetime import date\ntoday = date.today()\n", ["line 2: datetime.date.today"]),
        ("import os\nregion = os.getenv('AWS_REGION')\n", ["line 2: os.getenv"]),
        (
            "def f():\n    from os import environ as env\n    return env['X']\n",
            ["line 2: os.environ", "line 3: os.environ"],
        ),
        ("import os.path\nhome = os.environ.get('HOME')\n", ["line 2: os.environ"]),
        ("import time as t\ndefault_clock = t.monotonic\n", ["line 2: time.monotonic"]),
        ("import time\nstamp = time.strftime('%H')\n", ["line 2: time.strftime()"]),
        ("# time.time( and os.environ here are words\nnote = 'datetime.now(), time.time('\n", []),
        ("from datetime import UTC, datetime\nday = datetime.fromtimestamp(0, UTC)\n", []),
        ("import time\nparts = time.gmtime(0)\nstamp = time.strftime('%H', parts)\n", []),
        ("def f(time, os):\n    return time.time() + len(os.environ)\n", []),
    ],
    ids=[
        "an aliased from-import",
        "an aliased module inside a function",
        "date.today",
        "os.getenv",
        "an aliased environ imported in a function",
        "os through os.path",
        "a clock passed by reference",
        "strftime without its time",
        "a comment and a string",
        "a conversion of a given time",
        "gmtime and strftime given a time",
        "parameters named like the modules",
    ],
)
def test_the_clock_and_environment_rule_resolves_names(
    tmp_path: Path, source: str, expected: list[str]
) -> None:
    module = tmp_path / "module.py"
    module.write_text(source)
    assert clock_and_environment_reads(module) == expected


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
    """(package, importing file) for each moto/boto3 import of a file or of the tests.* helpers it imports."""
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
                found.add((module.split(".")[0], current.name))
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


def test_imported_modules_resolves_relative_imports_from_the_package(tmp_path: Path) -> None:
    package = tmp_path / "pkg" / "sub"
    package.mkdir(parents=True)
    for folder in (package.parent, package):
        (folder / "__init__.py").write_text("")
    module = package / "test_x.py"
    module.write_text("from ..helpers import world\nfrom . import local\nimport json\n")
    assert imported_modules(module) == {
        "pkg.helpers",
        "pkg.helpers.world",
        "pkg.sub",
        "pkg.sub.local",
        "json",
    }
    (package / "__init__.py").write_text("def f():\n    from .local import x\n")
    assert imported_modules(package / "__init__.py") == {"pkg.sub.local", "pkg.sub.local.x"}


#: The longest a function outside the tests may be: past it, split it into named steps or a rule table.
MAX_FUNCTION_LINES = 80


def long_functions(roots: tuple[str, ...] = ("layers", "functions", "cli", "sim")) -> list[str]:
    """Every function (methods and nested ones included) over ``MAX_FUNCTION_LINES``, as ``path:name lines``."""
    found = []
    for root in roots:
        for path in sorted((REPO / root).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines > MAX_FUNCTION_LINES:
                        found.append(f"{path.relative_to(REPO)}:{node.name} {lines}")
    return found


def test_no_function_outside_the_tests_is_over_80_lines() -> None:
    assert long_functions() == []


def test_the_length_rule_finds_a_long_function(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "long.py").write_text(f"def long() -> None:\n{body}\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert long_functions(("cli",)) == [f"cli{os.sep}long.py:long {MAX_FUNCTION_LINES + 1}"]
