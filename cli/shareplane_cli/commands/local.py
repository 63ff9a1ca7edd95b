"""`shareplane up` and `shareplane replay`: the control plane on the embedded local stack and emulator."""

from __future__ import annotations

import json
import os
import signal
import time
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.live import Live
from rich.markup import escape
from rich.text import Text
from shareplane.domain.config.shares import SharesConfig
from shareplane.service.queries import job_records

from ..errors import CliError, ExitCode
from ..files import given_or_found, read_capped
from ..local.emulator import DEFAULT_SPEED
from ..local.exports import (
    DEFAULT_ENV_FILE,
    FOUND_ENV_FILE,
    PID_VARIABLE,
    export_lines,
    exported,
    find_env_file,
    remove_env_file,
    running_exports,
    start_in_background,
    stop_running,
    write_env_file,
)
from ..local.loop import StackLoop
from ..local.noise_log import NoiseLog, invocation_line, noise_to_log
from ..local.runner import FunctionRunner, Invocation
from ..local.stack import DEFAULT_STACK, LocalStack, StackSpec
from ..main import app
from ..output import Output, stderr_console
from .jobs import print_jobs

if TYPE_CHECKING:
    from shareplane.adapters.dynamodb_store import DynamoJobStore

TemplateOption = Annotated[Path, typer.Option(help="The SAM template the stack is built from.")]
EnvFileOption = Annotated[
    Path,
    typer.Option(
        help="Where a running stack keeps its export lines (for --env, `down` and the commands finding it).",
        show_default=FOUND_ENV_FILE,
        callback=given_or_found(find_env_file),
    ),
]
err = stderr_console()


def put_events(stack: LocalStack, events: list[dict[str, Any]]) -> None:
    """PutEvents on the default bus as the services would, 10 entries per call."""
    client = stack.client("events")
    for start in range(0, len(events), 10):
        entries = [
            {
                "Source": e["source"],
                "DetailType": e["detail-type"],
                "Detail": json.dumps(e["detail"]),
                "Resources": e.get("resources", []),
                **(
                    {"Time": datetime.fromisoformat(e["time"].replace("Z", "+00:00"))}
                    if e.get("time")
                    else {}
                ),
            }
            for e in events[start : start + 10]
        ]
        response = client.put_events(Entries=entries)
        if response["FailedEntryCount"]:
            failed = [r for r in response["Entries"] if r.get("ErrorCode")]
            raise RuntimeError(f"PutEvents refused {len(failed)} entries: {failed[0]}")


#: The largest events file `replay` reads: EventBridge takes at most 256 KB a PutEvents entry, so this
#: is a few hundred events of the largest size, far more than a scenario; it stops an endless stream.
MAX_REPLAY_BYTES = 64 * 1024 * 1024


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """One EventBridge event per line; blank lines are skipped, a bad line is named."""
    events = []
    data = read_capped(
        path, MAX_REPLAY_BYTES, "FILE", "pass a file of events, one JSON per line (events/scenarios/)"
    )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise typer.BadParameter(
            f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save the file as UTF-8"
        ) from exc
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise typer.BadParameter(f"{path}:{number}: not JSON ({exc.msg})") from exc
    return events


def wait_until_drained(stack: LocalStack, timeout: float = 60) -> None:
    """With a running `shareplane up`, its runner drains the queues; wait for that."""
    runner = FunctionRunner(stack)
    deadline = time.monotonic() + timeout
    while not runner.queues_empty():
        if time.monotonic() > deadline:
            raise TimeoutError("the local stack's queues did not drain; is `shareplane up` running?")
        time.sleep(0.2)


@app.command("replay")
def replay_command(
    file: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, metavar="FILE", help="Events, one JSON per line.")
    ],
    endpoint: Annotated[
        str | None, typer.Option(help="A running `shareplane up` stack; default: a fresh one.")
    ] = None,
    output: Annotated[Output, typer.Option("--output", "-o")] = Output.TABLE,
    template: TemplateOption = Path("template.yaml"),
) -> None:
    """Put every event on the local default bus, run the handlers, print every job record."""
    events = read_jsonl(file)
    stack = LocalStack(StackSpec(template), endpoint=endpoint).start()
    try:
        put_events(stack, events)
        if endpoint is None:
            FunctionRunner(stack).drain()
        else:
            wait_until_drained(stack)
        store = _store(stack)
        print_jobs(job_records(store, config=_stack_config(stack)), output, stack.cluster_time())
    finally:
        stack.stop()


