"""`shareplane jobs`: every job the control plane recorded, from the local stack or a real account."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from shareplane.bootstrap import Root
from shareplane.domain.config.shares import SharesConfig, Tier
from shareplane.domain.cost.billing import AttemptCost, running_cost
from shareplane.domain.explain.durations import duration_text, start_text
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
from shareplane.domain.explain.wait import WAITING
from shareplane.domain.forecast.prediction import StartPrediction
from shareplane.domain.jobs.arns import job_id_of
from shareplane.domain.jobs.lifecycle import JobState, JobStatus
from shareplane.service.queries import JobQuery, job_records
from shareplane.service.spend import owner_of

from ..aws import DEFAULT_TARGET, Target, account_options
from ..config_file import DEFAULT_CONFIG, config_option, load_config
from ..errors import CliError, ExitCode
from ..filters import chosen, listed
from ..main import app
from ..output import ListOutput, Output, epoch_ms, print_csv, print_json, print_table, stdout_console
from ..time_options import since_ms
from .idle import idle_periods, idle_periods_line


@dataclass(frozen=True)
class ListedJob:
    """One line of the listing: a job's record, its wait, and the time the list is dated by (epoch s)."""

    record: JobRecord
    wait: JobWait
    now: float

    @property
    def state(self) -> JobState:
        return self.record.state


@dataclass(frozen=True)
class JobColumn:
    """A column of the listing: its cell, what ``--sort`` orders it by, and whether only ``wide`` has it."""

    cell: Callable[[ListedJob], object]
    #: The value ``--sort`` compares (default: the cell); None values sort last.
    order: Callable[[ListedJob], Any] | None = None
    wide: bool = False


def _age(job: ListedJob) -> float | None:
    created = job.record.created_s
    return None if created is None else job.now - created


def _reason(job: ListedJob) -> str:
    training = job.record.training
    return (training.failure_reason if training else None) or job.state.status_reason or ""


#: Every column, in the order a listing shows them; ``-o table`` shows those not ``wide``.
JOB_COLUMNS: dict[str, JobColumn] = {
    "job": JobColumn(lambda j: j.state.job_name),
    "status": JobColumn(
        lambda j: j.state.status.value, order=lambda j: list(JobStatus).index(j.state.status)
    ),
    "team": JobColumn(lambda j: j.record.team),
    "tier": JobColumn(lambda j: j.record.tier.value if j.record.tier else None),
    "wait": JobColumn(lambda j: j.wait.text(), order=lambda j: j.wait.seconds),
    "age": JobColumn(lambda j: None if (age := _age(j)) is None else duration_text(age), order=_age),
    "start": JobColumn(
        lambda j: predicted_start(j.record.prediction, j.now) if j.state.status in WAITING else None,
        # Only a waiting job shows a start: the others' stored predictions sort with the empty cells.
        order=lambda j: (
            j.record.prediction.p50 if j.record.prediction and j.state.status in WAITING else None
        ),
    ),
    "id": JobColumn(lambda j: j.state.job_id, wide=True),
    "queue": JobColumn(lambda j: j.state.job_queue, wide=True),
    "share": JobColumn(lambda j: j.state.share, wide=True),
    "prio": JobColumn(lambda j: j.state.scheduling_priority, wide=True),
    "attempts": JobColumn(lambda j: j.state.attempts, wide=True),
    "preempted": JobColumn(lambda j: j.state.preemptions, wide=True),
    "capacity requeues": JobColumn(lambda j: j.state.capacity_requeues, wide=True),
    "created": JobColumn(
        lambda j: epoch_ms(j.state.created_at), order=lambda j: j.state.created_at, wide=True
    ),
    "stopped": JobColumn(
        lambda j: epoch_ms(j.state.stopped_at), order=lambda j: j.state.stopped_at, wide=True
    ),
    "reason": JobColumn(_reason, wide=True),
}


