"""`shareplane why JOB`: where a waiting job stands, what holds it back, and when it will start."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from shareplane.domain.explain.record import JobRecord
from shareplane.domain.explain.wait import forecast_position, position_in_snapshot

from ..aws import DEFAULT_TARGET, Target, account_options
from ..config_file import load_config
from ..errors import CliError, ExitCode
from ..main import app
from ..output import Output, OutputOption, emit, print_table
from ..twin import Twin, forecast_json, load_twin, when

SNAPSHOT_LIMIT = 100


def find_record(twin: Twin, job: str) -> JobRecord:
    """The record of ``job`` (name, id or ARN) in the GPU queue; a clear error when there is none."""
    matches = [r for r in twin.records if job in (r.state.job_name, r.state.job_id, r.job_arn)]
    if not matches:
        raise CliError(
            f"{job!r}: no job of queue {twin.queue} has that name, id or ARN",
            "list the jobs with `shareplane jobs` and pass one's name, id or ARN",
            ExitCode.NOT_FOUND,
        )
    # A name can repeat (the same spec dropped twice): the newest one is the one asked about.
    return max(matches, key=lambda r: r.state.created_at or 0)


def why_report(twin: Twin, record: JobRecord, samples: int) -> dict[str, Any]:
    """The answer for one job as JSON: position, reasons, ways to start sooner, forecast."""
    name = record.name
    base: dict[str, Any] = {
        "job": name,
        "jobArn": record.job_arn,
        "status": record.state.status.value,
        "queue": twin.queue,
    }
    created = record.created_s or 0.0
    if not any(j.name == name for j in twin.live.queued):
        started = record.first_start
        base["waiting"] = False
        base["startedAt"] = when(started)
        base["waitedSeconds"] = None if started is None else round(started - created)
        return base
    return base | {"waiting": True, **_waiting_report(twin, record, samples)}


def _waiting_report(twin: Twin, record: JobRecord, samples: int) -> dict[str, Any]:
    """A waiting job's part of the answer: its place, the reasons, ways sooner and the forecast."""
    name = record.name
    position, earliest, listed = position_in_snapshot(twin.snapshot, record.job_arn)
    twin_position = forecast_position(twin.live, name)
    if position is not None:
        place = {
            "source": "GetJobQueueSnapshot",
            "frontOfQueue": position + 1,
            "earliestTimeAtPosition": when(earliest),
        }
    else:
        place = {
            "source": "twin",
            "frontOfQueue": None,
            "earliestTimeAtPosition": None,
            "note": (
                f"Batch lists the first {listed} RUNNABLE jobs (at most {SNAPSHOT_LIMIT}) and this job is "
                "not among them: its place is the twin's ranking of the jobs table's waiting jobs, "
                "and the reasons and forecast below come from the twin, not from Batch's order"
            ),
        }
    place |= {"twinPosition": twin_position + 1, "waiting": len(twin.live.queued), "listedByBatch": listed}
    explanation = twin.explain(record)
    forecast = twin.forecast({name}, samples=samples)[name]
    created = record.created_s or 0.0
    return {
        "share": explanation.share,
        "instances": explanation.instances,
        "freeInstances": explanation.free,
        "position": place,
        "heldBackBy": [{"code": f.code, "text": f.text} for f in explanation.held_back_by],
        "startSooner": [{"code": f.code, "text": f.text} for f in explanation.sooner],
        "forecast": forecast_json(forecast, created),
        "waitedSoFarSeconds": round(twin.now - created),
    }


def print_why(report: Mapping[str, Any]) -> None:
    """The answer in words."""
    console = Console()

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False)

    if not report.get("waiting"):
        waited = report.get("waitedSeconds")
        started = report.get("startedAt")
        say(
            f"{report['job']} is {report['status']}, not waiting"
            + (f": it started at {started} after waiting {waited} s." if started else ".")
        )
        return
    place = report["position"]
    if place["frontOfQueue"] is not None:
        say(
            f"{report['job']} is number {place['frontOfQueue']} at the front of {report['queue']} "
            f"(Batch's GetJobQueueSnapshot; there since {place['earliestTimeAtPosition']})."
        )
    else:
        say(
            f"{report['job']} is not in the first {place['listedByBatch']} jobs Batch lists; the twin ranks "
            f"it {place['twinPosition']} of {place['waiting']} waiting."
        )
    say(
        f"It asks for {report['instances']} instance(s) in share {report['share']}; "
        f"{report['freeInstances']} free now; waiting {report['waitedSoFarSeconds']} s so far."
    )
    rows = [("held back", f["text"]) for f in report["heldBackBy"]]
    rows += [("start sooner", f["text"]) for f in report["startSooner"]]
    print_table("why it waits", ["", "finding"], rows, console)
    f = report["forecast"]
    if f["startP50"] is None:
        say(
            f"Predicted start: not within the forecast's horizon in most runs "
            f"({f['startedFraction']:.0%} of {f['samples']} started it)."
        )
    else:
        say(
            f"Predicted start: p10 {f['startP10']}, p50 {f['startP50']}, p90 {f['startP90'] or 'later'} "
            f"(waits {f['waitSecondsP10']} / {f['waitSecondsP50']} / {f['waitSecondsP90']} s from "
            "submission; "
            f"{f['samples']} runs of the live twin)."
        )


@app.command("why")
@account_options
def why_command(
    job: Annotated[str, typer.Argument(help="The job's name, id or ARN.")],
    samples: Annotated[int, typer.Option(help="Forward runs of the twin (the forecast's range).")] = 100,
    config_path: Annotated[Path, typer.Option("--config", help="The shares config.")] = Path(
        "config/shares.yaml"
    ),
    output: OutputOption = Output.TABLE,
    target: Target = DEFAULT_TARGET,
    queue: Annotated[str | None, typer.Option(help="GPU job queue (default: the config's).")] = None,
) -> None:
    """Why JOB waits: its place in the queue, what holds it back, what would help, its predicted start."""
    if not 1 <= samples <= 10000:
        raise CliError(
            f"--samples {samples} is outside 1..10000", "pass e.g. --samples 100", ExitCode.BAD_INPUT
        )
    config = load_config(config_path)
    twin = load_twin(target, config, queue=queue)
    report = why_report(twin, find_record(twin, job), samples)
    emit(report, output, lambda: print_why(report))
