"""`shareplane submit`, `cancel` and `cleanup`: put jobs in the queues and take them out again."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from shareplane.domain.config.shares import SharesConfig
from shareplane.domain.errors import ShareplaneError
from shareplane.domain.forecast.prediction import StartPrediction, prediction_from_record
from shareplane.domain.jobs.lifecycle import JobState, JobStatus
from shareplane.service.queries import JobQuery, job_records
from shareplane.service.team_jobs import TeamJob, find_team_jobs

from ..aws import DEFAULT_TARGET, Target, account_options, endpoint_options
from ..config_file import DEFAULT_CONFIG, ConfigPath, load_config
from ..errors import CliError, ExitCode
from ..main import app
from ..output import (
    Output,
    OutputOption,
    emit,
    epoch_ms,
    print_json,
    print_table,
    stderr_console,
    stdout_console,
)
from ..submit import SubmitResult, submit_spec, wait_for_jobs
from .jobs import predicted_start

err = stderr_console()


def _config(path: Path) -> SharesConfig:
    try:
        return load_config(path)
    except ShareplaneError as exc:
        err.print(f"error: {exc}", markup=False, highlight=False)
        raise typer.Exit(2) from exc


def _print_answer(result: SubmitResult) -> None:
    console = stdout_console()
    if not result.uploaded:
        rows = [("(file)", p.path, p.message, p.fix) for p in result.local.problems]
        rows += [
            (f"{j.index}: {j.name or '?'}", p.path, p.message, p.fix)
            for j in result.local.jobs
            for p in j.problems
        ]
        print_table(
            "not uploaded: the spec fails the submit rules", ["job", "path", "problem", "fix"], rows, console
        )
        return
    origin = "--team" if result.team_from == "--team" else "the spec's team: field"
    console.print(f"submitted as team {result.local.team} (from {origin})", markup=False, highlight=False)
    if result.answer is None:
        console.print(f"uploaded s3://{result.bucket}/{result.key}; no answer yet", markup=False)
        return
    answer = result.answer
    jobs = [
        (
            j["index"],
            j["name"],
            j["queue"],
            j["share"],
            j["priority"],
            j["jobId"],
            _receipt_start(prediction_from_record(j.get("prediction"))),
        )
        for j in answer.get("jobs", [])
    ]
    if jobs:
        print_table(
            f"{answer['outcome']}: {answer['original']}",
            ["#", "job", "queue", "share", "tier", "job id", "predicted start"],
            jobs,
            console,
            whole=1,
        )
        why_none = (answer.get("prediction") or {}).get("notAtSubmission")
        if why_none:
            console.print(f"no predicted start yet: {why_none}", markup=False, highlight=False)
    problems = [(p["path"], p["message"], p["fix"]) for p in answer.get("problems", [])]
    if problems:
        print_table(f"refused ({answer['original']})", ["path", "problem", "fix"], problems, console)


def _warn(problem: str, fix: str) -> None:
    err.print(f"[yellow]warning:[/yellow] {escape(problem)}", highlight=False)
    err.print(f"  fix: {escape(fix)}", highlight=False)


@app.command("submit")
@account_options
def submit_command(
    spec: Annotated[
        Path,
        typer.Argument(
            exists=True, dir_okay=False, metavar="SPEC", help="The job spec (.yaml, .yml, .json)."
        ),
    ],
    team: Annotated[str | None, typer.Option(help="Submit as this team (default: the spec's team).")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Follow the jobs until they finish.")] = False,
    bucket: Annotated[str | None, typer.Option(help="Drop bucket (default: the stack's output).")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the receipt.")] = 120,
    wait_timeout: Annotated[float, typer.Option(help="Seconds to follow jobs with --wait.")] = 7 * 24 * 3600,
    config_path: ConfigPath = DEFAULT_CONFIG,
    output: OutputOption = Output.TABLE,
    target: Target = DEFAULT_TARGET,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Upload nothing: check SPEC and forecast when its jobs would start if submitted now.",
        ),
    ] = False,
    samples: Annotated[int, typer.Option(help="With --dry-run: forward runs of the live twin.")] = 100,
) -> None:
    """Validate SPEC, drop it in the stack's bucket, print the receipt or the error report.

    Exit 0 when every job was submitted (and, with --wait, succeeded), 1 otherwise, 3 on a timeout.
    With --dry-run nothing is uploaded or submitted: exit 0 with the forecast, 1 if SPEC fails a rule.
    """
    config = _config(config_path)
    if dry_run:
        from ..dry_run import dry_run_spec, print_dry_run

        report = dry_run_spec(spec, config, target, team=team, samples=samples)
        emit(report, output, lambda: print_dry_run(report))
        raise typer.Exit(0 if report["ok"] else 1)
    result = submit_spec(
        spec, team=team, bucket=bucket, config=config, target=target, timeout=timeout, warn=_warn
    )
    if result.answer is not None and wait and result.job_arns:
        store = target.job_store()

        def changed(arn: str, state: JobState) -> None:
            if output is Output.TABLE:
                err.print(f"{state.job_name or arn}: {state.status.value}", markup=False, highlight=False)

        finals = wait_for_jobs(store.load_job, result.job_arns, wait_timeout, on_change=changed)
        result = SubmitResult(**{**result.__dict__, "final_states": finals})
    emit(result.as_dict(), output, lambda: _print_answer(result))
    if result.outcome == "pending":
        raise typer.Exit(3)
    ok = result.outcome == "accepted"
    if wait and result.job_arns:
        states = [result.final_states.get(arn) for arn in result.job_arns]
        if not all(s is not None and s.status.is_final for s in states):
            raise typer.Exit(3)
        ok = ok and all(s is not None and s.status.value == "SUCCEEDED" for s in states)
    raise typer.Exit(0 if ok else 1)


def jobs_to_cancel(target: Target, job: str, all_matching: bool) -> list[JobState]:
    """The queued and running jobs of that name, id or ARN, matched as `jobs` and `why` match them.

    A name of several such jobs is refused (BAD_INPUT, each listed) unless ``all_matching``. Empty when
    the table has no such job: the caller passes ``job`` to Batch as an id, which names an unknown one.
    """
    store = target.job_store()
    # Only the queued and running jobs, each status by its index: never a scan of the whole table.
    active = [state for status in JobStatus if not status.is_final for state in store.jobs(status.value)]
    matches = [record.state for record in job_records(store, JobQuery(job=job), states=active)]
    if len(matches) > 1 and not all_matching:
        listed = "; ".join(
            f"{state.job_id or state.job_arn} ({state.status.value}, created {epoch_ms(state.created_at)})"
            for state in sorted(matches, key=lambda state: state.created_at or 0)
        )
        raise CliError(
            f"{job!r} names {len(matches)} queued or running jobs: {listed}",
            "pass the id or ARN of the one to cancel, or --all-matching to cancel them all",
            ExitCode.BAD_INPUT,
        )
    return matches


@app.command("cancel")
@account_options
def cancel_command(
    job: Annotated[str, typer.Argument(metavar="JOB", help="The job's name, id or ARN.")],
    reason: Annotated[
        str, typer.Option(help="Why (kept on the job as its statusReason).")
    ] = "cancelled with shareplane",
    all_matching: Annotated[
        bool,
        typer.Option("--all-matching", help="When JOB names several queued or running jobs, cancel all."),
    ] = False,
    target: Target = DEFAULT_TARGET,
) -> None:
    """Terminate the job JOB names (TerminateServiceJob); terminated jobs are not retried.

    JOB is a name, an id or an ARN, as for `jobs` and `why`. An ARN goes to Batch as it is; a name or
    an id is looked up in the jobs table among the queued and running jobs. A name of several of them
    is refused, each listed, unless --all-matching.
    """
    found = [] if job.startswith("arn:") else jobs_to_cancel(target, job, all_matching)
    batch = target.root().batch_jobs
    console = stdout_console()
    if not found:  # an ARN, or an id the table does not hold as queued or running: Batch decides
        batch.terminate(job, reason)
        console.print(f"terminated {job}", markup=False, highlight=False)
    for state in found:
        job_id = state.job_id or state.job_arn
        batch.terminate(job_id, reason)
        console.print(f"terminated {job_id} ({state.job_name or '-'})", markup=False, highlight=False)


def team_job_record(found: TeamJob) -> dict[str, str | None]:
    """One job cleanup found, as ``--output json`` lists it."""
    job = found.job
    return {
        "team": found.team,
        "queue": found.queue,
        "jobId": job.job_id,
        "jobName": job.job_name,
        "status": job.status,
    }


@app.command("cleanup")
@endpoint_options
def cleanup_command(
    team: Annotated[str | None, typer.Option(help="Only this team's jobs (default: every team).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be terminated.")] = False,
    reason: Annotated[str, typer.Option(help="statusReason for the terminated jobs.")] = "shareplane cleanup",
    config_path: ConfigPath = DEFAULT_CONFIG,
    output: OutputOption = Output.TABLE,
    target: Target = DEFAULT_TARGET,
) -> None:
    """Terminate a team's queued and running jobs (TerminateServiceJobs, 50 per call)."""
    config = _config(config_path)
    if team is not None and team not in config.teams:
        err.print(f"error: team {team!r} is not in the shares config; use one of {sorted(config.teams)}")
        raise typer.Exit(2)
    batch = target.root().batch_jobs
    found = find_team_jobs(batch, config, [team] if team else sorted(config.teams))
    report: dict[str, Any] = {
        "dryRun": dry_run,
        "jobs": [team_job_record(f) for f in found],
        "terminated": [],
        "errors": [],
    }
    if found and not dry_run:
        result = batch.terminate_many([f.job.job_id for f in found], reason)
        report["terminated"], report["errors"] = list(result.successful), [dict(e) for e in result.errors]

    def table() -> None:
        verb = "would terminate" if dry_run else "terminated"
        rows = [(f.team, f.queue, f.job.job_name, f.job.status, f.job.job_id) for f in found]
        print_table(f"{verb} {len(found)} job(s)", ["team", "queue", "job", "status", "job id"], rows)
        for error in report["errors"]:
            err.print(f"{error.get('job')}: {error.get('code')} {error.get('message')}", markup=False)

    if output is Output.JSON:
        print_json(report)
    else:
        table()
    raise typer.Exit(1 if report["errors"] else 0)


def _receipt_start(prediction: StartPrediction | None) -> str:
    """A receipt's predicted start, counted from when it was predicted (the job's submission)."""
    if prediction is None:
        return "-"
    return predicted_start(prediction, prediction.predicted_at / 1000) or "-"