@dataclass
class _UpProgress:
    """What `shareplane up` shows: one live status line, failures as they happen, a summary at the end."""

    noise: NoiseLog
    live: Live | None
    ticks: int = 0
    invocations: int = 0
    records: int = 0
    failed: int = 0

    def tick(self, message: str) -> None:
        self.noise.tick(message)
        self.ticks += 1
        if "failed" in message:
            err.print(message)
        self._refresh()

    def invocation(self, invocation: Invocation) -> None:
        self.noise.invocation(invocation)
        line = invocation_line(invocation)
        self.invocations += 1
        self.records += invocation.records
        self.failed += invocation.failed
        if invocation.failed:
            err.print(f"[red]{escape(line)}[/] (why: the log)")
        self._refresh()

    def status(self) -> str:
        return (
            f"{self.ticks} schedule ticks, {self.invocations} invocations, "
            f"{self.records} records, {self.failed} failed"
        )

    def _refresh(self) -> None:
        if self.live is not None:
            self.live.update(Text(self.status(), style="dim"))


@app.command("up")
def up_command(
    template: TemplateOption = Path("template.yaml"),
    poll_seconds: Annotated[float, typer.Option(help="How often the runner polls the queues.")] = 0.5,
    speed: Annotated[
        float, typer.Option(min=0.001, help="Emulated Batch + SageMaker: virtual seconds per wall second.")
    ] = DEFAULT_SPEED,
    log: Annotated[
        Path, typer.Option(help="Where moto's warnings, schedule ticks and invocations are written.")
    ] = Path("reports/local/up.log"),
    env: Annotated[
        bool,
        typer.Option(
            "--env",
            help="Print only the export lines of the running local stack, starting one in the background "
            'if none runs: eval "$(shareplane up --env)". Stop it with `shareplane down`.',
        ),
    ] = False,
    detach: Annotated[
        bool,
        typer.Option(
            "--detach",
            "-d",
            help="Start the stack in the background, wait until it answers, say how to use it and return; "
            "`shareplane down` stops it. With one running already, only say where it is.",
        ),
    ] = False,
    env_file: EnvFileOption = DEFAULT_ENV_FILE,
) -> None:
    """Run the local stack in the foreground; export the printed variables to use it.

    Or, with -d, start it in the background and return (`shareplane down` stops it); with --env, print
    just its export lines, starting it if none runs (eval "$(shareplane up --env)"). The commands run
    in this folder or below find a running stack by themselves (see their --endpoint).
    """
    if env and detach:
        raise CliError(
            "--env and --detach: pass one",
            "--detach starts the stack and says how to use it; --env also prints its export lines",
            ExitCode.BAD_INPUT,
        )
    if env:
        _print_running_exports(template, poll_seconds, speed, log, env_file)
        return
    if detach:
        _start_detached(template, poll_seconds, speed, log, env_file)
        return
    _run_in_foreground(template, poll_seconds, speed, log, env_file)


def _run_in_foreground(template: Path, poll_seconds: float, speed: float, log: Path, env_file: Path) -> None:
    """`up` itself: start the stack, print and keep its exports, run its loop until Ctrl-C, stop it."""
    # Ctrl-C (SIGINT, what `down` sends) stops it even when started by a process that ignores SIGINT
    # (a background job, a test runner's worker): Python keeps an inherited SIG_IGN as it finds it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with noise_to_log(log) as noise:
        stack = LocalStack(StackSpec(template, stack_name=DEFAULT_STACK), speed=speed)
        progress: _UpProgress | None = None
        lines: list[str] = []
        try:
            stack.start()
            lines = export_lines(
                {
                    **stack.environment(),
                    "SHAREPLANE_STACK": stack.spec.stack_name,
                    PID_VARIABLE: str(os.getpid()),
                }
            )
            print("\n".join(lines), flush=True)
            write_env_file(env_file, lines)
            err.print(
                f"[green]local stack up at {stack.endpoint}[/], Batch + SageMaker at "
                f"{stack.running_emulator().endpoint} ({speed:g}x) (Ctrl-C stops it)"
            )
            err.print(noise.where())
            progress = _run_loop(stack, noise, poll_seconds)
        except KeyboardInterrupt:
            pass
        finally:
            remove_env_file(env_file, lines)
            stack.stop()
            done = progress.status() if progress is not None else "stopped before it was up"
            err.print(f"stopped: {done}; {noise.warnings} warnings in {escape(str(noise.path))}")


