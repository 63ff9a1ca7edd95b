"""`shareplane up --env`: only `export` lines, of the running stack, that a shell evaluates back exactly."""

from __future__ import annotations

import http.server
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from shareplane_cli.local import exports
from shareplane_cli.main import app
from typer.testing import CliRunner

runner = CliRunner()


@pytest.fixture
def endpoint() -> Iterator[str]:
    """An HTTP server on loopback standing in for a running stack's embedded AWS."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def shell_values(lines: str, *names: str) -> list[str]:
    """What a POSIX shell has in ``names`` after ``eval "$(printf %s LINES)"``."""
    script = 'eval "$1"; ' + "; ".join(f'printf "%s\\n" "${name}"' for name in names)
    done = subprocess.run(["sh", "-c", script, "sh", lines], capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def test_export_lines_evaluate_back_to_the_values() -> None:
    values = {"PLAIN": "http://127.0.0.1:4566", "ODD": 'it\'s a $HOME `x` "y" z'}
    lines = exports.export_lines(values)
    assert shell_values("\n".join(lines), "PLAIN", "ODD") == list(values.values())
    assert exports.exported(lines) == values


def test_env_prints_only_the_running_stacks_exports(
    endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a running `up` wrote its exports (its embedded AWS answers)
    env_file = tmp_path / "up.env"
    lines = exports.export_lines(
        {
            "AWS_ENDPOINT_URL": endpoint,
            "SHAREPLANE_STACK": "shareplane-local",
            exports.PID_VARIABLE: str(os.getpid()),
        }
    )
    exports.write_env_file(env_file, lines)

    def no_second_stack(*_: object) -> list[str]:
        raise AssertionError("a stack runs already: none may be started")

    monkeypatch.setattr("shareplane_cli.commands.local.start_in_background", no_second_stack)
    # WHEN `up --env` runs
    result = runner.invoke(app, ["up", "--env", "--env-file", str(env_file)])
    # THEN stdout is those export lines alone, and a shell takes them
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == lines
    assert shell_values(result.stdout, "AWS_ENDPOINT_URL") == [endpoint]


def test_env_starts_a_stack_when_the_file_is_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the file of an `up` that was killed: nothing answers at its endpoint
    env_file = tmp_path / "up.env"
    exports.write_env_file(env_file, exports.export_lines({"AWS_ENDPOINT_URL": "http://127.0.0.1:9"}))
    started: list[list[str]] = []
    fresh = exports.export_lines({"AWS_ENDPOINT_URL": "http://127.0.0.1:4566", "SHAREPLANE_UP_PID": "42"})

    def start(arguments: list[str], path: Path, output: Path) -> list[str]:
        started.append(list(arguments))
        assert path == env_file
        return fresh

    monkeypatch.setattr("shareplane_cli.commands.local.start_in_background", start)
    # WHEN `up --env` runs, THEN it starts one with the same options and prints its exports alone
    log = tmp_path / "up.log"
    result = runner.invoke(
        app, ["up", "--env", "--env-file", str(env_file), "--log", str(log), "--speed", "50"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == fresh
    (arguments,) = started
    assert arguments[arguments.index("--env-file") + 1] == str(env_file)
    assert arguments[arguments.index("--speed") + 1] == "50.0" and "--env" not in arguments
    assert "kill 42" in result.stderr


def test_a_stopping_up_leaves_another_ups_file_alone(tmp_path: Path) -> None:
    env_file = tmp_path / "up.env"
    mine, theirs = exports.export_lines({"A": "1"}), exports.export_lines({"A": "2"})
    exports.write_env_file(env_file, theirs)
    exports.remove_env_file(env_file, mine)
    assert env_file.read_text().splitlines() == theirs
    exports.remove_env_file(env_file, theirs)
    assert not env_file.exists()
