"""`shareplane shares`: the GPU queue's weights or quota limits, target vs actual, the latest plan, audit
trail, rollback."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from shareplane.adapters.batch_policy import BatchPolicyAdapter
from shareplane.domain.config.shares import SchedulingMode, SharesConfig
from shareplane.domain.errors import RejectedByServiceError, ShareplaneError
from shareplane.domain.explain.durations import relative_text
from shareplane.domain.shares.ownership import Setting, baseline_settings, setting_to_state
from shareplane.domain.shares.rebalance import UNLIMITED_BORROW, QuotaSettings, team_weights
from shareplane.domain.shares.state import PlanAudit, SharesState
from shareplane.service.rebalance_shares import RebalanceSettings, current_weights, rollback

from ..aws import DEFAULT_TARGET, JOBS_TABLE_OUTPUT, Target, account_options
from ..config_file import DEFAULT_CONFIG, config_option, load_config
from ..main import app
from ..output import Output, OutputOption, emit, print_error, print_json, print_table, stdout_console

#: A setting as JSON shows it: a weight, or a quota share's UpdateQuotaShare fields.
SettingJson = float | dict[str, Any]


def _setting_text(setting: Setting | SettingJson | None) -> str:
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
    settings: dict[str, SettingJson]
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
            identifiers = {w.share_identifier: w.weight_factor for w in weights}
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


def _when(epoch: float | None) -> str | None:
    return None if epoch is None else time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(epoch)))


def _print_current(view: dict[str, Any], output: Output, now: float) -> None:
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
        at = last.get("at")
        ago = "" if at is None else f" ({relative_text(float(at) - now)})"
        title = f"{view['queue']} ({view['mode']}); last run {_when(at)}{ago}: {last.get('reason')}"
        print_table(title, ["team", label, "target", "actual", "waiting", "why"], rows)

    emit(view, output, table)


@dataclass(frozen=True)
class AuditView:
    """One audit record as ``--history -o json`` prints it: the plan's moves and how it went."""

    plan_id: str
    tick_id: str
    #: plan | restore | rollback
    kind: str
    #: PENDING | APPLIED | ADVISORY | DRY_RUN
    status: str
    queue: str
    mode: str
    created_at: float
    reason: str
    before: dict[str, SettingJson]
    after: dict[str, SettingJson]
    why: dict[str, str]
    actual: dict[str, float] | None
    waiting: dict[str, float] | None
    rollback_of: str | None
    applied_at: float | None

    @classmethod
    def of(cls, audit: PlanAudit) -> AuditView:
        """The view of a stored audit record."""
        plan = audit.plan
        return cls(
            plan_id=audit.plan_id,
            tick_id=audit.tick_id,
            kind=audit.kind,
            status=audit.status,
            queue=audit.queue,
            mode=plan.mode.value,
            created_at=plan.created_at,
            reason=plan.reason,
            before=_settings_json(audit.before),
            after=_settings_json(audit.after),
            why=audit.why,
            actual=_optional_dict(audit.actual),
            waiting=_optional_dict(audit.waiting),
            rollback_of=audit.rollback_of,
            applied_at=audit.applied_at,
        )

    def as_json(self) -> dict[str, object]:
        """Its fields by their JSON names (``planId``, ``rollbackOf``, ...)."""
        return {_camel(name): value for name, value in asdict(self).items()}


def _setting_json(setting: Setting) -> SettingJson:
    return setting.to_dict() if isinstance(setting, QuotaSettings) else setting


def _settings_json(settings: Mapping[str, Setting]) -> dict[str, SettingJson]:
    return {share: _setting_json(s) for share, s in settings.items()}


def _optional_dict(values: Mapping[str, float] | None) -> dict[str, float] | None:
    return None if values is None else dict(values)


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(word.capitalize() for word in rest)


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

    emit([AuditView.of(a).as_json() for a in audits], output, table)


#: The audit status of a plan that changed Batch (PENDING: written, its Batch call not yet confirmed).
APPLIED = "APPLIED"


