"""`shareplane up` and `shareplane replay`: the control plane on the embedded local stack and emulator."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from shareplane.service.queries import job_records

from ..local.emulator import DEFAULT_SPEED
from ..local.loop import StackLoop
from ..local.runner import FunctionRunner
from ..local.stack import DEFAULT_STACK, LocalStack, StackSpec
from ..main import app
from ..output import Output, stderr_console
from .jobs import print_jobs

TemplateOption = Annotated[Path, typer.Option(help="The SAM template the stack is built from.")]
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


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """One EventBridge event per line; blank lines are skipped, a bad line is named."""
    events = []
    try:
        text = path.read_text(encoding="utf-8")
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
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="Events, one JSON per line.")],
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
        print_jobs(job_records(store, config=_stack_config(stack)), output)
    finally:
        stack.stop()


@app.command("up")
def up_command(
    template: TemplateOption = Path("template.yaml"),
    poll_seconds: Annotated[float, typer.Option(help="How often the runner polls the queues.")] = 0.5,
    speed: Annotated[
        float, typer.Option(min=0.001, help="Emulated Batch + SageMaker: virtual seconds per wall second.")
    ] = DEFAULT_SPEED,
) -> None:
    """Run the local stack in the foreground; export the printed variables to use it."""
    stack = LocalStack(StackSpec(template, stack_name=DEFAULT_STACK), speed=speed).start()
    try:
        for key, value in {**stack.environment(), "SHAREPLANE_STACK": stack.spec.stack_name}.items():
            print(f"export {key}={value}", flush=True)
        err.print(
            f"[green]local stack up at {stack.endpoint}[/], Batch + SageMaker at "
            f"{stack.emulator.endpoint} ({speed:g}x) (Ctrl-C stops it)"
        )
        for logical, reason in (stack.emulated.skipped if stack.emulated else {}).items():
            err.print(f"[yellow]not emulated[/] {logical}: {reason}")
        runner = FunctionRunner(
            stack, on_invocation=lambda i: err.print(f"{i.function}: {i.records} records, {i.failed} failed")
        )
        loop = StackLoop(stack, runner, report=err.print)
        for logical, reason in loop.skipped.items():
            err.print(f"[yellow]schedule not run[/] {logical}: {reason}")
        while True:
            if not loop.step():
                time.sleep(poll_seconds)
    except KeyboardInterrupt:
        err.print("stopping")
    finally:
        stack.stop()


def _stack_config(stack: LocalStack) -> Any:
    """The shares config the stack's functions run with (their SHAREPLANE_CONFIG), for teams and tiers."""
    from shareplane.domain.config import SharesConfig

    for function in stack.functions:
        raw = stack.function_environment(function).get("SHAREPLANE_CONFIG")
        if raw:
            return SharesConfig.model_validate_json(raw)
    return None


def _store(stack: LocalStack) -> Any:
    from shareplane.adapters.dynamodb_store import DynamoJobStore

    return DynamoJobStore(stack.client("dynamodb"), stack.outputs["JobsTableName"])