def chosen_columns(output: ListOutput, columns: str | None) -> list[str]:
    """The columns a listing prints: ``--columns`` as given, else the output's own set."""
    names = listed("--columns", [columns] if columns else None, list(JOB_COLUMNS))
    if names:
        return names
    if columns is not None:
        raise CliError(
            "--columns names no column", f"name one or more of {', '.join(JOB_COLUMNS)}", ExitCode.BAD_INPUT
        )
    return [name for name, column in JOB_COLUMNS.items() if output is not ListOutput.TABLE or not column.wide]


def sorted_jobs(jobs: Sequence[ListedJob], sort: str) -> list[ListedJob]:
    """``jobs`` ordered by one column (``-`` first for descending), ties by creation; empty cells last."""
    name = sort.removeprefix("-")
    column = JOB_COLUMNS.get(name)
    if column is None:
        raise typer.BadParameter(
            f"cannot sort by {name!r}; choose from {', '.join(JOB_COLUMNS)} (prefix - for descending)",
            param_hint="--sort",
        )
    value: Callable[[ListedJob], Any] = column.order or column.cell
    by_creation = sorted(jobs, key=lambda j: (j.state.created_at or 0, j.state.job_arn))
    present = [j for j in by_creation if value(j) is not None]
    absent = [j for j in by_creation if value(j) is None]
    return sorted(present, key=value, reverse=sort.startswith("-")) + absent


def status_counts(records: Sequence[JobRecord]) -> list[str]:
    """One line per queue: how many of its listed jobs are in each status, in lifecycle order."""
    by_queue: dict[str, Counter[JobStatus]] = {}
    for record in records:
        by_queue.setdefault(record.state.job_queue or "-", Counter())[record.state.status] += 1
    return [
        f"{queue}: " + ", ".join(f"{counts[s]} {s.value}" for s in JobStatus if counts[s])
        for queue, counts in sorted(by_queue.items())
    ]


def print_jobs(
    records: Sequence[JobRecord],
    output: ListOutput | Output,
    now: float | None = None,
    *,
    beside: bool = False,
    columns: str | None = None,
    sort: str = "created",
    limit: int | None = None,
    headers: bool = True,
) -> None:
    """The jobs, one line each: JSON records, CSV, or a table with a count line per queue.

    Each JSON record gains its ``wait`` (``listed_json``, as one job's story gives it); the table's wait
    column is that wait's text, so the two views cannot disagree. ``beside``: the records' uploader
    and stored prediction were read (``job_records`` with ``payloads`` and ``predictions``), so the
    JSON shows them. Waits and ages are dated by ``now`` (epoch s; default: the newest time the records
    hold, or the clock if later).
    """
    at = observed_now(records, time.time()) if now is None else now
    output = ListOutput(output.value)
    names = chosen_columns(output, columns)
    jobs = sorted_jobs([ListedJob(r, job_wait(r, at), at) for r in records], sort)
    shown = jobs[:limit] if limit is not None else jobs
    if output is ListOutput.JSON:
        print_json([listed_json(j.record, j.wait, beside=beside) for j in shown])
        return
    rows = [tuple(JOB_COLUMNS[name].cell(job) for name in names) for job in shown]
    if output is ListOutput.CSV:
        print_csv(
            names, [dict(zip(names, ("" if c is None else c for c in row), strict=True)) for row in rows]
        )
        return
    title = f"{len(jobs)} jobs" if len(shown) == len(jobs) else f"{len(shown)} of {len(jobs)} jobs"
    print_table(title, names, rows, headers=headers)
    if headers:
        typer.echo("\n".join(["", *status_counts([j.record for j in jobs])]))


def predicted_start(prediction: StartPrediction | None, now: float) -> str | None:
    """A stored start prediction in one cell, from ``now`` (epoch s): ``in 5m00s (p10-p90 2m00s-9m00s)``.

    None: never predicted.
    """
    if prediction is None:
        return None
    if prediction.p50 is None:
        return f"beyond horizon ({prediction.started_fraction:.0%} started)"

    def ahead(at_ms: int | None) -> float | None:
        return None if at_ms is None else at_ms / 1000 - now

    return start_text(ahead(prediction.p10), ahead(prediction.p50), ahead(prediction.p90))


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
    console = console or stdout_console()
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


