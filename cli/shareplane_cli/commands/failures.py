"""`shareplane failures ...`: see how the failure path reads a failure text and what it would do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from shareplane.domain.config.shares import SharesConfig, Tier
from shareplane.domain.errors import ConfigError, ShareplaneError
from shareplane.domain.failures.decision import Action, FailureContext, FailureDecision, FailureSignal, decide

from ..config_file import DEFAULT_CONFIG, config_option, load_config
from ..main import app
from ..output import Output, print_error, print_fitted, stdout_console

failures_app = typer.Typer(help="Inspect the failure classifier and retry policy.", no_args_is_help=True)
app.add_typer(failures_app, name="failures")

_RETRIED = (Action.REQUEUE, Action.LEFT_TO_BATCH)


def first_failure_decisions(
    reason: str,
    config: SharesConfig,
    tiers: list[Tier],
    instance_type: str | None,
    team: str | None = None,
) -> dict[Tier, FailureDecision]:
    """What each tier's job (of ``team``, if given) would get for its first failure with ``reason``."""
    # The text may be a Batch statusReason, a SageMaker FailureReason or a SecondaryStatus, so it
    # fills all three; the status rules match whole values only, so a long reason cannot hit them.
    signal = FailureSignal(status_reason=reason, failure_reason=reason, secondary_status=reason)
    return {
        tier: decide(
            FailureContext(
                signal=signal,
                job_id=f"classify:{reason}",
                share="(classify)",
                tier=tier,
                now=0.0,
                instance_type=instance_type,
                preemption_count=1,
                spot_interruptions=1,
                team=team,
            ),
            config,
        )
        for tier in tiers
    }


@failures_app.command("classify")
def classify_command(
    reason: Annotated[
        str, typer.Argument(metavar="REASON", help="A FailureReason, statusReason or SecondaryStatus text.")
    ],
    tier: Annotated[Tier | None, typer.Option("--tier", help="Show only this tier's decision.")] = None,
    output: Annotated[
        Output, typer.Option("--output", help="json (machine-readable) or table.")
    ] = Output.TABLE,
    config_path: Annotated[Path, config_option("The shares config file.")] = DEFAULT_CONFIG,
    instance_type: Annotated[
        str | None,
        typer.Option("--instance-type", help="The failed job's instance type (default: the config's first)."),
    ] = None,
    team: Annotated[
        str | None,
        typer.Option(
            help="The job's team: an upsize stays within its allowed_instance_types (default: "
            "what every team may use)."
        ),
    ] = None,
) -> None:
    """Print the class of REASON, the rule that matched and the decision each tier gets first time."""
    try:
        config = load_config(config_path)
        tiers = [tier] if tier else list(Tier)
        chosen_type = instance_type or next(iter(config.instance_types), None)
        if team is not None and team not in config.teams:
            raise ConfigError(
                "--team", f"{team!r} is not in the shares config", f"use one of {sorted(config.teams)}"
            )
        decisions = first_failure_decisions(reason, config, tiers, chosen_type, team)
    except ShareplaneError as exc:
        print_error(exc)
        raise typer.Exit(2) from exc
    first = next(iter(decisions.values()))
    if output is Output.JSON:
        payload = {
            "class": first.failure_class.value,
            "rule": first.rule_id,
            "retryable": any(d.action in _RETRIED for d in decisions.values()),
            "decisions": {t.value: d.summary() for t, d in decisions.items()},
        }
        typer.echo(json.dumps(payload))
        return
    console = stdout_console()
    console.print(f"class: [bold]{first.failure_class}[/bold]   rule: {first.rule_id}", highlight=False)
    console.print(f"reason: {first.reason_excerpt}", markup=False, highlight=False)
    table = Table("tier", "decision", "why")
    for t, d in decisions.items():
        table.add_row(t.value, d.summary(), d.why)
    print_fitted(table, console)
    console.print(f"fix: {first.fix}", markup=False, highlight=False)
