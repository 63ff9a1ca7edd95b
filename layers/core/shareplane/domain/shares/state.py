"""What the rebalancer keeps between runs (its state) and of each plan (its audit record), as values.

The state carries the ledger and decayed usage forward from one tick to the next, says which tick ran
last (a redelivered tick is recognised by it) and which plan was applied last (a run that died before
its Batch call is finished from that plan's record). How both are laid out in the table is the share
store adapter's business (``adapters/share_items.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..config.shares import SchedulingMode
from .rebalance import QuotaSettings, RebalancePlan
from .tier_charge import TeamTierUsage

__all__ = ["LatestRun", "PlanAudit", "PlanRef", "ShareAccount", "SharesState"]


@dataclass(frozen=True)
class ShareAccount:
    """One team share's carried-forward numbers: its ledger balance and decayed usage."""

    balance: float = 0.0
    usage: float = 0.0
    #: Decayed own-tier and plain usage (the team_tier layout's tier charge); None outside it.
    tier_usage: TeamTierUsage | None = None


@dataclass(frozen=True)
class LatestRun:
    """The newest run: what it decided, and the targets and measurements it decided on."""

    at: float
    tick_id: str
    plan_id: str
    reason: str
    applied: bool
    dry_run: bool
    targets: Mapping[str, float] = field(default_factory=dict)
    actual: Mapping[str, float] = field(default_factory=dict)
    waiting: Mapping[str, float] = field(default_factory=dict)
    why: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PlanRef:
    """Where a plan's audit record is: its creation time and id."""

    created_at: float
    plan_id: str


@dataclass(frozen=True)
class SharesState:
    """The rebalancer's state after its last run; ``version`` guards racing writers."""

    version: int
    queue: str | None = None
    mode: SchedulingMode | None = None
    ledger_as_of: float | None = None
    usage_as_of: float | None = None
    shares: Mapping[str, ShareAccount] = field(default_factory=dict)
    last_tick: str | None = None
    latest: LatestRun | None = None
    #: When a plan was last applied (the cooldown runs from it), and which one.
    last_applied_at: float | None = None
    last_plan: PlanRef | None = None
    #: The values the rebalancer holds in force over the template's baseline, in
    #: ``share_ownership``'s shape (share -> {"setting", "baseline"}); None: none recorded yet.
    overrides: Mapping[str, Mapping[str, Any]] | None = None

    def account(self, share: str) -> ShareAccount:
        """A share's carried-forward numbers (zeros for a share not seen before)."""
        return self.shares.get(share) or ShareAccount()


@dataclass(frozen=True)
class PlanAudit:
    """One plan's audit record: the plan (before, after and why of each share), and how it went."""

    plan_id: str
    tick_id: str
    #: plan | restore | rollback
    kind: str
    #: PENDING (written ahead of the Batch call) | APPLIED | ADVISORY | DRY_RUN
    status: str
    queue: str
    plan: RebalancePlan
    #: What the run measured beside the plan (instances held and waiting per share).
    actual: Mapping[str, float] | None = None
    waiting: Mapping[str, float] | None = None
    #: The plan a rollback restores.
    rollback_of: str | None = None
    applied_at: float | None = None

    @property
    def ref(self) -> PlanRef:
        """Where this record is."""
        return PlanRef(self.plan.created_at, self.plan_id)

    @property
    def before(self) -> dict[str, float | QuotaSettings]:
        """The setting of each share the plan moves, before it."""
        return {c.share: c.before for c in self.plan.moved}

    @property
    def after(self) -> dict[str, float | QuotaSettings]:
        """The setting of each share the plan moves, after it."""
        return {c.share: c.after for c in self.plan.moved}

    @property
    def why(self) -> dict[str, str]:
        """Why each moved share moves."""
        return {c.share: c.why for c in self.plan.moved}