def latest_plan(audit: PlanAudit | None, current: Mapping[str, Any]) -> dict[str, Any]:
    """The newest audited plan (advisory, dry run or applied) beside what Batch holds now.

    ``current`` is ``current_shares``' view: it gives each share's setting now and the last run (a run
    whose plan was empty records none, so the last run may be newer than the plan).
    """
    now = {row["share"]: row for row in current["shares"]}
    view: dict[str, Any] = {
        "queue": current["queue"],
        "mode": current["mode"],
        "lastRun": current["lastRun"],
        "plan": None,
        "shares": [],
    }
    if audit is None:
        return view
    plan = audit.plan
    applied = audit.status == APPLIED
    view["plan"] = {
        "planId": audit.plan_id,
        "tickId": audit.tick_id,
        "kind": audit.kind,
        "status": audit.status,
        "applied": applied,
        "createdAt": plan.created_at,
        "appliedAt": audit.applied_at,
        "reason": plan.reason,
    }
    changes = {c.share: c for c in plan.changes}
    actual, waiting = audit.actual or {}, audit.waiting or {}
    for name in sorted(set(changes) | set(plan.targets)):
        change = changes.get(name)
        moves = change is not None and change.moved
        ledger = plan.ledger.get(name)
        view["shares"].append(
            {
                "share": name,
                "team": (now.get(name) or {}).get("team"),
                "current": (now.get(name) or {}).get("setting"),
                "before": _setting_json(change.before) if change else None,
                "proposed": _setting_json(change.after) if change else None,
                "moves": moves,
                "target": plan.targets.get(name),
                "actual": actual.get(name),
                "waiting": waiting.get(name),
                "ledgerBalance": ledger.balance if ledger is not None else None,
                # Per share: None where the plan leaves the share as it was.
                "applied": applied if moves else None,
                "why": change.why if change else None,
            }
        )
    return view


def _print_plan(view: dict[str, Any], output: Output, now: float) -> None:
    def table() -> None:
        plan = view["plan"]
        if plan is None:
            stdout_console().print(f"{view['queue']}: no plan recorded yet (an empty plan is not recorded)")
            return
        at = plan["createdAt"]
        done = "applied" if plan["applied"] else "not applied"
        title = (
            f"{view['queue']} ({view['mode']}); plan {plan['planId']} of {_when(at)}"
            f" ({relative_text(float(at) - now)}), {plan['status']}, {done}: {plan['reason']}"
        )
        rows = [
            (
                s.get("team") or s["share"],
                _setting_text(s["current"]),
                _setting_text(s["proposed"]) if s["moves"] else "-",
                s["target"],
                s["actual"],
                None if s["ledgerBalance"] is None else round(float(s["ledgerBalance"]), 2),
                None if s["applied"] is None else ("yes" if s["applied"] else "no"),
                (s["why"] or "")[:70],
            )
            for s in view["shares"]
        ]
        columns = ["team", "now", "proposed", "target", "actual", "ledger", "applied", "why"]
        print_table(title, columns, rows)

    emit(view, output, table)


@app.command("shares")
@account_options
def shares_command(
    history: Annotated[bool, typer.Option("--history", help="List the audit records, newest first.")] = False,
    plan: Annotated[
        bool,
        typer.Option(
            "--plan",
            help="The latest recorded plan (advisory or applied): per share its value now, the proposed one,"
            " target against actual, the ledger balance, why, and whether it was applied.",
        ),
    ] = False,
    rollback_id: Annotated[
        str | None,
        typer.Option("--rollback", help="Restore the before values of this plan id (from --history)."),
    ] = None,
    output: OutputOption = Output.TABLE,
    target: Target = DEFAULT_TARGET,
    queue: Annotated[str | None, typer.Option(help="GPU job queue (default: the stack's output).")] = None,
    config_path: Annotated[
        Path, config_option("The shares config: which share identifiers make up each team.")
    ] = DEFAULT_CONFIG,
) -> None:
    """Show each share's weight or quota limits with target against actual; the latest plan; audit
    history; rollback."""
    outputs = target.outputs() if not (target.table and queue) else {}
    root = target.root(table_name=target.table or outputs[JOBS_TABLE_OUTPUT])
    store, batch = root.share_store, root.batch_policy
    job_queue = queue or outputs["GpuJobQueueName"]
    try:
        config = load_config(config_path) if config_path.exists() else None
        if rollback_id:
            # A rollback is asked for by hand and has no schedule tick to date it: the one rebalancer
            # path the clock decides (its audit and the cooldown it starts are stamped with the cluster's
            # time now).
            outcome = rollback(
                rollback_id, target.now(), RebalanceSettings(job_queue=job_queue), batch, store, config
            )
            result = {"action": outcome.action, "reason": outcome.reason, "planId": outcome.plan_id}
            if outcome.plan is not None:
                result["changes"] = outcome.plan.to_audit()["changes"]
            if output is Output.JSON:
                print_json(result)
            else:
                stdout_console().print(
                    f"rollback {outcome.action}: {outcome.reason} (audit record {outcome.plan_id})"
                )
            return
        if history:
            _print_history(store.audits(), output)
            return
        current = current_shares(batch, job_queue, store.load_state(), config)
        if plan:
            newest = store.audits(limit=1)
            _print_plan(latest_plan(newest[0] if newest else None, current), output, target.now())
            return
        _print_current(current, output, target.now())
    except RejectedByServiceError:
        raise  # AWS refused a call: the CLI's error path gives that its own exit code
    except ShareplaneError as exc:
        print_error(exc)
        raise typer.Exit(2) from exc
