"""`shareplane alerts`: every alert shareplane sent, read from the jobs table's ALERT items.

Every alert is published to SNS and recorded as an ``ALERT#<job or share>#<kind>`` item, indexed by
time in the ByStatus index (``gsi1pk = ALERTS``). Reading the table works the same on a real account
and on the local stack, needs no extra subscription, and never consumes anyone's messages.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from shareplane.domain.alerts.kinds import ALERT_SPECS
from shareplane.domain.alerts.sent import SentAlert
from shareplane.domain.config.failure_rules import Severity

from ..aws import DEFAULT_TARGET, Target, account_options
from ..filters import chosen
from ..main import app
from ..output import Output, OutputOption, emit, epoch_ms, print_table
from ..time_options import parse_duration

#: What ``--kind`` and ``--severity`` accept: every kind ALERT_SPECS defines, every severity.
KINDS: tuple[str, ...] = tuple(kind.value for kind in ALERT_SPECS)
SEVERITIES: tuple[str, ...] = tuple(severity.value for severity in Severity)


def wanted(
    alert: SentAlert, teams: frozenset[str], kinds: frozenset[str], severities: frozenset[str]
) -> bool:
    """Whether a sent alert passes the filters (an empty one passes every alert)."""
    return (
        (not teams or alert.team in teams)
        and (not kinds or alert.kind in kinds)
        and (not severities or alert.severity in severities)
    )


#: A repeatable option whose values may also be comma-separated.
MultiOption = list[str] | None


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
    team: Annotated[
        MultiOption, typer.Option(help="Only these teams' alerts (repeat it or separate with commas).")
    ] = None,
    kind: Annotated[
        MultiOption,
        typer.Option(help=f"Only these kinds: {', '.join(KINDS)} (repeat it or separate with commas)."),
    ] = None,
    severity: Annotated[
        MultiOption,
        typer.Option(
            help=f"Only these severities: {', '.join(SEVERITIES)} (repeat it or separate with commas)."
        ),
    ] = None,
    output: OutputOption = Output.TABLE,
    target: Target = DEFAULT_TARGET,
) -> None:
    """List the alerts sent (failures, storms, refused requeues, blocked queues, ...), oldest first."""
    window = parse_duration(since)
    teams, kinds = chosen("--team", team), chosen("--kind", kind, KINDS)
    severities = chosen("--severity", severity, SEVERITIES)
    sent = target.jobs_root().alert_ledger.alerts(target.now() - window)
    rows = alert_rows([a for a in sent if wanted(a, teams, kinds, severities)])

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