def _run_loop(stack: LocalStack, noise: NoiseLog, poll_seconds: float) -> _UpProgress:
    """Run the stack's schedules and handlers, turn after turn, until Ctrl-C; what was not emulated goes
    to the log (counted on screen). Returns the progress, whose count the summary line gives."""
    skipped = stack.emulated.skipped if stack.emulated else {}
    for logical, reason in skipped.items():
        noise.note(f"{logical}: {reason}", "not emulated")
    with Live(console=err, transient=True) if err.is_terminal else nullcontext() as live:
        progress = _UpProgress(noise, live)
        runner = FunctionRunner(stack, on_invocation=progress.invocation)
        # Unbounded: this loop sleeps between turns on purpose, and its user acts in wall time.
        loop = StackLoop(stack, runner, report=progress.tick, max_virtual_seconds_per_step=None)
        for logical, reason in loop.skipped.items():
            noise.note(f"{logical}: {reason}", "schedule not run")
        if skipped or loop.skipped:
            err.print(
                f"not emulated: {len(skipped)} template resources, {len(loop.skipped)} schedules "
                "(each named in the log)"
            )
        try:
            while True:
                loop.turn(poll_seconds)
        except KeyboardInterrupt:
            return progress


def _running_or_started(
    template: Path, poll_seconds: float, speed: float, log: Path, env_file: Path
) -> tuple[list[str], bool]:
    """The export lines of the `up` running, or of one started now in the background (and whether it
    was started)."""
    lines = running_exports(env_file)
    if lines is not None:
        return lines, False
    arguments = [
        "--template",
        str(template),
        "--poll-seconds",
        repr(poll_seconds),
        "--speed",
        repr(speed),
    ]
    arguments += ["--log", str(log), "--env-file", str(env_file)]
    output = log.with_suffix(".out")
    err.print(f"starting the local stack in the background (its output: {escape(str(output))})")
    return start_in_background(arguments, env_file, output), True


def _print_running_exports(
    template: Path, poll_seconds: float, speed: float, log: Path, env_file: Path
) -> None:
    """`up --env`: the export lines alone on stdout, of the `up` running or of one started now."""
    lines, _ = _running_or_started(template, poll_seconds, speed, log, env_file)
    variables = exported(lines)
    err.print(
        f"local stack at {variables.get('AWS_ENDPOINT_URL')}; "
        f"stop it with: shareplane down (or kill {variables.get(PID_VARIABLE)})",
        highlight=False,
    )
    print("\n".join(lines), flush=True)


def _start_detached(template: Path, poll_seconds: float, speed: float, log: Path, env_file: Path) -> None:
    """`up -d`: a stack in the background (unless one runs), where it is, how to use and stop it."""
    lines, started = _running_or_started(template, poll_seconds, speed, log, env_file)
    variables = exported(lines)
    state = "up" if started else "already running"
    print(
        f"local stack {state} at {variables.get('AWS_ENDPOINT_URL')} "
        f"(pid {variables.get(PID_VARIABLE)}, env file {env_file})\n"
        "use it: the commands run here or below find it by themselves; "
        'elsewhere, eval "$(shareplane up --env)"\n'
        "stop it: shareplane down",
        flush=True,
    )


@app.command("down")
def down_command(env_file: EnvFileOption = DEFAULT_ENV_FILE) -> None:
    """Stop the local stack `up` or `up -d` started (as Ctrl-C in its terminal would) and wait until it
    is gone; with none running, say so."""
    lines = running_exports(env_file)
    if lines is None:
        print(f"no local stack runs (none answers for {env_file})", flush=True)
        return
    variables = exported(lines)
    err.print(f"stopping the local stack at {variables.get('AWS_ENDPOINT_URL')}", highlight=False)
    stop_running(env_file, lines)
    print(f"local stack stopped (pid {variables.get(PID_VARIABLE)})", flush=True)


def _stack_config(stack: LocalStack) -> SharesConfig | None:
    """The shares config the stack's functions run with (the SSM parameter they read), for teams and tiers."""
    from shareplane.adapters.ssm_shares_config import PARAMETER_SETTING, read_shares_config

    for function in stack.functions:
        name = stack.function_environment(function).get(PARAMETER_SETTING)
        if name:
            return read_shares_config(stack.client("ssm"), name)
    return None


def _store(stack: LocalStack) -> DynamoJobStore:
    from shareplane.bootstrap import Root

    # The stack's own client (its endpoint), the table it created.
    return Root({}, dynamodb=stack.client("dynamodb"), table_name=stack.outputs["JobsTableName"]).store
