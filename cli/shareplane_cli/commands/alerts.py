"""`shareplane alerts`: every alert shareplane sent, read from the jobs table's ALERT items.

Every alert is published to SNS and recorded as an ``ALERT#<job or share>#<kind>`` item, indexed by
time in the ByStatus index (``gsi1pk = ALERTS``). Reading the table works the same on a real account
and on the local stack, needs no extra subscription, and never consumes anyone's messages.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer
from shareplane.domain.alerts.sent import SentAlert

from ..aws import DEFAULT_TARGET, Target, account_options
from ..main import app
from ..output import Output, OutputOption, emit, epoch_ms, print_table
from ..time_options import parse_duration


def alert_rows(alerts: list[SentAlert]) -> list[dict[str, Any]]:
    """Sent alerts as the records the command prints."""
    return [
        {
            "sentAt": a.sent_at,
            "kind": a.kind,
            "severity": a.severity,
            "team": a.team,
            "tier": a.tier,
            "share": a.share,
            "queue": a.queue,
            "job": a.job,
            "subject": a.subject,
            "body": dict(a.body),
        }
        for a in alerts
    ]


@app.command("alerts")
@account_options
def alerts_command(
    since: Annotated[str, typer.Option(help="How far back: 90s, 15m, 6h, 7d.")] = "24h",
    output: OutputOption = Output.TABLE,
    target: Target = DEFAULT_TARGET,
) -> None:
    """List the alerts sent (failures, storms, refused requeues, blocked queues, ...), oldest first."""
    window = parse_duration(since)
    rows = alert_rows(target.jobs_root().alert_ledger.alerts(time.time() - window))

    def as_table() -> None:
        print_table(
            f"{len(rows)} alerts in the last {since}",
            ["sent", "severity", "kind", "team", "share", "subject"],
            [
                (
                    epoch_ms(int(r["sentAt"] * 1000)) if r["sentAt"] else None,
                    r["severity"],
                    r["kind"],
                    r["team"],
                    r["share"],
                    r["subject"],
                )
                for r in rows
            ],
        )

    emit(rows, output, as_table)