def story_of(root: Root, record: JobRecord, now: float, config: SharesConfig | None = None) -> JobStory:
    """The record's whole story from the jobs table ``root`` holds: its training jobs' SageMaker events,
    costs, alerts and submission (``now``, epoch s, dates the wait of a job still waiting)."""
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


#: The job list's options, beside the command so its signature reads as a list of names.
StatusOption = Annotated[
    list[str] | None,
    typer.Option("--status", help="Only jobs in these statuses (repeat it, or comma-separate)."),
]
ShareOption = Annotated[
    list[str] | None, typer.Option("--share", help="Only jobs of these share identifiers or quota shares.")
]
TeamOption = Annotated[
    list[str] | None, typer.Option("--team", help="Only these teams' jobs (all their share identifiers).")
]
TierOption = Annotated[list[str] | None, typer.Option("--tier", help="Only jobs of these tiers.")]
SinceOption = Annotated[
    str | None,
    typer.Option("--since", help="Only jobs created since: a span back (90s, 15m, 6h, 7d) or an ISO time."),
]
SortOption = Annotated[
    str,
    typer.Option(
        "--sort", help="Order by a column (job, status, wait, age, start, created, ...); -COLUMN descends."
    ),
]
LimitOption = Annotated[
    int | None, typer.Option("--limit", min=1, help="Show at most this many jobs (after --sort).")
]
ColumnsOption = Annotated[
    str | None,
    typer.Option("--columns", help=f"Comma-separated columns to show, of: {', '.join(JOB_COLUMNS)}."),
]
NoHeadersOption = Annotated[bool, typer.Option("--no-headers", help="No title, column names or count lines.")]
WatchOption = Annotated[bool, typer.Option("--watch", "-w", help="Redraw the list every --interval seconds.")]
IntervalOption = Annotated[
    float, typer.Option("--interval", min=0.5, help="Seconds between --watch redraws.")
]
ListOutputOption = Annotated[
    ListOutput, typer.Option("--output", "-o", help="table, wide (every column), json or csv.")
]


@dataclass(frozen=True)
class ListView:
    """How the list is shown: which columns, in what order, how many, with or without headers."""

    columns: str | None
    sort: str
    limit: int | None
    headers: bool


@app.command("jobs")
@account_options
def jobs_command(
    job_argument: Annotated[
        str | None,
        typer.Argument(
            metavar="JOB",
            help="One job's whole story (its name, id or ARN): timeline by source, wait, attempts, "
            "decisions, alerts, cost, prediction.",
        ),
    ] = None,
    status: StatusOption = None,
    share: ShareOption = None,
    team: TeamOption = None,
    tier: TierOption = None,
    since: SinceOption = None,
    sort: SortOption = "created",
    limit: LimitOption = None,
    columns: ColumnsOption = None,
    no_headers: NoHeadersOption = False,
    watch: WatchOption = False,
    interval: IntervalOption = 2.0,
    config_path: Annotated[
        Path, config_option("The shares config: maps share identifiers to teams and tiers.")
    ] = DEFAULT_CONFIG,
    job: Annotated[
        str | None,
        typer.Option("--job", help="The same as JOB: one job's story (its name, id or ARN)."),
    ] = None,
    output: ListOutputOption = ListOutput.TABLE,
    target: Target = DEFAULT_TARGET,
) -> None:
    """List jobs one line each (status, team, tier, wait, age, predicted start), or tell one JOB's story."""
    if job_argument and job and job_argument != job:
        raise CliError(
            f"JOB {job_argument!r} and --job {job!r} name different jobs",
            "name one job, as JOB or as --job",
            ExitCode.BAD_INPUT,
        )
    wanted = job_argument or job
    query = JobQuery(
        statuses=chosen("--status", status, [s.value for s in JobStatus]),
        shares=chosen("--share", share),
        teams=chosen("--team", team),
        tiers=chosen("--tier", tier, [t.value for t in Tier]),
        job=wanted,  # one job's story reads only that job's rows
        created_since_ms=None if since is None else since_ms(since, target.now()),
    )
    config = _config_for(config_path, needed=bool(query.teams or query.tiers))
    if wanted is None:
        view = ListView(columns, sort, limit, headers=not no_headers)

        def show() -> None:
            list_jobs(target, query, config, output, view)

        if watch:
            watch_listing(show, interval)
        else:
            show()
        return
    tell_stories(target, query, config, output, by_option=bool(job))


