"""`shareplane jobs`: every job the control plane recorded, from the local stack or a real account."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from shareplane.domain.config.shares import SharesConfig, Tier
from shareplane.domain.cost.billing import running_cost
from shareplane.domain.explain.listing import history_label
from shareplane.domain.explain.story import job_story, observed_now, wait_summary
from shareplane.domain.jobs.arns import job_id_of
from shareplane.domain.jobs.lifecycle import JobStatus
from shareplane.service.queries import job_records, job_submission
from shareplane.service.spend import owner_of

from ..aws import DEFAULT_STACK, Endpoint, Profile, Region, StackName, TableName, Target
from ..config_file import load_config
from ..errors import CliError, ExitCode
from ..main import app
from ..output import Output, emit, epoch_ms, print_json, print_table
from .idle import idle_periods, idle_periods_line

OutputOption = Annotated[Output, typer.Option("--output", "-o", help="json or table.")]


def print_jobs(records: list[dict[str, Any]], output: Output, now: float | None = None) -> None:
    """Job records as JSON, or as a table with one row per job (waits of waiting jobs as of ``now``).

    Each record gains its ``wait`` (``wait_summary``, as one job's story gives it); the table's wait
    column is that object's text, so the two views cannot disagree.
    """
    at = observed_now(records, time.time()) if now is None else now
    listed = [{**r, "wait": wait_summary(r, at)} for r in records]

    def table() -> None:
        rows = [
            (
                r["jobName"],
                r["status"],
                r.get("team"),
                r.get("tier"),
                r["shareIdentifier"] or r["quotaShareName"],
                r["schedulingPriority"],
                r["attempts"],
                r["preemptions"],
                r["capacityRequeues"],
                epoch_ms(r["createdAt"]),
                r["wait"]["text"],
                epoch_ms(r["stoppedAt"]),
                predicted_start(r.get("prediction")),
                " > ".join(history_label(h) for h in r["history"]),
                (r["failureReason"] or r["statusReason"] or "")[:60],
            )
            for r in listed
        ]
        columns = [
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
        print_table(f"{len(listed)} jobs", columns, rows)

    emit(listed, output, table)


def predicted_start(prediction: dict[str, Any] | None) -> str | None:
    """The stored start prediction in one cell: p50, then the p10-p90 range (None: never predicted)."""
    if not prediction:
        return None
    if prediction.get("startP50") is None:
        return f"beyond horizon ({prediction.get('startedFraction', 0):.0%} started)"
    p90 = epoch_ms(prediction.get("startP90")) or "later"
    return f"{epoch_ms(prediction['startP50'])} ({epoch_ms(prediction.get('startP10'))} - {p90})"


def uploader_line(uploader: dict[str, Any] | None) -> str:
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


def _ms(value: Any) -> str | None:
    return epoch_ms(int(value)) if value is not None else None


def print_job_story(story: Mapping[str, Any], console: Console | None = None) -> None:
    """One job's whole story for people: who, where, the wait, the timeline by source, what happened."""
    console = console or Console()
    placement = story["placement"]
    submitted = placement["asSubmitted"] or {}
    submission = story.get("submission") or {}
    source = submission.get("source") or {}
    spec = f"s3://{source.get('bucket')}/{source.get('key')}" if source.get("key") else None
    cost = story["cost"]
    prediction = story.get("prediction")
    rows = [
        ("job", story["jobName"]),
        ("arn", story["jobArn"]),
        ("status", story["status"]),
        ("team / tier", f"{story.get('team') or '-'} / {story.get('tier') or '-'}"),
        ("queue", story.get("jobQueue")),
        ("share", placement["now"]["share"]),
        (
            "priority",
            f"{placement['now']['schedulingPriority']} (submitted with "
            f"{submitted.get('schedulingPriority')}, {submitted.get('tier') or 'no tier'})"
            if submitted.get("schedulingPriority") not in (None, placement["now"]["schedulingPriority"])
            else placement["now"]["schedulingPriority"],
        ),
        ("instances", f"{story.get('instanceCount') or '-'} x {story.get('instanceType') or '-'}"),
        ("spec", spec or "- (not submitted from a drop)"),
        ("uploaded by", uploader_line(story.get("uploader") or submission.get("uploader"))),
        ("created", epoch_ms(story["createdAt"])),
        (
            "wait",
            f"{story['wait']['text']} (submission to first dispatch, SCHEDULED at "
            f"{_ms(story['wait']['firstDispatchAt'])})"
            if story["wait"]["ended"]
            else story["wait"]["text"],
        ),
        ("prediction", _prediction_text(prediction) if prediction else "- (none stored)"),
        ("stopped", epoch_ms(story["stoppedAt"])),
        (
            "attempts",
            f"{story['attempts']} attempt(s) ended, {story['preemptions']} preemption(s), "
            f"{story['capacityRequeues']} capacity requeue(s)",
        ),
        (
            "cost",
            f"{cost['usd']} USD, {cost['billableInstanceHours']} billable instance-hours "
            f"({len(cost['attempts'])} attempt(s) costed"
            + (
                ", the running one estimated so far)"
                if any(a["source"] == "running" for a in cost["attempts"])
                else ")"
            )
            if cost["attempts"]
            else "- (no attempt costed yet)",
        ),
        ("reason", story["failureReason"] or story["statusReason"]),
        ("idle periods", idle_periods_line(story.get("idlePeriods", []))),
    ]
    print_table(story["jobName"], ["field", "value"], rows, console)
    print_table(
        "timeline (source:state)",
        ["at", "state", "reason"],
        [(_ms(e["at"]), e["label"], (e.get("reason") or "")[:100]) for e in story["timeline"]],
        console,
    )
    sections = [
        ("changes", placement["changes"], ["at", "change", "reason"], ("label", "reason")),
        (
            "preemptions, reclaims and requeues",
            story["interruptions"],
            ["at", "what", "reason"],
            ("label", "reason"),
        ),
        (
            "failure decisions",
            story["decisions"],
            ["at", "class", "rule", "action", "reason"],
            ("class", "rule", "action", "reason"),
        ),
    ]
    for title, items, columns, keys in sections:
        if items:
            print_table(
                title,
                columns,
                [(_ms(i["at"]), *((str(i.get(k) or ""))[:100] for k in keys)) for i in items],
                console,
            )
    if story["alerts"]:
        print_table(
            "alerts sent",
            ["sent", "severity", "kind", "subject"],
            [(_ms(a["sentAt"] * 1000), a["severity"], a["kind"], a["subject"]) for a in story["alerts"]],
            console,
        )


def _prediction_text(prediction: Mapping[str, Any]) -> str:
    waits = " / ".join(
        "-" if prediction[f"waitSeconds{q}"] is None else f"{prediction[f'waitSeconds{q}']} s"
        for q in ("P10", "P50", "P90")
    )
    text = (
        f"p50 {_ms(prediction['startP50']) or 'not within the horizon'} "
        f"(waits p10/p50/p90 {waits}; predicted at {_ms(prediction['predictedAt'])})"
    )
    off = prediction.get("actualMinusP50Seconds")
    return text if off is None else f"{text}; started {off:+d} s from its p50"


def story_of(
    target: Target, table: str | None, record: dict[str, Any], now: float, config: SharesConfig | None = None
) -> dict[str, Any]:
    """The record's whole story: its training jobs' SageMaker events, costs, alerts and submission
    (``now``, epoch s, dates the wait of a job still waiting)."""
    root = target.root(table_name=table or target.output("JobsTableName"))
    store = root.store
    state = store.load_job(record["jobArn"])
    arns = list(state.training_job_arns) if state is not None else []
    if record.get("trainingJobArn") and record["trainingJobArn"] not in arns:
        arns.append(record["trainingJobArn"])
    costs = []
    for arn in arns:
        cost = store.training_cost(arn)
        if cost is None and config is not None and (training := store.load_training_job(arn)) is not None:
            # An attempt still training: the estimate `shareplane usage` gives it (source "running").
            cost = running_cost(training, owner_of(state, store, config), int(now * 1000), config)
        if cost is not None:
            costs.append(cost)
    created = (record.get("createdAt") or 0) / 1000.0
    alerts = [a for a in root.alert_ledger.alerts(created - 1) if a.job == record["jobArn"]]
    return job_story(
        record,
        training={arn: store.training_history(arn) for arn in arns},
        alerts=alerts,
        costs=costs,
        submission=job_submission(store, record["jobArn"]),
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
    records = job_records(
        store,
        status.value if status else None,
        share,
        config=config,
        team=team,
        tier=tier.value if tier else None,
        payloads=store,
        predictions=store,  # each record's ``prediction``: the newest watch tick's
    )
    if wanted is None:
        print_jobs(records, output)
        return
    matches = [r for r in records if wanted in (r["jobName"], r["jobArn"], r.get("jobId"))]
    if not matches:
        raise CliError(
            f"{'--job ' if job else ''}{wanted!r}: no recorded job has that name, id or ARN",
            "list the jobs with `shareplane jobs` and pass one's name, id or ARN",
            ExitCode.NOT_FOUND,
        )
    # A name can match several jobs (the same spec dropped twice): each one's story, oldest first.
    now = observed_now(records, time.time())
    ledger = target.root(table_name=table or target.output("JobsTableName")).idle_ledger
    stories = []
    for record in sorted(matches, key=lambda r: r.get("createdAt") or 0):
        story = story_of(target, table, record, now, config)
        story["idlePeriods"] = idle_periods(ledger.decisions(job_id_of(str(record["jobArn"]))))
        stories.append(story)
    if output is Output.JSON:
        print_json(stories)  # one JSON array, always
        return
    for story in stories:
        print_job_story(story)


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
            handle.write(json.dumps(record, separators=(",", ":")) + "\n")
    print(f"{len(records)} jobs written to {out}")
