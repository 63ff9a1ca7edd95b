"""`shareplane why JOB`: where a waiting job stands, what holds it back, and when it will start."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from shareplane.domain.explain.durations import duration_text, start_text
from shareplane.domain.explain.record import JobRecord
from shareplane.domain.explain.wait import WaitExplanation, forecast_position, position_in_snapshot
from shareplane.domain.forecast.start_forecast import StartForecast

from ..aws import DEFAULT_TARGET, Target, account_options
from ..config_file import DEFAULT_CONFIG, config_option, load_config
from ..errors import CliError, ExitCode
from ..main import app
from ..output import Output, OutputOption, emit, print_table, stdout_console
from ..twin import Freshness, Twin, findings_json, forecast_json, load_twin, when

SNAPSHOT_LIMIT = 100


def find_record(twin: Twin, job: str) -> JobRecord:
    """The record of ``job`` (name, id or ARN) in the GPU queue; a clear error when there is none."""
    matches = twin.records_named(job)
    if not matches:
        raise CliError(
            f"{job!r}: no job of queue {twin.queue} has that name, id or ARN",
            "list the jobs with `shareplane jobs` and pass one's name, id or ARN",
            ExitCode.NOT_FOUND,
        )
    # A name can repeat (the same spec dropped twice): the newest one is the one asked about.
    return max(matches, key=lambda r: r.state.created_at or 0)


@dataclass(frozen=True)
class QueuePlace:
    """Where a waiting job stands: Batch's place when GetJobQueueSnapshot lists it, and the twin's."""

    #: 0-based place in GetJobQueueSnapshot's list (None: past the jobs Batch lists).
    batch_position: int | None
    #: earliestTimeAtPosition (epoch s) when Batch lists the job.
    at_position_since: float | None
    #: How many jobs Batch listed (at most ``SNAPSHOT_LIMIT``).
    listed: int
    #: 0-based place in the twin's dispatch order.
    twin_position: int
    #: How many jobs wait in the twin.
    waiting: int


@dataclass(frozen=True)
class WaitingAnswer:
    """A waiting job's part of the answer: its place, the reasons, ways sooner and the forecast."""

    place: QueuePlace
    explanation: WaitExplanation
    forecast: StartForecast
    #: Seconds since submission, as of the twin's now.
    waited_so_far: float


@dataclass(frozen=True)
class WhyReport:
    """The answer for one job of the twin's queue (``waiting`` None: it does not wait)."""

    record: JobRecord
    queue: str
    waiting: WaitingAnswer | None
    #: How fresh the twin's inputs are (None: a twin built by hand).
    freshness: Freshness | None = None


def why_report(twin: Twin, record: JobRecord, samples: int) -> WhyReport:
    """The answer for one job: its place, reasons, ways to start sooner and forecast when it waits."""
    name = record.name
    if not any(j.name == name for j in twin.live.queued):
        return WhyReport(record, twin.queue, None, twin.freshness)
    position, earliest, listed = position_in_snapshot(twin.snapshot, record.job_arn)
    place = QueuePlace(position, earliest, listed, forecast_position(twin.live, name), len(twin.live.queued))
    forecast = twin.forecast({name}, samples=samples)[name]
    waited = twin.now - (record.created_s or 0.0)
    answer = WaitingAnswer(place, twin.explain(record), forecast, waited)
    return WhyReport(record, twin.queue, answer, twin.freshness)


def why_json(report: WhyReport) -> dict[str, Any]:
    """The answer as JSON (`why -o json`)."""
    record = report.record
    base: dict[str, Any] = {
        "job": record.name,
        "jobArn": record.job_arn,
        "status": record.state.status.value,
        "queue": report.queue,
    }
    if report.freshness is not None:
        base["inputs"] = report.freshness.as_json()
    created = record.created_s or 0.0
    answer = report.waiting
    if answer is None:
        started = record.first_start
        waited = None if started is None else round(started - created)
        return base | {"waiting": False, "startedAt": when(started), "waitedSeconds": waited}
    explanation = answer.explanation
    return base | {
        "waiting": True,
        "share": explanation.share,
        "instances": explanation.instances,
        "freeInstances": explanation.free,
        "position": _place_json(answer.place),
        "heldBackBy": findings_json(explanation.held_back_by),
        "startSooner": findings_json(explanation.sooner),
        "forecast": forecast_json(answer.forecast, created),
        "waitedSoFarSeconds": round(answer.waited_so_far),
    }


