"""Commands find the shares config and a running local stack by themselves; `up -d` and `down`."""

from __future__ import annotations

import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from shareplane_cli.aws import DEFAULT_TARGET, Target, account_options
from shareplane_cli.config_file import DEFAULT_CONFIG, ConfigPath, find_config
from shareplane_cli.files import find_upward
from shareplane_cli.local import exports
from shareplane_cli.main import app
from typer.testing import CliRunner

runner = CliRunner()


class QuietHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass  # not on the stderr the commands' is read from


@pytest.fixture
def endpoint() -> Iterator[str]:
    """An HTTP server on loopback standing in for a running stack's embedded AWS."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with a shares config, the current folder two levels below its root, and a shell
    that names no account, endpoint, config or env file."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "config").mkdir()
    (root / "config" / "shares.yaml").write_text("teams: {}\n")
    (root / "jobs" / "mine").mkdir(parents=True)
    monkeypatch.chdir(root / "jobs" / "mine")
    for name in (
        "AWS_ENDPOINT_URL",
        "AWS_PROFILE",
        "AWS_ACCESS_KEY_ID",
        "SHAREPLANE_CONFIG",
        "SHAREPLANE_UP_ENV",
    ):
        monkeypatch.delenv(name, raising=False)
    return root


def test_find_upward_stops_at_the_repository_root(tmp_path: Path) -> None:
    (tmp_path / "a" / "config").mkdir(parents=True)
    (tmp_path / "a" / "config" / "shares.yaml").write_text("")
    (tmp_path / "a" / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "a" / "repo" / "sub").mkdir()
    # Found from a folder below, not from inside a repository beneath it.
    assert find_upward(DEFAULT_CONFIG, tmp_path / "a" / "repo" / ".git") is None
    assert find_upward(DEFAULT_CONFIG, tmp_path / "a" / "repo" / "sub") is None
    assert (
        find_upward(DEFAULT_CONFIG, tmp_path / "a") == (tmp_path / "a" / "config" / "shares.yaml").resolve()
    )


def test_find_config_reads_the_variable_then_looks_upward(project: Path, tmp_path: Path) -> None:
    assert find_config({}) == (project / "config" / "shares.yaml").resolve()
    assert find_config({"SHAREPLANE_CONFIG": "elsewhere/shares.yaml"}) == Path("elsewhere/shares.yaml")
    # None above: the plain default, which load_config names as missing.
    assert find_config({}, start=tmp_path) == DEFAULT_CONFIG


def test_find_env_file_reads_the_variable_then_looks_upward(project: Path) -> None:
    assert exports.find_env_file({}) == exports.DEFAULT_ENV_FILE  # none yet: where a new `up` writes it
    exports.write_env_file(project / "reports" / "local" / "up.env", ["export A=1"])
    assert exports.find_env_file({}) == (project / "reports" / "local" / "up.env").resolve()
    assert exports.find_env_file({"SHAREPLANE_UP_ENV": "/x/up.env"}) == Path("/x/up.env")


config_app = typer.Typer()
seen: list[object] = []


@config_app.command("read")
def read_config(config_path: ConfigPath = DEFAULT_CONFIG) -> None:
    seen.append(config_path)


@config_app.command("target")
@account_options
def show_target(target: Target = DEFAULT_TARGET) -> None:
    seen.append(target)


def invoke(*args: str) -> typer.testing.Result:
    seen.clear()
    return runner.invoke(config_app, list(args))


def test_config_option_is_as_given_else_found(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert invoke("read").exit_code == 0 and seen == [(project / "config" / "shares.yaml").resolve()]
    assert invoke("read", "--config", "config/shares.yaml").exit_code == 0
    assert seen == [Path("config/shares.yaml")]  # as given, even when it is the default's text
    monkeypatch.setenv("SHAREPLANE_CONFIG", "/etc/shares.yaml")
    assert invoke("read").exit_code == 0 and seen == [Path("/etc/shares.yaml")]


def running_stack(project: Path, endpoint: str) -> Path:
    env_file = project / "reports" / "local" / "up.env"
    variables = {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ENDPOINT_URL_BATCH": endpoint + "/batch",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "shareplane-local",
        "AWS_SECRET_ACCESS_KEY": "shareplane-local",
        "SHAREPLANE_STACK": "shareplane-local",
        "SHAREPLANE_CLOCK_URL": endpoint + "/clock",
        exports.PID_VARIABLE: str(os.getpid()),  # a process that runs: this one
    }
    exports.write_env_file(env_file, exports.export_lines(variables))
    return env_file


def test_a_command_given_no_endpoint_finds_the_running_stack(project: Path, endpoint: str) -> None:
    env_file = running_stack(project, endpoint)
    result = invoke("target")
    assert result.exit_code == 0, result.output
    [target] = seen
    assert isinstance(target, Target)
    assert (target.endpoint, target.stack_name) == (endpoint, "shareplane-local")
    assert target.environ()["SHAREPLANE_CLOCK_URL"] == endpoint + "/clock"
    assert target.environ()["AWS_ENDPOINT_URL_BATCH"] == endpoint + "/batch"
    # One line on stderr says which stack, and where it was found.
    assert result.stderr.splitlines() == [
        f"local stack shareplane-local at {endpoint} (found {env_file.resolve()}; --endpoint, --profile "
        "or --stack-name for another)"
    ]
    # A stack named on the command line is kept.
    assert invoke("target", "--stack-name", "mine").exit_code == 0
    assert isinstance(seen[0], Target) and seen[0].stack_name == "mine"


@pytest.mark.parametrize(
    ("args", "variable"),
    [
        (["--endpoint", "http://127.0.0.1:4566"], None),
        (["--profile", "prod"], None),
        ([], "AWS_PROFILE"),
        ([], "AWS_ENDPOINT_URL"),
        ([], "AWS_ACCESS_KEY_ID"),
    ],
)
def test_a_command_told_of_an_account_never_looks_for_a_local_stack(
    project: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch, args: list[str], variable: str | None
) -> None:
    running_stack(project, endpoint)
    if variable:
        monkeypatch.setenv(variable, "http://127.0.0.1:9" if variable == "AWS_ENDPOINT_URL" else "prod")
    result = invoke("target", *args)
    assert result.exit_code == 0, result.output
    [target] = seen
    assert isinstance(target, Target) and target.endpoint != endpoint and not target.local
    assert "local stack" not in result.stderr


def test_a_stale_env_file_is_no_stack(project: Path) -> None:
    running_stack(project, "http://127.0.0.1:9")  # nothing answers there
    assert invoke("target").exit_code == 0 and seen == [Target()]


def test_down_with_nothing_running_says_so(project: Path) -> None:
    result = runner.invoke(app, ["down"])
    assert result.exit_code == 0, result.output
    assert "no local stack runs" in result.stdout


def test_up_detach_starts_one_and_says_how_to_use_and_stop_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[tuple[list[str], Path]] = []
    fresh = exports.export_lines({"AWS_ENDPOINT_URL": "http://127.0.0.1:4566", exports.PID_VARIABLE: "42"})

    def start(arguments: list[str], path: Path, output: Path) -> list[str]:
        started.append((list(arguments), path))
        return fresh

    monkeypatch.setattr("shareplane_cli.commands.local.start_in_background", start)
    result = runner.invoke(app, ["up", "-d", "--speed", "50"])
    assert result.exit_code == 0, result.output
    [(arguments, path)] = started
    assert arguments[arguments.index("--speed") + 1] == "50.0" and path == exports.DEFAULT_ENV_FILE
    assert "local stack up at http://127.0.0.1:4566 (pid 42" in result.stdout
    assert 'eval "$(shareplane up --env)"' in result.stdout and "stop it: shareplane down" in result.stdout


def test_up_detach_with_one_running_starts_none(
    project: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    running_stack(project, endpoint)

    def no_second_stack(*_: object) -> list[str]:
        raise AssertionError("a stack runs already: none may be started")

    monkeypatch.setattr("shareplane_cli.commands.local.start_in_background", no_second_stack)
    result = runner.invoke(app, ["up", "--detach"])
    assert result.exit_code == 0, result.output
    assert f"local stack already running at {endpoint} (pid {os.getpid()}" in result.stdout


def test_up_takes_detach_or_env_not_both(project: Path) -> None:
    result = runner.invoke(app, ["up", "-d", "--env"])
    assert result.exit_code == 2
    assert "--env and --detach" in result.stderr


def test_a_stale_file_of_a_stopped_up_is_no_stack_even_if_its_port_answers(
    project: Path, endpoint: str
) -> None:
    # GIVEN the file of an `up` that no longer runs, its port taken by another server that answers
    env_file = running_stack(project, endpoint)
    lines = env_file.read_text().splitlines()
    dead = [line for line in lines if exports.PID_VARIABLE not in line] + [
        f"export {exports.PID_VARIABLE}=999999999"
    ]
    exports.write_env_file(env_file, dead)
    # THEN it is no running stack
    assert exports.running_exports(env_file) is None


@pytest.mark.parametrize(
    ("args", "variables"),
    [
        (["--region", "eu-west-1"], {}),
        (["--stack-name", "shareplane-prod"], {}),
        ([], {"SHAREPLANE_STACK": "shareplane-prod"}),
        ([], {"AWS_DEFAULT_PROFILE": "prod"}),
        ([], {"AWS_ROLE_ARN": "arn:aws:iam::1:role/ci"}),
    ],
    ids=["--region", "--stack-name", "SHAREPLANE_STACK", "AWS_DEFAULT_PROFILE", "a role to assume"],
)
def test_a_command_told_of_an_account_never_finds_the_local_stack(
    project: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch, args: list[str], variables: dict[str, str]
) -> None:
    running_stack(project, endpoint)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    result = invoke("target", *args)
    assert result.exit_code == 0, result.output
    [target] = seen[-1:]
    assert target.endpoint is None and "local stack" not in result.stderr
