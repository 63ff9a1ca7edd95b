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
from ..main import app
from ..output import Output, emit, epoch_ms, print_table

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
    output: OutputOption = Output.TABLE,
    profile: Profile = None,
    region: Region = None,
    endpoint: Endpoint = None,
    stack_name: StackName = DEFAULT_STACK,
    table: TableName = None,
) -> None:
    """List jobs with their team, tier, state, counters and history."""
    config = _config_for(config_path, needed=bool(team or tier))
    target = Target(profile=profile, region=region, endpoint=endpoint, stack_name=stack_name)
    records = job_records(
        target.job_store(table),
        status.value if status else None,
        share,
        config=config,
        team=team,
        tier=tier.value if tier else None,
    )
    print_jobs(records, output)


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