def _place_json(place: QueuePlace) -> dict[str, Any]:
    if place.batch_position is not None:
        batch: dict[str, Any] = {
            "source": "GetJobQueueSnapshot",
            "frontOfQueue": place.batch_position + 1,
            "earliestTimeAtPosition": when(place.at_position_since),
        }
    else:
        batch = {
            "source": "twin",
            "frontOfQueue": None,
            "earliestTimeAtPosition": None,
            "note": (
                f"Batch lists the first {place.listed} RUNNABLE jobs (at most {SNAPSHOT_LIMIT}) and this job "
                "is not among them: its place is the twin's ranking of the jobs table's waiting jobs, "
                "and the reasons and forecast below come from the twin, not from Batch's order"
            ),
        }
    return batch | {
        "twinPosition": place.twin_position + 1,
        "waiting": place.waiting,
        "listedByBatch": place.listed,
    }


def print_why(report: WhyReport) -> None:
    """The answer in words."""
    console = stdout_console()

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False)

    record, answer = report.record, report.waiting
    if answer is None:
        started, status = record.first_start, record.state.status.value
        if started is None:
            say(f"{record.name} is {status}, not waiting.")
        else:
            waited = duration_text(started - (record.created_s or 0.0))
            say(f"{record.name} is {status}, not waiting: it started at {when(started)} after {waited}.")
    else:
        _print_waiting(record, report.queue, answer, console)
    if report.freshness is not None:
        say(report.freshness.text())


def _print_waiting(record: JobRecord, queue: str, answer: WaitingAnswer, console: Console) -> None:
    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False)

    place, explanation = answer.place, answer.explanation
    if place.batch_position is not None:
        say(
            f"{record.name} is number {place.batch_position + 1} at the front of {queue} "
            f"(Batch's GetJobQueueSnapshot; there since {when(place.at_position_since)})."
        )
    else:
        say(
            f"{record.name} is not in the first {place.listed} jobs Batch lists; the twin ranks "
            f"it {place.twin_position + 1} of {place.waiting} waiting."
        )
    say(
        f"It asks for {explanation.instances} instance(s) in share {explanation.share}; "
        f"{explanation.free} free now; waiting {duration_text(answer.waited_so_far)} so far."
    )
    rows = [("held back", f.text) for f in explanation.held_back_by]
    rows += [("start sooner", f.text) for f in explanation.sooner]
    print_table("why it waits", ["", "finding"], rows, console)
    say(_forecast_text(answer.forecast, (record.created_s or 0.0) + answer.waited_so_far))


def _forecast_text(forecast: StartForecast, now: float) -> str:
    """The forecast from ``now`` (epoch s), and the moment its median names."""
    if forecast.median is None:
        return (
            f"Predicted start: not within the forecast's horizon in most runs "
            f"({forecast.started_fraction:.0%} of {forecast.samples} started it)."
        )

    def ahead(at: float | None) -> float | None:
        return None if at is None else at - now

    starts = start_text(ahead(forecast.low), ahead(forecast.median), ahead(forecast.high))
    runs = f"{forecast.samples} runs of the live twin"
    return f"Predicted start: {starts}, around {when(forecast.median)} ({runs})."


@app.command("why")
@account_options
def why_command(
    job: Annotated[str, typer.Argument(metavar="JOB", help="The job's name, id or ARN.")],
    samples: Annotated[int, typer.Option(help="Forward runs of the twin (the forecast's range).")] = 100,
    config_path: Annotated[Path, config_option("The shares config.")] = DEFAULT_CONFIG,
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
    emit(why_json(report), output, lambda: print_why(report))
