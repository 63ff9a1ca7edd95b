"""`shareplane idle`: the jobs the idle detector flagged (idle or hung), and what it did to each."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from shareplane.domain.idle.record import IdleRecord

from ..aws import DEFAULT_TARGET, Target, account_options
from ..main import app
from ..output import Output, OutputOption, emit, print_table

#: The detector's acts, from least to most: a job's row shows the furthest it went in each period.
_ACT_ORDER = ("alert", "warn", "stop", "stop_and_requeue")


def _when(seconds: float | None) -> str | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S")


def idle_periods(records: Iterable[IdleRecord]) -> list[dict[str, Any]]:
    """One job's decisions grouped by period (signal and since): what was done, when, on what evidence."""
    periods: dict[tuple[str, float], dict[str, Any]] = {}
    for r in sorted(records, key=lambda r: (r.decided_at, r.act.value)):
        period = periods.setdefault(
            (r.signal.value, r.since),
            {
                "jobId": r.job_id,
                "jobArn": r.job_arn,
                "jobName": r.job_name,
                "team": r.team,
                "tier": r.tier,
                "signal": r.signal.value,
                "since": r.since,
                "until": r.until,
                "acts": [],
                "gpus": r.gpus,
                "idleGpuHours": r.idle_gpu_hours,
                "stopped": False,
                "reason": r.reason,
            },
        )
        period["acts"].append({"act": r.act.value, "at": r.decided_at, "stopAt": r.stop_at})
        period["until"] = max(period["until"] or 0.0, r.until or 0.0) or None
        period["idleGpuHours"] = max(period["idleGpuHours"], r.idle_gpu_hours)
        period["stopped"] = period["stopped"] or r.stopped
        period["reason"] = r.reason
    return list(periods.values())


def idle_periods_line(periods: list[dict[str, Any]]) -> str:
    """A job's idle periods in one line (the `shareplane jobs --job` detail)."""
    if not periods:
        return "- (never flagged)"
    return "; ".join(
        f"{p['signal']} since {_when(p['since'])} to {_when(p['until'])}: "
        + " > ".join(a["act"] for a in p["acts"])
        for p in periods
    )


def print_flagged(periods: list[dict[str, Any]], output: Output) -> None:
    """Flagged periods as JSON, or a table with one row per job and period."""

    def table() -> None:
        rows = [
            (
                p["jobName"] or p["jobId"],
                p["team"],
                p["tier"],
                p["signal"],
                _when(p["since"]),
                _when(p["until"]),
                max((a["act"] for a in p["acts"]), key=_ACT_ORDER.index),
                "yes" if p["stopped"] else "no",
                p["gpus"],
                f"{p['idleGpuHours']:.2f}",
                p["reason"][:70],
            )
            for p in periods
        ]
        columns = [
            "job",
            "team",
            "tier",
            "signal",
            "since",
            "until",
            "act",
            "stopped",
            "gpus",
            "idle GPU-h",
            "why",
        ]
        print_table(f"{len(periods)} flagged", columns, rows)

    emit(periods, output, table)


#: The table keeps idle decisions 400 days (``HISTORY_RETENTION_SECONDS``): no window reaches further.
IDLE_HOURS_KEPT = 400 * 24.0


def _hours_kept(hours: float) -> float:
    # Checked before any AWS call; NaN fails both comparisons, so it is refused too.
    if not 0 <= hours <= IDLE_HOURS_KEPT:
        raise typer.BadParameter(
            f"{hours:g} is outside 0 to {IDLE_HOURS_KEPT:.0f} hours (400 days of kept decisions; 0: all)"
        )
    return hours


@app.command("idle")
@account_options
def idle_command(
    hours: Annotated[
        float,
        typer.Option(
            "--hours",
            callback=_hours_kept,
            help=f"Only decisions of the last HOURS hours, 0 to {IDLE_HOURS_KEPT:.0f} (0: all).",
        ),
    ] = 24.0,
    team: Annotated[str | None, typer.Option(help="Only this team's jobs.")] = None,
    stopped: Annotated[bool, typer.Option("--stopped", help="Only jobs the detector stopped.")] = False,
    output: OutputOption = Output.TABLE,
    target: Target = DEFAULT_TARGET,
) -> None:
    """List the jobs the idle detector flagged (idle GPUs, or hung) and what it did: alert, warn, stop."""
    ledger = target.jobs_root().idle_ledger
    now = target.now()
    records = ledger.since(now - hours * 3600 if hours else 0.0)
    by_job: dict[str, list[IdleRecord]] = {}
    for record in records:
        by_job.setdefault(record.job_id, []).append(record)
    periods = [p for job_records in by_job.values() for p in idle_periods(job_records)]
    if team is not None:
        periods = [p for p in periods if p["team"] == team]
    if stopped:
        periods = [p for p in periods if p["stopped"]]
    print_flagged(sorted(periods, key=lambda p: (p["since"], p["jobId"])), output)
