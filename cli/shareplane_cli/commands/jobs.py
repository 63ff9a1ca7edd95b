"""`shareplane jobs`: every job the control plane recorded, from the local stack or a real account."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from shareplane.domain.config import SharesConfig, Tier
from shareplane.domain.lifecycle import JobStatus
from shareplane.service.queries import job_records

from ..aws import DEFAULT_STACK, Endpoint, Profile, Region, StackName, TableName, Target
from ..config_file import load_config
from ..errors import CliError, ExitCode
from ..main import app
from ..output import Output, emit, epoch_ms, print_json, print_table
from .idle import idle_periods, idle_periods_line

OutputOption = Annotated[Output, typer.Option("--output", "-o", help="json or table.")]


def print_jobs(records: list[dict[str, Any]], output: Output) -> None:
    """Job records as JSON, or as a table with one row per job."""

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
                epoch_ms(r["stoppedAt"]),
                " > ".join(h["status"] for h in r["history"]),
                (r["failureReason"] or r["statusReason"] or "")[:60],
            )
            for r in records
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
            "stopped",
            "history",
            "reason",
        ]
        print_table(f"{len(records)} jobs", columns, rows)

    emit(records, output, table)


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


def print_job_detail(record: dict[str, Any], output: Output) -> None:
    """One job as field: value lines (its full record with --output json)."""

    def detail() -> None:
        rows = [
            ("job", record["jobName"]),
            ("arn", record["jobArn"]),
            ("status", record["status"]),
            ("team", record.get("team")),
            ("tier", record.get("tier")),
            ("share", record["shareIdentifier"] or record["quotaShareName"]),
            ("uploaded by", uploader_line(record.get("uploader"))),
            ("created", epoch_ms(record["createdAt"])),
            ("stopped", epoch_ms(record["stoppedAt"])),
            ("attempts", record["attempts"]),
            ("preemptions", record["preemptions"]),
            ("history", " > ".join(h["status"] for h in record["history"])),
            ("reason", record["failureReason"] or record["statusReason"]),
            ("idle periods", idle_periods_line(record.get("idlePeriods", []))),
        ]
        print_table(record["jobName"], ["field", "value"], rows)

    emit(record, output, detail)


@app.command("jobs")
def jobs_command(
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
        typer.Option("--job", help="Show one job in detail (its name, id or ARN), uploader included."),
    ] = None,
    output: OutputOption = Output.TABLE,
    profile: Profile = None,
    region: Region = None,
    endpoint: Endpoint = None,
    stack_name: StackName = DEFAULT_STACK,
    table: TableName = None,
) -> None:
    """List jobs with their team, tier, state, counters and history (and who uploaded each)."""
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
    )
    if job is None:
        print_jobs(records, output)
        return
    matches = [r for r in records if job in (r["jobName"], r["jobArn"], r.get("jobId"))]
    if not matches:
        raise CliError(
            f"--job {job!r}: no recorded job has that name, id or ARN",
            "list the jobs with `shareplane jobs` and pass one's name, id or ARN",
            ExitCode.NOT_FOUND,
        )
    ledger = target.root(table_name=table or target.output("JobsTableName")).idle_ledger
    for record in matches:
        record["idlePeriods"] = idle_periods(ledger.decisions(str(record["jobArn"]).rsplit("/", 1)[-1]))
    if output is Output.JSON:
        # A name can match several jobs (the same spec dropped twice): one JSON array, always.
        print_json(matches)
        return
    for record in matches:
        print_job_detail(record, output)


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
