"""The stored layout of the rebalancer's state item and audit records, and their values back.

Plain Python values (the DynamoDB marshalling is ``dynamodb_items``'): the share store on the table and
its in-memory fake both store these items. Members whose value is None are not stored.

State (``SHARES`` / ``LEDGER``)::

    version queue mode ledgerAsOf usageAsOf lastTick lastAppliedAt lastPlan{createdAt planId}
    shares{<share>{balance usage ownTierUsage plainUsage}} overrides{<share>{setting baseline}}
    latest{at tickId planId reason applied dryRun targets actual waiting why}

Audit record (``SHARES`` / ``AUDIT#<ts>#<planId>``)::

    planId tickId kind status queue mode createdAt reason before after why plan actual waiting
    rollbackOf appliedAt

``plan`` is ``RebalancePlan.to_audit()``; ``before``, ``after`` and ``why`` repeat the moved shares
for people reading the table (``shareplane shares --history``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..domain.config.shares import SchedulingMode
from ..domain.shares.rebalance import QuotaSettings, plan_from_audit
from ..domain.shares.state import LatestRun, PlanAudit, PlanRef, ShareAccount, SharesState
from ..domain.shares.tier_charge import TeamTierUsage

#: The ``entity`` of an audit record.
AUDIT_ENTITY = "shares_audit"


def _present(item: Mapping[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in item.items() if value is not None}


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


def _setting(value: float | QuotaSettings) -> Any:
    return value.to_dict() if isinstance(value, QuotaSettings) else value


# -- state ----------------------------------------------------------------------------------------
def state_item(state: SharesState) -> dict[str, Any]:
    """The attributes of the state item (without its keys)."""
    latest = state.latest
    return _present(
        {
            "version": state.version,
            "queue": state.queue,
            "mode": state.mode.value if state.mode else None,
            "ledgerAsOf": state.ledger_as_of,
            "usageAsOf": state.usage_as_of,
            "shares": {name: _account_item(account) for name, account in state.shares.items()},
            "lastTick": state.last_tick,
            "latest": None
            if latest is None
            else {
                "at": latest.at,
                "tickId": latest.tick_id,
                "planId": latest.plan_id,
                "reason": latest.reason,
                "applied": latest.applied,
                "dryRun": latest.dry_run,
                "targets": dict(latest.targets),
                "actual": dict(latest.actual),
                "waiting": dict(latest.waiting),
                "why": dict(latest.why),
            },
            "lastAppliedAt": state.last_applied_at,
            "lastPlan": None
            if state.last_plan is None
            else {"createdAt": state.last_plan.created_at, "planId": state.last_plan.plan_id},
            "overrides": None
            if state.overrides is None
            else {share: dict(entry) for share, entry in state.overrides.items()},
        }
    )


def _account_item(account: ShareAccount) -> dict[str, Any]:
    usage = account.tier_usage
    tiers = {} if usage is None else {"ownTierUsage": usage.own, "plainUsage": usage.plain}
    return {"balance": account.balance, "usage": account.usage, **tiers}


def state_from_item(item: Mapping[str, Any]) -> SharesState:
    """The state a state item stores (members it lacks read as empty)."""
    latest = item.get("latest")
    last_plan = item.get("lastPlan")
    mode = item.get("mode")
    return SharesState(
        version=int(item.get("version") or 0),
        queue=item.get("queue"),
        mode=SchedulingMode(mode) if mode else None,
        ledger_as_of=_float_or_none(item.get("ledgerAsOf")),
        usage_as_of=_float_or_none(item.get("usageAsOf")),
        shares={name: _account_from_item(entry) for name, entry in (item.get("shares") or {}).items()},
        last_tick=str(item["lastTick"]) if item.get("lastTick") is not None else None,
        latest=None
        if not latest
        else LatestRun(
            at=float(latest.get("at") or 0),
            tick_id=str(latest.get("tickId") or ""),
            plan_id=str(latest.get("planId") or ""),
            reason=str(latest.get("reason") or ""),
            applied=bool(latest.get("applied")),
            dry_run=bool(latest.get("dryRun")),
            targets={k: float(v) for k, v in (latest.get("targets") or {}).items()},
            actual={k: float(v) for k, v in (latest.get("actual") or {}).items()},
            waiting={k: float(v) for k, v in (latest.get("waiting") or {}).items()},
            why={k: str(v) for k, v in (latest.get("why") or {}).items()},
        ),
        last_applied_at=_float_or_none(item.get("lastAppliedAt")),
        last_plan=None if not last_plan else PlanRef(float(last_plan["createdAt"]), str(last_plan["planId"])),
        overrides=None if item.get("overrides") is None else dict(item["overrides"]),
    )


def _account_from_item(entry: Mapping[str, Any]) -> ShareAccount:
    tiered = "ownTierUsage" in entry or "plainUsage" in entry
    return ShareAccount(
        balance=float(entry.get("balance", 0.0)),
        usage=float(entry.get("usage", 0.0)),
        tier_usage=TeamTierUsage(float(entry.get("ownTierUsage", 0.0)), float(entry.get("plainUsage", 0.0)))
        if tiered
        else None,
    )


# -- audit ----------------------------------------------------------------------------------------
def audit_item(audit: PlanAudit) -> dict[str, Any]:
    """The attributes of an audit record (without its keys)."""
    plan = audit.plan
    return _present(
        {
            "entity": AUDIT_ENTITY,
            "planId": audit.plan_id,
            "tickId": audit.tick_id,
            "kind": audit.kind,
            "status": audit.status,
            "queue": audit.queue,
            "mode": plan.mode.value,
            "createdAt": plan.created_at,
            "reason": plan.reason,
            "before": {share: _setting(v) for share, v in audit.before.items()},
            "after": {share: _setting(v) for share, v in audit.after.items()},
            "why": audit.why,
            "plan": plan.to_audit(),
            "actual": None if audit.actual is None else dict(audit.actual),
            "waiting": None if audit.waiting is None else dict(audit.waiting),
            "rollbackOf": audit.rollback_of,
            "appliedAt": audit.applied_at,
        }
    )


def audit_from_item(item: Mapping[str, Any]) -> PlanAudit:
    """The audit record an item stores."""
    actual, waiting = item.get("actual"), item.get("waiting")
    return PlanAudit(
        plan_id=str(item["planId"]),
        tick_id=str(item.get("tickId") or ""),
        kind=str(item.get("kind") or "plan"),
        status=str(item["status"]),
        queue=str(item.get("queue") or ""),
        plan=plan_from_audit(item["plan"]),
        actual=None if actual is None else {k: float(v) for k, v in actual.items()},
        waiting=None if waiting is None else {k: float(v) for k, v in waiting.items()},
        rollback_of=item.get("rollbackOf"),
        applied_at=_float_or_none(item.get("appliedAt")),
    )
