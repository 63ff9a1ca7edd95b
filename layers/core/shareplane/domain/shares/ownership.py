"""Who owns a share's setting: the template its baseline, the rebalancer the value in force.

CloudFormation creates the scheduling policy and the quota shares with the config's baseline (the
weights and limits ``shareplane config render`` writes into the template), and on any stack update
that touches them it writes that baseline again: UpdateSchedulingPolicy replaces the whole
``shareDistribution``, UpdateQuotaShare the share's limits. The rebalancer, meanwhile, has moved
them. So the two do not fight, each owns one thing:

- the template owns the **baseline**: what a new stack starts from, and what an operator changes
  by editing the config;
- the rebalancer owns the **value in force**. Every value it applies is kept in its state item with
  the baseline it was applied over (``overrides``). When a run finds a share back at its baseline
  while the baseline is unchanged, a stack update put it back: the run restores its value first.

A deliberate change wins over the rebalancer's memory: when the config's baseline of a share is not
the one its override was applied over, the new baseline stands and the override is dropped; so is
an override whose share someone set to a third value by hand (the rebalancer then plans from what it
finds, as it always has).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..config.shares import SchedulingMode, SharesConfig
from .fairshare import ShareWeight
from .rebalance import (
    QuotaSettings,
    RebalancePlan,
    ShareChange,
    SharingStrategy,
    team_weights,
)

#: The audit reason (and plan kind) of a restore.
REASON_RESTORED = "restored after a stack update"

Setting = float | QuotaSettings


def baseline_settings(config: SharesConfig) -> dict[str, Setting]:
    """Each team share's setting as the template renders it, in the unit the rebalancer plans in.

    Fair-share: the team's weight, read back from the rendered identifiers' weights exactly as a run
    reads the live policy (so a reset policy compares equal). Quota: the team's quota share.
    """
    if config.mode is SchedulingMode.FAIRSHARE:
        rendered = [ShareWeight(i, config.share_weight_factor(i)) for i in sorted(config.share_keys)]
        teams = {team.share for team in config.teams.values()}
        return {
            w.share_identifier: w.weight_factor
            for w in team_weights(config, rendered)
            if w.share_identifier in teams
        }
    out: dict[str, Setting] = {}
    for team in config.teams.values():
        limits = {unit: count for unit, count in team.entitlement.items() if count > 0}
        if not limits:
            continue  # the render refuses such a team in quota mode
        out[team.share] = QuotaSettings(
            capacity_limits=limits,
            strategy=SharingStrategy(team.quota.strategy),
            **({"borrow_limit": team.quota.borrow_limit} if team.quota.strategy == "LEND_AND_BORROW" else {}),
        )
    return out


def same_setting(a: Setting | None, b: Setting | None) -> bool:
    """Equal as Batch holds them: quota settings field by field, weights within their rounding.

    Batch keeps 4 decimals; a team weight read back from an identifier whose multiplier is below 1
    (team_tier) carries that rounding divided by the multiplier, hence the relative tolerance.
    """
    if isinstance(a, QuotaSettings) or isinstance(b, QuotaSettings):
        return a == b
    if a is None or b is None:
        return a is b
    return math.isclose(float(a), float(b), rel_tol=1e-3, abs_tol=0.00005 + 1e-9)


def setting_to_state(setting: Setting) -> Any:
    """The state item's shape of a setting (a number, or the UpdateQuotaShare fields)."""
    return setting.to_dict() if isinstance(setting, QuotaSettings) else float(setting)


def setting_from_state(mode: SchedulingMode, value: Any) -> Setting:
    """Read back ``setting_to_state``."""
    return QuotaSettings.from_dict(value) if mode is SchedulingMode.QUOTA else float(value)


@dataclass(frozen=True)
class Ownership:
    """A run's verdict: what to restore, and which overrides the rebalancer still holds."""

    restore: RebalancePlan
    overrides: dict[str, dict[str, Any]]  # share -> {"setting": ..., "baseline": ...} (state shape)
    dropped: dict[str, str]  # share -> why its override was let go


def reconcile(
    *,
    now: float,
    mode: SchedulingMode,
    overrides: Mapping[str, Mapping[str, Any]],
    live: Mapping[str, Setting],
    baseline: Mapping[str, Setting],
    quota_share_arns: Mapping[str, str] | None = None,
    ledger_as_of: float | None = None,
) -> Ownership:
    """Compare the values the rebalancer applied with what Batch holds, share by share.

    ``overrides`` is the state item's record of applied values (each with the baseline it was
    applied over), ``live`` what Batch holds now, ``baseline`` what the template renders now. A share
    at its unchanged baseline instead of the override is restored; see the module doc for the rest.
    """
    arns = quota_share_arns or {}
    changes: list[ShareChange] = []
    kept: dict[str, dict[str, Any]] = {}
    dropped: dict[str, str] = {}
    for share in sorted(overrides):
        entry = overrides[share]
        applied = setting_from_state(mode, entry["setting"])
        applied_over = setting_from_state(mode, entry["baseline"])
        now_base = baseline.get(share)
        held = live.get(share)
        if now_base is None or held is None:
            dropped[share] = "the share is no longer in the config or in Batch"
        elif not same_setting(applied_over, now_base):
            dropped[share] = "the config's baseline changed since the rebalancer applied its value"
        elif same_setting(held, applied):
            kept[share] = dict(entry)
        elif same_setting(held, now_base):
            changes.append(
                ShareChange(
                    share,
                    held,
                    applied,
                    f"a stack update reset it to the template's baseline {_show(now_base)}; "
                    f"restored the rebalancer's {_show(applied)}",
                    arns.get(share),
                )
            )
            kept[share] = dict(entry)
        else:
            dropped[share] = f"set to {_show(held)} outside the rebalancer; planning from that value"
    plan = RebalancePlan(
        created_at=now, mode=mode, changes=tuple(changes), reason=REASON_RESTORED, ledger_as_of=ledger_as_of
    )
    return Ownership(restore=plan, overrides=kept, dropped=dropped)


def record_applied(
    overrides: Mapping[str, Mapping[str, Any]], plan: RebalancePlan, baseline: Mapping[str, Setting]
) -> dict[str, dict[str, Any]]:
    """The overrides after ``plan`` was applied: each moved share's new value over today's baseline."""
    out = {share: dict(entry) for share, entry in overrides.items()}
    for change in plan.moved:
        if change.share in baseline:
            out[change.share] = {
                "setting": setting_to_state(change.after),
                "baseline": setting_to_state(baseline[change.share]),
            }
    return out


def _show(setting: Setting) -> str:
    if isinstance(setting, QuotaSettings):
        limits = ", ".join(f"{u} {c}" for u, c in sorted(setting.capacity_limits.items()))
        return f"({limits}; {setting.strategy.value}, borrowLimit {setting.borrow_limit})"
    return f"{float(setting):g}"