def list_jobs(
    target: Target, query: JobQuery, config: SharesConfig | None, output: ListOutput, view: ListView
) -> None:
    """The jobs ``query`` wants, one line each; each record's prediction (the newest watch tick's) and
    uploader (its payload's) read beside it."""
    store = target.job_store()
    records = job_records(store, query, config=config, payloads=store, predictions=store)
    print_jobs(
        records,
        output,
        observed_now(records, target.now()),
        beside=True,
        columns=view.columns,
        sort=view.sort,
        limit=view.limit,
        headers=view.headers,
    )


def tell_stories(
    target: Target, query: JobQuery, config: SharesConfig | None, output: ListOutput, *, by_option: bool
) -> None:
    """The whole story of each job ``query.job`` names (a name can match several: oldest first)."""
    store = target.job_store()
    states = store.jobs(None)
    records = job_records(store, query, config=config, payloads=store, predictions=store, states=states)
    if not records:
        raise CliError(
            f"{'--job ' if by_option else ''}{query.job!r}: no recorded job has that name, id or ARN",
            "list the jobs with `shareplane jobs` and pass one's name, id or ARN",
            ExitCode.NOT_FOUND,
        )
    if output is ListOutput.CSV:
        raise CliError(
            "CSV lists jobs; one job's story has no rows", "use -o json or -o table", ExitCode.BAD_INPUT
        )
    # The cluster's clock dates a waiting job's wait; the whole table's newest time, should this
    # machine's clock lag behind the one the records were dated on.
    clock = target.now()
    now = max(recorded_now(clock, states), observed_now(records, clock))
    print_stories(target, records, now, config, Output.JSON if output is ListOutput.JSON else Output.TABLE)


def watch_listing(show: Callable[[], None], interval: float, rounds: int | None = None) -> None:
    """Clear the screen and ``show`` the listing every ``interval`` seconds until Ctrl-C (or ``rounds``)."""
    console = stdout_console()
    done = 0
    try:
        while rounds is None or done < rounds:
            if console.is_terminal:
                console.clear()
            show()
            done += 1
            if rounds is None or done < rounds:
                time.sleep(interval)
    except KeyboardInterrupt:
        pass


def print_stories(
    target: Target,
    records: Sequence[JobRecord],
    now: float,
    config: SharesConfig | None,
    output: Output,
) -> None:
    """Each record's whole story with its idle periods, oldest first: one JSON array, or for people."""
    root = target.jobs_root()
    stories = [
        (
            story_of(root, record, now, config),
            idle_periods(root.idle_ledger.decisions(job_id_of(record.job_arn))),
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
@account_options
def export_command(
    out: Annotated[Path, typer.Option("--out", help="Where to write the records, one JSON per line.")] = Path(
        "jobs.jsonl"
    ),
    target: Target = DEFAULT_TARGET,
) -> None:
    """Write every job record as JSON lines: the history `shareplane simulate --trace` replays."""
    records = job_records(target.job_store())
    with out.open("w") as handle:
        for record in records:
            handle.write(json.dumps(record_json(record), separators=(",", ":")) + "\n")
    print(f"{len(records)} jobs written to {out}")
