"""`shareplane shares`: the GPU queue's weights or quota limits, target vs actual, audit trail, rollback."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from shareplane.adapters.batch_policy import BatchPolicyAdapter
from shareplane.adapters.share_items import audit_item
from shareplane.domain.config.shares import SchedulingMode, SharesConfig
from shareplane.domain.errors import RejectedByServiceError, ShareplaneError
from shareplane.domain.shares.ownership import baseline_settings, setting_to_state
from shareplane.domain.shares.rebalance import UNLIMITED_BORROW, QuotaSettings, team_weights
from shareplane.domain.shares.state import PlanAudit, SharesState
from shareplane.service.rebalance_shares import RebalanceSettings, current_weights, rollback

from ..aws import DEFAULT_STACK, Endpoint, Profile, Region, StackName, TableName, Target
from ..config_file import load_config
from ..main import app
from ..output import Output, emit, print_error, print_json, print_table

OutputOption = Annotated[Output, typer.Option("--output", "-o", help="json or table.")]


def _setting_text(setting: Any) -> str:
    if isinstance(setting, dict | QuotaSettings):
        quota = setting if isinstance(setting, QuotaSettings) else QuotaSettings.from_dict(setting)
        limits = ", ".join(f"{u}={n}" for u, n in sorted(quota.capacity_limits.items()))
        borrow = "unlimited" if quota.borrow_limit == UNLIMITED_BORROW else f"{quota.borrow_limit}%"
        return f"{limits} {quota.strategy.value} borrow {borrow}"
    return "-" if setting is None else f"{float(setting):g}"


def current_shares(
    batch: BatchPolicyAdapter, queue: str, state: SharesState | None, config: SharesConfig | None = None
) -> dict[str, Any]:
    """Every team's setting in Batch now, beside the rebalancer's latest target and actual.

    The rebalancer plans per team, so a row is a team's share; in the team_tier layout its weight is
    the team's (each identifier holds it times the tier multiplier, listed under ``identifiers``).
    """
    policy_arn = batch.scheduling_policy_of(queue)
    policy = batch.describe_scheduling_policy(policy_arn) if policy_arn else None
    latest = state.latest if state is not None else None
    identifiers: dict[str, float] = {}
    targets = dict(latest.targets) if latest else {}
    actual = dict(latest.actual) if latest else {}
    waiting = dict(latest.waiting) if latest else {}
    if policy is not None and policy.mode is SchedulingMode.QUOTA:
        mode = "quota"
        settings = {q.name: q.settings.to_dict() for q in batch.list_quota_shares(queue)}
    else:
        mode = "fairshare"
        weights = current_weights(policy) if policy is not None else []
        settings = {w.share_identifier: w.weight_factor for w in weights}
        if config is not None and config.tiered_shares:
            identifiers = settings
            settings = {w.share_identifier: w.weight_factor for w in team_weights(config, weights)}
    names = sorted(set(settings) | set(targets))
    # What the template holds (CloudFormation's) and what the rebalancer holds in force over it.
    baseline = {k: setting_to_state(v) for k, v in baseline_settings(config).items()} if config else {}
    same_mode = state is None or state.mode is None or state.mode.value == mode
    held = state.overrides if state is not None and same_mode else None
    shares = [
        {
            "share": name,
            "team": config.team_for_share(name) if config else None,
            "setting": settings.get(name),
            "baseline": baseline.get(name),
            "rebalancerValue": ((held or {}).get(name) or {}).get("setting"),
            "target": targets.get(name),
            "actual": actual.get(name),
            "waiting": waiting.get(name),
            "why": latest.why.get(name) if latest else None,
        }
        for name in names
    ]
    if identifiers:
        for row in shares:
            team = row["team"]
            row["identifiers"] = {
                i: w for i, w in sorted(identifiers.items()) if config and config.team_for_share(i) == team
            }
    return {
        "queue": queue,
        "mode": mode,
        "schedulingPolicyArn": policy_arn,
        "lastRun": {
            "at": latest.at if latest else None,
            "tickId": latest.tick_id if latest else None,
            "planId": latest.plan_id if latest else None,
            "reason": latest.reason if latest else None,
            "applied": latest.applied if latest else None,
            "dryRun": latest.dry_run if latest else None,
        },
        "lastAppliedAt": state.last_applied_at if state is not None else None,
        "shares": shares,
    }


def _when(epoch: Any) -> str | None:
    return None if epoch is None else time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(epoch)))


def _print_current(view: dict[str, Any], output: Output) -> None:
    def table() -> None:
        label = "weightFactor" if view["mode"] == "fairshare" else "quota"
        rows = [
            (
                s.get("team") or s["share"],
                _setting_text(s["setting"]),
                s["target"],
                s["actual"],
                s["waiting"],
                (s["why"] or "")[:70],
            )
            for s in view["shares"]
        ]
        last = view["lastRun"]
        title = f"{view['queue']} ({view['mode']}); last run {_when(last.get('at'))}: {last.get('reason')}"
        print_table(title, ["team", label, "target", "actual", "waiting", "why"], rows)

    emit(view, output, table)


def _print_history(audits: list[PlanAudit], output: Output) -> None:
    def table() -> None:
        rows = []
        for a in audits:
            before, after, why = a.before, a.after, a.why
            for share in sorted(after):
                rows.append(
                    (
                        a.plan_id,
                        _when(a.plan.created_at),
                        a.kind,
                        a.status,
                        share,
                        _setting_text(before.get(share)),
                        _setting_text(after.get(share)),
                        why.get(share, "")[:60],
                    )
                )
        print_table(
            f"{len(audits)} audit records",
            ["plan", "created", "kind", "status", "share", "before", "after", "why"],
            rows,
        )

    emit([audit_item(a) for a in audits], output, table)


@app.command("shares")
def shares_command(
    history: Annotated[bool, typer.Option("--history", help="List the audit records, newest first.")] = False,
    rollback_id: Annotated[
        str | None,
        typer.Option("--rollback", help="Restore the before values of this plan id (from --history)."),
    ] = None,
    output: OutputOption = Output.TABLE,
    profile: Profile = None,
    region: Region = None,
    endpoint: Endpoint = None,
    stack_name: StackName = DEFAULT_STACK,
    table: TableName = None,
    queue: Annotated[str | None, typer.Option(help="GPU job queue (default: the stack's output).")] = None,
    config_path: Annotated[
        Path, typer.Option("--config", help="The shares config: which share identifiers make up each team.")
    ] = Path("config/shares.yaml"),
) -> None:
    """Show each share's weight or quota limits with target against actual; audit history; rollback."""
    target = Target(profile=profile, region=region, endpoint=endpoint, stack_name=stack_name)
    outputs = target.outputs() if not (table and queue) else {}
    root = target.root(table_name=table or outputs["JobsTableName"])
    store, batch = root.share_store, root.batch_policy
    job_queue = queue or outputs["GpuJobQueueName"]
    try:
        config = load_config(config_path) if config_path.exists() else None
        if rollback_id:
            # A rollback is asked for by hand and has no schedule tick to date it: the one rebalancer
            # path the wall clock decides (its audit and the cooldown it starts are stamped now).
            outcome = rollback(
                rollback_id, time.time(), RebalanceSettings(job_queue=job_queue), batch, store, config
            )
            result = {"action": outcome.action, "reason": outcome.reason, "planId": outcome.plan_id}
            if outcome.plan is not None:
                result["changes"] = outcome.plan.to_audit()["changes"]
            if output is Output.JSON:
                print_json(result)
            else:
                Console().print(
                    f"rollback {outcome.action}: {outcome.reason} (audit record {outcome.plan_id})"
                )
            return
        if history:
            _print_history(store.audits(), output)
            return
        _print_current(current_shares(batch, job_queue, store.load_state(), config), output)
    except RejectedByServiceError:
        raise  # AWS refused a call: the CLI's error path gives that its own exit code
    except ShareplaneError as exc:
        print_error(exc)
        raise typer.Exit(2) from exc
