"""`shareplane jobs`: every job the control plane recorded, from the local stack or a real account."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from shareplane.domain.config.shares import SharesConfig, Tier
from shareplane.domain.cost.billing import AttemptCost, running_cost
from shareplane.domain.explain.record import JobRecord, history_label, recorded_now
from shareplane.domain.explain.record_json import listed_json, record_json, story_json
from shareplane.domain.explain.story import (
    JobStory,
    JobWait,
    PredictionCheck,
    job_story,
    job_wait,
    observed_now,
)
from shareplane.domain.forecast.prediction import StartPrediction
from shareplane.domain.jobs.arns import job_id_of
from shareplane.domain.jobs.lifecycle import JobStatus
from shareplane.service.queries import job_records
from shareplane.service.spend import owner_of

from ..aws import DEFAULT_STACK, Endpoint, Profile, Region, StackName, TableName, Target
from ..config_file import load_config
from ..errors import CliError, ExitCode
from ..main import app
from ..output import Output, emit, epoch_ms, print_json, print_table
from .idle import idle_periods, idle_periods_line

OutputOption = Annotated[Output, typer.Option("--output", "-o", help="json or table.")]
#: The job table's columns, one row per job.
JOB_COLUMNS = [
    "job",
    "status",
    "team",
    "tier",
    "share",
    "prio",
    "att",
    "pre",
    "cap",
    "created",
    "wait",
    "stopped",
    "predicted start",
    "history",
    "reason",
]


def print_jobs(
    records: Sequence[JobRecord], output: Output, now: float | None = None, *, beside: bool = False
) -> None:
    """Job records as JSON, or as a table with one row per job (waits of waiting jobs as of ``now``).

    Each JSON record gains its ``wait`` (``listed_json``, as one job's story gives it); the table's wait
    column is that wait's text, so the two views cannot disagree. ``beside``: the records' uploader
    and stored prediction were read (``job_records`` with ``payloads`` and ``predictions``), so the
    JSON shows them.
    """
    at = observed_now(records, time.time()) if now is None else now
    waits = [job_wait(r, at) for r in records]

    def table() -> None:
        rows = [_job_row(r, wait) for r, wait in zip(records, waits, strict=True)]
        print_table(f"{len(records)} jobs", JOB_COLUMNS, rows)

    listed = [listed_json(r, w, beside=beside) for r, w in zip(records, waits, strict=True)]
    emit(listed, output, table)


def _job_row(record: JobRecord, wait: JobWait) -> tuple[Any, ...]:
    """One job's row of the table (``JOB_COLUMNS``)."""
    state, training = record.state, record.training
    reason = (training.failure_reason if training else None) or state.status_reason or ""
    return (
        state.job_name,
        state.status.value,
        record.team,
        record.tier.value if record.tier else None,
        state.share,
        state.scheduling_priority,
        state.attempts,
        state.preemptions,
        state.capacity_requeues,
        epoch_ms(state.created_at),
        wait.text(),
        epoch_ms(state.stopped_at),
        predicted_start(record.prediction),
        " > ".join(history_label(h) for h in record.history),
        reason[:60],
    )


def predicted_start(prediction: StartPrediction | None) -> str | None:
    """The stored start prediction in one cell: p50, then the p10-p90 range (None: never predicted)."""
    if prediction is None:
        return None
    if prediction.p50 is None:
        return f"beyond horizon ({prediction.started_fraction:.0%} started)"
    p90 = epoch_ms(prediction.p90) or "later"
    return f"{epoch_ms(prediction.p50)} ({epoch_ms(prediction.p10)} - {p90})"


def uploader_line(uploader: Mapping[str, Any] | None) -> str:
    """Who dropped the job's spec, in one line: the principal, else the account and why no principal."""
    if not uploader:
        return "- (not submitted from a drop)"
    principal = uploader.get("principal")
    if principal:
        check = {
            "submitter": "one of the team's submitters",
            "not_a_submitter": "NOT one of the team's submitters (the team was alerted)",
            "team_has_no_submitters": "the team lists no submitters",
        }.get(principal.get("check"), principal.get("check") or "")
        return f"{principal.get('arn')} ({check})"
    return (
        f"account {uploader.get('account') or '?'}; principal not recorded yet (CloudTrail's event for "
        f"request {uploader.get('requestId') or '?'} has not arrived, or no trail logs the drop bucket)"
    )


def _ms(value: float | None) -> str | None:
    return epoch_ms(int(value)) if value is not None else None


def print_job_story(story: JobStory, idle: list[dict[str, Any]], console: Console | None = None) -> None:
    """One job's whole story for people: who, where, the wait, the timeline by source, what happened
    (``idle``: its idle periods, ``idle_periods``)."""
    console = console or Console()
    name = story.record.state.job_name
    print_table(name or story.record.job_arn, ["field", "value"], _story_fields(story, idle), console)
    print_table(
        "timeline (source:state)",
        ["at", "state", "reason"],
        [(_ms(e.at), e.label, (e.reason or "")[:100]) for e in story.timeline],
        console,
    )
    _print_story_sections(story, console)


def _story_fields(story: JobStory, idle: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """The story's field table: who, where, the wait, the prediction, the attempts, the cost, why."""
    record = story.record
    state, training = record.state, record.training
    submission = story.submission
    source = submission.source if submission else {}
    spec = f"s3://{source.get('bucket')}/{source.get('key')}" if source.get("key") else None
    return [
        ("job", state.job_name),
        ("arn", state.job_arn),
        ("status", state.status.value),
        ("team / tier", f"{record.team or '-'} / {record.tier.value if record.tier else '-'}"),
        ("queue", state.job_queue),
        ("share", story.placement.now.share),
        ("priority", _priority_text(story)),
        ("instances", f"{record.instance_count or '-'} x {record.instance_type or '-'}"),
        ("spec", spec or "- (not submitted from a drop)"),
        ("uploaded by", uploader_line(story.uploader)),
        ("created", epoch_ms(state.created_at)),
        ("wait", _wait_text(story.wait)),
        ("prediction", _prediction_text(story.prediction) if story.prediction else "- (none stored)"),
        ("stopped", epoch_ms(state.stopped_at)),
        (
            "attempts",
            f"{state.attempts} attempt(s) ended, {state.preemptions} preemption(s), "
            f"{state.capacity_requeues} capacity requeue(s)",
        ),
        ("cost", _cost_text(story)),
        ("reason", (training.failure_reason if training else None) or state.status_reason),
        ("idle periods", idle_periods_line(idle)),
    ]


def _priority_text(story: JobStory) -> Any:
    """The priority now, and the one it was submitted with (and its tier) when they differ."""
    now = story.placement.now.scheduling_priority
    submitted = story.placement.as_submitted
    if submitted is None or submitted.scheduling_priority in (None, now):
        return now
    tier = submitted.tier.value if submitted.tier else "no tier"
    return f"{now} (submitted with {submitted.scheduling_priority}, {tier})"


def _wait_text(wait: JobWait) -> str:
    if not wait.ended:
        return wait.text()
    first = None if wait.first_dispatch is None else round(wait.first_dispatch * 1000)
    return f"{wait.text()} (submission to first dispatch, SCHEDULED at {_ms(first)})"


def _cost_text(story: JobStory) -> str:
    cost = story.cost
    if not cost.attempts:
        return "- (no attempt costed yet)"
    running = ", the running one estimated so far)" if cost.estimated else ")"
    return (
        f"{cost.usd} USD, {cost.billable_instance_hours} billable instance-hours "
        f"({len(cost.attempts)} attempt(s) costed{running}"
    )


def _print_story_sections(story: JobStory, console: Console) -> None:
    """The story's lists, each only when it has a line: changes, interruptions, decisions, alerts."""
    sections: list[tuple[str, list[str], list[tuple[int, tuple[str | None, ...]]]]] = [
        (
            "changes",
            ["at", "change", "reason"],
            [(e.at, (history_label(e), e.reason)) for e in story.placement.changes],
        ),
        (
            "preemptions, reclaims and requeues",
            ["at", "what", "reason"],
            [(e.at, (history_label(e), e.reason)) for e in story.interruptions],
        ),
        (
            "failure decisions",
            ["at", "class", "rule", "action", "reason"],
            [(e.at, (e.failure_class, e.rule, e.action, e.reason)) for e in story.decisions],
        ),
    ]
    for title, columns, lines in sections:
        if lines:
            rows = [(_ms(at), *((cell or "")[:100] for cell in cells)) for at, cells in lines]
            print_table(title, columns, rows, console)
    if story.alerts:
        print_table(
            "alerts sent",
            ["sent", "severity", "kind", "subject"],
            [(_ms(a.sent_at * 1000), a.severity, a.kind, a.subject) for a in story.alerts],
            console,
        )


def _prediction_text(check: PredictionCheck) -> str:
    waits = " / ".join("-" if wait is None else f"{wait} s" for wait in check.waits)
    text = (
        f"p50 {_ms(check.prediction.p50) or 'not within the horizon'} "
        f"(waits p10/p50/p90 {waits}; predicted at {_ms(check.prediction.predicted_at)})"
    )
    off = check.actual_minus_p50
    return text if off is None else f"{text}; started {off:+d} s from its p50"


def story_of(
    target: Target, table: str | None, record: JobRecord, now: float, config: SharesConfig | None = None
) -> JobStory:
    """The record's whole story: its training jobs' SageMaker events, costs, alerts and submission
    (``now``, epoch s, dates the wait of a job still waiting)."""
    root = target.root(table_name=table or target.output("JobsTableName"))
    store = root.store
    state = store.load_job(record.job_arn)
    arns = list(state.training_job_arns) if state is not None else []
    latest = record.state.latest_training_job_arn
    if latest and latest not in arns:
        arns.append(latest)
    costs: list[AttemptCost] = []
    for arn in arns:
        cost = store.training_cost(arn)
        if cost is None and config is not None and (training := store.load_training_job(arn)) is not None:
            # An attempt still training: the estimate `shareplane usage` gives it (source "running").
            cost = running_cost(training, owner_of(state, store, config), int(now * 1000), config)
        if cost is not None:
            costs.append(cost)
    created = record.created_s or 0.0
    alerts = [a for a in root.alert_ledger.alerts(created - 1) if a.job == record.job_arn]
    return job_story(
        record,
        training={arn: store.training_history(arn) for arn in arns},
        alerts=alerts,
        costs=costs,
        submission=store.load_payload(record.job_arn),
        now=now,
        config=config,
    )


@app.command("jobs")
def jobs_command(
    job_argument: Annotated[
        str | None,
        typer.Argument(
            metavar="JOB",
            help="One job's whole story (its name, id or ARN): timeline by source, wait, attempts, "
            "decisions, alerts, cost, prediction.",
        ),
    ] = None,
    status: Annotated[JobStatus | None, typer.Option(help="Only jobs in this status.")] = None,
    share: Annotated[
        str | None, typer.Option(help="Only jobs of this share identifier or quota share.")
    ] = None,
    team: Annotated[
        str | None, typer.Option(help="Only this team's jobs (all its share identifiers).")
    ] = None,
    tier: Annotated[Tier | None, typer.Option(help="Only jobs of this tier.")] = None,
    config_path: Annotated[
        Path, typer.Option("--config", help="The shares config: maps share identifiers to teams and tiers.")
    ] = Path("config/shares.yaml"),
    job: Annotated[
        str | None,
        typer.Option("--job", help="The same as JOB: one job's story (its name, id or ARN)."),
    ] = None,
    output: OutputOption = Output.TABLE,
    profile: Profile = None,
    region: Region = None,
    endpoint: Endpoint = None,
    stack_name: StackName = DEFAULT_STACK,
    table: TableName = None,
) -> None:
    """List jobs with their team, tier, state, wait, counters and history, or tell one JOB's whole story."""
    if job_argument and job and job_argument != job:
        raise CliError(
            f"JOB {job_argument!r} and --job {job!r} name different jobs",
            "name one job, as JOB or as --job",
            ExitCode.BAD_INPUT,
        )
    wanted = job_argument or job
    config = _config_for(config_path, needed=bool(team or tier))
    target = Target(profile=profile, region=region, endpoint=endpoint, stack_name=stack_name)
    store = target.job_store(table)
    states = store.jobs(status.value if status else None)
    records = job_records(
        store,
        status.value if status else None,
        share,
        config=config,
        team=team,
        tier=tier.value if tier else None,
        payloads=store,
        predictions=store,  # each record's ``prediction``: the newest watch tick's
        job=wanted,  # one job's story reads only that job's rows
        states=states,
    )
    if wanted is None:
        print_jobs(records, output, beside=True)
        return
    if not records:
        raise CliError(
            f"{'--job ' if job else ''}{wanted!r}: no recorded job has that name, id or ARN",
            "list the jobs with `shareplane jobs` and pass one's name, id or ARN",
            ExitCode.NOT_FOUND,
        )
    # The whole table's newest time dates a waiting job's wait (the local stack's clock may run ahead).
    now = max(recorded_now(time.time(), states), observed_now(records, time.time()))
    # A name can match several jobs (the same spec dropped twice): each one's story, oldest first.
    print_stories(target, table, records, now, config, output)


def print_stories(
    target: Target,
    table: str | None,
    records: Sequence[JobRecord],
    now: float,
    config: SharesConfig | None,
    output: Output,
) -> None:
    """Each record's whole story with its idle periods, oldest first: one JSON array, or for people."""
    ledger = target.root(table_name=table or target.output("JobsTableName")).idle_ledger
    stories = [
        (
            story_of(target, table, record, now, config),
            idle_periods(ledger.decisions(job_id_of(record.job_arn))),
        )
        for record in sorted(records, key=lambda r: r.state.created_at or 0)
    ]
    if output is Output.JSON:
        print_json(
            [story_json(story) | {"idlePeriods": idle} for story, idle in stories]
        )  # one array, always
        return
    for story, idle in stories:
        print_job_story(story, idle)


def _config_for(path: Path, *, needed: bool) -> SharesConfig | None:
    """The shares config if there is one; without it jobs show no team or tier (unless asked to filter)."""
    if not needed and not path.exists():
        return None
    return load_config(path)  # a ConfigError takes the CLI's error path (exit 2)


@app.command("export")
def export_command(
    out: Annotated[Path, typer.Option("--out", help="Where to write the records, one JSON per line.")] = Path(
        "jobs.jsonl"
    ),
    profile: Profile = None,
    region: Region = None,
    endpoint: Endpoint = None,
    stack_name: StackName = DEFAULT_STACK,
    table: TableName = None,
) -> None:
    """Write every job record as JSON lines: the history `shareplane simulate --trace` replays."""
    target = Target(profile=profile, region=region, endpoint=endpoint, stack_name=stack_name)
    records = job_records(target.job_store(table))
    with out.open("w") as handle:
        for record in records:
            handle.write(json.dumps(record_json(record), separators=(",", ":")) + "\n")
    print(f"{len(records)} jobs written to {out}")
