"""What `shareplane up` exports, and the file where a running `up` keeps it for `shareplane up --env`.

A running `up` writes its ``export`` lines to the env file once its stack is up and removes them when it
stops, so `up --env` can print them for ``eval "$(shareplane up --env)"``: from the `up` already
running, or from one it starts in the background.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import CliError, ExitCode
from ..files import find_upward

#: Where a running `up` keeps its exports (beside its default log), under the folder it runs in.
DEFAULT_ENV_FILE = Path("reports/local/up.env")
#: Names the env file for `up`, `down` and the commands that look for a running local stack.
ENV_FILE_VARIABLE = "SHAREPLANE_UP_ENV"
#: What ``--help`` says of the found env file.
FOUND_ENV_FILE = f"${ENV_FILE_VARIABLE}, else {DEFAULT_ENV_FILE} here or in the nearest folder above"
#: The variable naming the process serving the stack: ``kill "$SHAREPLANE_UP_PID"`` stops it.
PID_VARIABLE = "SHAREPLANE_UP_PID"
#: How long `up --env` waits for a stack it started to be up (the template's stack takes seconds).
START_TIMEOUT_SECONDS = 180.0


def export_lines(variables: Mapping[str, str]) -> list[str]:
    """``export NAME=value`` lines a POSIX shell evaluates back to exactly these values."""
    return [f"export {name}={shlex.quote(value)}" for name, value in variables.items()]


def exported(lines: Sequence[str]) -> dict[str, str]:
    """The variables ``export_lines`` wrote (lines of any other form are skipped)."""
    variables = {}
    for line in lines:
        try:
            words = shlex.split(line)
        except ValueError:  # an unbalanced quote: a line of some other form
            continue
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            name, value = words[1].split("=", 1)
            variables[name] = value
    return variables


def write_env_file(path: Path, lines: Sequence[str]) -> None:
    """The lines, whole or not at all: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    partial.replace(path)


def remove_env_file(path: Path, lines: Sequence[str]) -> None:
    """Remove the file if it still holds these lines (another `up` may have written its own since)."""
    if _holds(path, lines):
        path.unlink(missing_ok=True)


def _holds(path: Path, lines: Sequence[str]) -> bool:
    try:
        return path.read_text(encoding="utf-8").splitlines() == list(lines)
    except FileNotFoundError:
        return False


def find_env_file(environ: Mapping[str, str] | None = None, start: Path | None = None) -> Path:
    """The env file of the project's local stack: the one $SHAREPLANE_UP_ENV names, else
    reports/local/up.env in ``start`` (the current folder) or the nearest folder above that has one (up
    to the repository's root), else reports/local/up.env here, where a new `up` writes it."""
    named = (os.environ if environ is None else environ).get(ENV_FILE_VARIABLE, "").strip()
    if named:
        return Path(named)
    return find_upward(DEFAULT_ENV_FILE, start) or DEFAULT_ENV_FILE


def running_exports(path: Path) -> list[str] | None:
    """The lines of the `up` whose env file this is, when that `up` still runs and its embedded AWS
    answers; None otherwise (a stale file whose port another server took is not a stack)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return None
    variables = exported(lines)
    endpoint = variables.get("AWS_ENDPOINT_URL")
    return lines if endpoint and _alive(variables.get(PID_VARIABLE)) and answers(endpoint) else None


def _alive(pid: str | None) -> bool:
    """Whether the process ``pid`` names runs (on this machine, where `up` wrote it)."""
    try:
        os.kill(int(pid or ""), 0)
    except ValueError:
        return False
    except PermissionError:
        return True  # it runs, as another user
    except OSError:
        return False
    return True


def answers(endpoint: str, timeout: float = 2.0) -> bool:
    """Whether an HTTP server answers at ``endpoint`` (any status: moto answers 404 at its root)."""
    try:
        with urllib.request.urlopen(endpoint, timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError, ValueError):
        return False


def start_in_background(up_arguments: Sequence[str], path: Path, output: Path) -> list[str]:
    """Start `shareplane up ARGUMENTS` detached from this terminal and return its export lines.

    Its own output goes to ``output``; it runs until killed (``kill "$SHAREPLANE_UP_PID"``).
    """
    path.unlink(missing_ok=True)  # a stale file of an `up` that was killed: never read as the new one's
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("ab") as sink:
        child = subprocess.Popen(
            [sys.executable, "-m", "shareplane_cli", "up", *up_arguments],
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=sink,
            start_new_session=True,  # not stopped by the Ctrl-C or hang-up of the shell that started it
        )
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        lines = running_exports(path)
        if lines is not None:
            return lines
        if child.poll() is not None:
            raise CliError(
                f"the local stack stopped while starting (exit {child.returncode})",
                f"read {output}, or run `shareplane up` in the foreground to see why",
                ExitCode.INTERNAL,
            )
        time.sleep(0.2)
    child.terminate()
    raise CliError(
        f"the local stack was not up after {START_TIMEOUT_SECONDS:g} s",
        f"read {output}, or run `shareplane up` in the foreground to see why",
        ExitCode.TIMEOUT,
    )


#: How long `down` waits for the stack to stop after its Ctrl-C (it stops in about a second).
STOP_TIMEOUT_SECONDS = 60.0


def stop_running(path: Path, lines: Sequence[str], timeout: float = STOP_TIMEOUT_SECONDS) -> None:
    """Stop the `up` whose env file ``path`` holds ``lines``: SIGINT (its Ctrl-C), then wait until its
    lines are gone from the file (it removes them as it stops) and its endpoint no longer answers;
    CliError when it outlives ``timeout``."""
    variables = exported(lines)
    pid = variables.get(PID_VARIABLE, "")
    if not pid.isdigit():
        raise CliError(
            f"{path} names no process ({PID_VARIABLE} is {pid!r})",
            "stop the stack where it runs (Ctrl-C in its terminal)",
            ExitCode.BAD_INPUT,
        )
    try:
        os.kill(int(pid), signal.SIGINT)
    except ProcessLookupError:
        return  # gone between the look and the signal
    endpoint = variables.get("AWS_ENDPOINT_URL", "")
    deadline = time.monotonic() + timeout
    while _holds(path, lines) or answers(endpoint, timeout=0.5):
        if time.monotonic() > deadline:
            raise CliError(
                f"the local stack (pid {pid}) did not stop within {timeout:g} s of its Ctrl-C",
                f"kill {pid}",
                ExitCode.TIMEOUT,
            )
        time.sleep(0.2)
