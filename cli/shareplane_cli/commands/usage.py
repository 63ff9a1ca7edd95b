"""`shareplane usage` and `shareplane budgets`: what each team spent (chargeback) and where it stands."""

from __future__ import annotations

import re
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from shareplane.domain.cost.billing import UsageGroup, UsageRow
from shareplane.domain.cost.budget import budget_status, month_bounds
from shareplane.domain.errors import InvalidInputError
from shareplane.service.spend import team_months
from shareplane.service.usage import chargeback

from ..aws import DEFAULT_TARGET, Target, account_options
from ..config_file import DEFAULT_CONFIG, config_option, load_config
from ..main import app
from ..output import print_csv, print_json, print_table

_DAYS = re.compile(r"^(\d{1,4})d$")


class UsageOutput(StrEnum):
    """Formats of the chargeback report: csv for spreadsheets and billing imports."""

    JSON = "json"
    TABLE = "table"
    CSV = "csv"


# The options `usage` and `budgets` share, besides the connection's.
UsageOutputOption = Annotated[UsageOutput, typer.Option("--output", "-o")]
SpendConfigPath = Annotated[
    Path, config_option("The shares config: teams, prices per instance type, budgets.")
]


def parse_since(value: str | None, now: datetime) -> datetime | None:
    """``--since``: a UTC date (2026-03-01), a time (2026-03-01T12:00:00Z), ``30d`` or ``month``."""
    if value is None:
        return None
    if value == "month":
        return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if days := _DAYS.match(value):
        return now - timedelta(days=int(days.group(1)))
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInputError(
            "--since",
            f"{value!r} is neither a date, a number of days nor 'month'",
            "pass a UTC date such as 2026-03-01, a window such as 30d, or month (this calendar month)",
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def row_data(row: UsageRow, by: UsageGroup) -> dict[str, object]:
    """One report row as named fields; the key column is named after the grouping."""
    data = asdict(row)
    key = data.pop("key")
    if by is UsageGroup.TEAM:
        return data
    return {"team": data.pop("team"), by.value: key, **data}


@app.command("usage")
@account_options
def usage_command(
    team: Annotated[str | None, typer.Option(help="Only this team's spend.")] = None,
    since: Annotated[
        str | None, typer.Option(help="From this UTC date or time, a window such as 30d, or month.")
    ] = None,
    by: Annotated[UsageGroup, typer.Option(help="Group each team's spend by this.")] = UsageGroup.TEAM,
    output: UsageOutputOption = UsageOutput.TABLE,
    config_path: SpendConfigPath = DEFAULT_CONFIG,
    target: Target = DEFAULT_TARGET,
) -> None:
    """Cost per team: SageMaker billable time x instances x on-demand price; running jobs estimated."""
    config = load_config(config_path)
    if team is not None and team not in config.teams:
        raise InvalidInputError(
            "--team", f"{team!r} is not a team of the config", f"use one of {sorted(config.teams)}"
        )
    now = datetime.fromtimestamp(target.now(), UTC)
    start = parse_since(since, now)
    rows = chargeback(
        target.job_store(),
        config,
        by,
        now_ms=int(now.timestamp() * 1000),
        since_ms=int(start.timestamp() * 1000) if start else 0,
        team=team,
    )
    records = [row_data(r, by) for r in rows]
    if output is UsageOutput.JSON:
        print_json(records)
        return
    if output is UsageOutput.CSV:
        print_csv(list(row_data(UsageRow("", "", 0, 0, 0, 0, 0), by)), records)
        return
    columns = ["team"] + ([] if by is UsageGroup.TEAM else [by.value])
    columns += ["USD", "of which running (est.)", "billable instance-h", "unpriced instance-h", "attempts"]
    body = [
        [r.team]
        + ([] if by is UsageGroup.TEAM else [r.key])
        + [
            f"{r.usd:,.2f}",
            f"{r.estimated_usd:,.2f}",
            r.billable_instance_hours,
            r.unpriced_instance_hours,
            r.attempts,
        ]
        for r in rows
    ]
    window = f"since {start:%Y-%m-%d %H:%M} UTC" if start else "all recorded"
    print_table(f"spend by {by.value}, {window}", columns, body)
    print(
        "Billable time is SageMaker's BillableTimeInSeconds: from training start to end, so instance "
        "provisioning is not billed; managed spot savings are already in it."
    )


@app.command("budgets")
@account_options
def budgets_command(
    month: Annotated[
        str | None, typer.Option(help="The UTC month, YYYY-MM (default: this month, forecast included).")
    ] = None,
    output: UsageOutputOption = UsageOutput.TABLE,
    config_path: SpendConfigPath = DEFAULT_CONFIG,
    target: Target = DEFAULT_TARGET,
) -> None:
    """Each budgeted team's month: spent, budget, the burn-rate forecast and what enforcement does.

    Spent is what was billed plus what running jobs have accrued so far.
    """
    config = load_config(config_path)
    now = target.now()
    if month is not None:
        # From the epoch (recorded times are epoch ms) to the last month whose end a datetime can hold.
        if not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", month) or not "1970-01" <= month <= "9998-12":
            raise InvalidInputError(
                "--month",
                f"{month!r} is not a month from 1970-01 to 9998-12",
                "pass it as YYYY-MM, such as 2026-03",
            )
        start, end = month_bounds(month)
        # A past month is over (its forecast is its spend); this month is taken as of now.
        now = min(now, end.timestamp() - 1e-3) if start.timestamp() <= now else start.timestamp()
    store = target.job_store()
    rows = []
    months = team_months(store, config, sorted(config.budgets), int(now * 1000))
    for team, budget in sorted(config.budgets.items()):
        team_month = months[team]
        status = budget_status(team, budget, team_month.billed_usd, now, team_month.accrued_usd)
        rows.append({**status.as_dict(), "over": status.over, "enforcement": budget.enforcement.value})
    if output is UsageOutput.JSON:
        print_json(rows)
        return
    if output is UsageOutput.CSV:
        if rows:
            print_csv(list(rows[0]), rows)
        return
    body = [
        [
            r["team"],
            r["month"],
            f"{r['spent_usd']:,.2f}",
            f"{r['monthly_usd']:,.2f}",
            f"{r['used']:.1%}",
            f"{r['forecast_usd']:,.2f}",
            r["enforcement"],
        ]
        for r in rows
    ]
    columns = ["team", "month", "spent USD", "budget USD", "used", "forecast USD", "enforcement"]
    print_table("budgets (forecast: the month's burn rate so far)", columns, body)
