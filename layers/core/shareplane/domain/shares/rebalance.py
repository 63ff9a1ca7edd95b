"""The share rebalancer's pure policy: an immutable ``ShareSnapshot`` in, a ``RebalancePlan`` out.

Weights and quota limits typed once go stale as team demand moves. On a schedule, the rebalancer
reads a snapshot of the queue (capacity, each share's entitlement, demand and use, the lend/borrow
ledger, each tier's wait p90 against its SLO), decides here, and an adapter applies the plan. As in
Kueue: snapshot, decide, apply; nothing here reads a clock or modifies its input.

The rules, in order:

1. **Ledger** (``update_ledger``). Over the interval since the last update, a share *borrows* while it
   holds instances above its entitlement, and a share *lends* while it holds fewer than
   ``min(entitlement, demand)``, i.e. while it has work waiting for capacity it is entitled to.
   Idle capacity nobody else wanted is free: lending to a cluster where the lender has no waiting
   work credits nothing, and borrowing out of unentitled capacity costs nothing. The hours lent and
   borrowed on an instance type are equal (the ledger is zero-sum), counted in GPU-hours, and
   balances decay with a half-life so old favours fade.
2. **Targets** (``target_allocation``). Per instance type, weighted max-min fair allocation of the
   capacity over demand: a share first gets ``min(demand, entitlement)``, then the rest is
   water-filled by weight (entitlement x ledger nudge x SLO boost), never above demand, and the
   total is ``min(capacity, total demand)``.
3. **Ledger nudge**: a share's water-filling weight is multiplied by ``1 + n * tanh(balance / scale)``
   (``n`` = ``ledger_nudge``; ``scale`` = the GPU-hours an equal split of the cluster earns a share
   in one half-life), so a team that lent a lot gets a slightly larger share of the surplus.
4. **SLO boost**: a share with work waiting in a tier whose wait p90 is above its SLO gets its
   water-filling weight multiplied by ``slo_boost_factor``.
5. **Fair-share mode**, by ``RebalanceConfig.design``. ``demand_targets``: ``weightFactor_i =
   max_j(target_j) / target_i`` (lower gets more), so the best-served share has 1.0. ``credits``
   (Karma's credits, Vuppalapati et al., OSDI 2023, mapped onto weights): the ledger counts what
   others borrow of a share's idle entitlement whether or not it waits (``credit_rates``), the scale
   is ``credit_scale_hours`` of the share's own entitlement, and ``weightFactor_i = max_j(E_j f_j) /
   (E_i f_i)`` with ``E`` the entitlement and ``f`` the favour (ledger nudge x SLO boost): a lender
   keeps its favour until it is paid back, whatever the demand is at the instant. ``owed_credits``:
   the same weights over the ledger of rule 1 (credited only while the share waits), so a team is
   paid back what it was owed rather than what it left idle. Either way the result is then bounded
   by the per-share or global bounds and the API range.
6. **Quota mode**: with ``manage_borrow_limit`` (off by default: a cap below what others leave idle
   only idles GPUs, since lenders get capacity back by preemption anyway), each LEND_AND_BORROW
   share's ``borrowLimit`` becomes the percent above its own limits that its target needs; each
   ``maxCapacity`` moves toward the target within
   ``[min_fraction, max_fraction] x entitlement``, never below what the share is running (lowering a
   limit under use would make the rebalancer a preemption source), and raises are only granted out of
   headroom so the shares' limits never add up to more than the capacity (or more than they did).
7. **Guard rails**: a value moves at most ``max_step`` per plan, relative and symmetric in log space
   (0.25 allows x1.25 or /1.25); bounds win over the step limit when the current value is already out
   of bounds; relative changes below ``deadband`` are dropped; no plan within ``cooldown_seconds`` of
   the last applied one; a share without demand keeps its settings (weights fitted to zero demand
   would starve it when work arrives).

Fair-share targets are summed over instance types in instances, the capacity unit Batch uses for
service jobs. ``ShareState.usage_history`` is Batch's own decayed usage: Batch already acts on it, so
the policy only carries it into the audit record.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from fractions import Fraction
from typing import Any

from ..config.shares import RebalanceConfig, RebalanceDesign, SchedulingMode, SharesConfig, Tier
from ..errors import InvalidInputError
from ..instance_types.capacity import Capacity
from .fairshare import ShareWeight, weight_for
from .lending import loans

WEIGHT_FACTOR_MIN = 0.0001
WEIGHT_FACTOR_MAX = 999.9999
UNLIMITED_BORROW = -1
_WEIGHT_DECIMALS = 4
_WEIGHT_SCALE: int = 10**_WEIGHT_DECIMALS  # annotated: int ** int is typed Any (a negative power is a float)

REASON_REBALANCED = "rebalanced"
REASON_COOLDOWN = "cooldown"
REASON_DEADBAND = "within deadband"
REASON_NO_DEMAND = "no demand"
REASON_NO_CAPACITY = "no capacity"
REASON_ROLLBACK = "rollback"


class SharingStrategy(StrEnum):
    """A quota share's resourceSharingConfiguration.strategy."""

    RESERVE = "RESERVE"
    LEND = "LEND"
    LEND_AND_BORROW = "LEND_AND_BORROW"


def _check_count(field_name: str, value: float) -> None:
    if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise InvalidInputError(field_name, f"{value!r} is not a finite number >= 0", "pass a count >= 0")


@dataclass(frozen=True)
class QuotaSettings:
    """A quota share's current settings: maxCapacity per instance type, strategy and borrowLimit."""

    capacity_limits: Mapping[str, int]
    strategy: SharingStrategy = SharingStrategy.LEND_AND_BORROW
    borrow_limit: int = UNLIMITED_BORROW

    def __post_init__(self) -> None:
        for unit, limit in self.capacity_limits.items():
            if not isinstance(limit, int) or limit < 1:
                raise InvalidInputError(
                    f"capacityLimits.{unit}", f"{limit!r} is not an integer >= 1", "use maxCapacity >= 1"
                )
        if not isinstance(self.borrow_limit, int) or self.borrow_limit < UNLIMITED_BORROW:
            raise InvalidInputError(
                "borrowLimit", f"{self.borrow_limit!r} is not -1 or a percent >= 0", "use -1 or 0..n"
            )

    def to_dict(self) -> dict[str, Any]:
        """The UpdateQuotaShare fields these settings stand for (also the audit shape)."""
        sharing: dict[str, Any] = {"strategy": self.strategy.value}
        # The API accepts borrowLimit only on LEND_AND_BORROW shares.
        if self.strategy is SharingStrategy.LEND_AND_BORROW:
            sharing["borrowLimit"] = self.borrow_limit
        return {
            "capacityLimits": [
                {"maxCapacity": self.capacity_limits[unit], "capacityUnit": unit}
                for unit in sorted(self.capacity_limits)
            ],
            "resourceSharingConfiguration": sharing,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QuotaSettings:
        """Read back the shape ``to_dict`` writes (an audit record or a DescribeQuotaShare answer)."""
        try:
            sharing = data["resourceSharingConfiguration"]
            return cls(
                capacity_limits={
                    lim["capacityUnit"]: int(lim["maxCapacity"]) for lim in data["capacityLimits"]
                },
                strategy=SharingStrategy(sharing["strategy"]),
                borrow_limit=int(sharing.get("borrowLimit", UNLIMITED_BORROW)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(
                "quota settings", f"cannot read {dict(data)!r}: {exc!r}", "pass capacityLimits and strategy"
            ) from exc


@dataclass(frozen=True)
class TierWait:
    """One priority tier's recent queue wait p90 against its SLO."""

    p90_seconds: float
    slo_seconds: float

    @property
    def breached(self) -> bool:
        """Whether the tier is waiting longer than it promises."""
        return self.p90_seconds > self.slo_seconds


@dataclass(frozen=True)
class ShareState:
    """One share as the snapshot saw it; instance counts per instance type (a mapping is read as one)."""

    name: str
    entitlement: Capacity
    demand: Capacity  # running + RUNNABLE instances
    in_use: Capacity  # running instances
    waiting_by_tier: Mapping[Tier, int] = field(default_factory=dict)  # RUNNABLE instances per tier
    usage_history: float = 0.0  # Batch's decayed usage, carried for the audit
    ledger_balance: float = 0.0  # GPU-hours lent minus borrowed, decayed
    weight_factor: float | None = None  # fair-share mode
    quota: QuotaSettings | None = None  # quota mode
    quota_share_arn: str | None = None  # quota mode, for UpdateQuotaShare

    def __post_init__(self) -> None:
        if not self.name:
            raise InvalidInputError("shares[].name", "is empty", "name the share identifier")
        for label in ("entitlement", "demand", "in_use"):
            counts = getattr(self, label)
            if not isinstance(counts, Capacity):
                object.__setattr__(self, label, Capacity(counts))
            for unit, value in getattr(self, label).items():
                _check_count(f"shares.{self.name}.{label}.{unit}", value)
        for unit, used in self.in_use.items():
            if used > self.demand.of(unit):
                raise InvalidInputError(
                    f"shares.{self.name}.in_use.{unit}",
                    f"{used} running is more than the demand {self.demand.of(unit)}",
                    "count running instances in demand too (demand = running + RUNNABLE)",
                )
        for tier, waiting in self.waiting_by_tier.items():
            _check_count(f"shares.{self.name}.waiting_by_tier.{tier}", waiting)
        if not math.isfinite(self.ledger_balance):
            raise InvalidInputError(f"shares.{self.name}.ledger_balance", "is not finite", "pass GPU-hours")
        if self.weight_factor is not None and not (
            WEIGHT_FACTOR_MIN <= self.weight_factor <= WEIGHT_FACTOR_MAX
        ):
            raise InvalidInputError(
                f"shares.{self.name}.weight_factor",
                f"{self.weight_factor} is outside {WEIGHT_FACTOR_MIN}..{WEIGHT_FACTOR_MAX}",
                "read the weightFactor from the scheduling policy",
            )

    @property
    def total_demand(self) -> float:
        """Instances wanted over all instance types."""
        return sum(self.demand.values())


@dataclass(frozen=True)
class ShareSnapshot:
    """Everything the rebalancer may look at, frozen at one instant (``now``, epoch seconds)."""

    now: float
    mode: SchedulingMode
    capacity: Mapping[str, int]  # instances per instance type
    shares: tuple[ShareState, ...]
    tiers: Mapping[Tier, TierWait] = field(default_factory=dict)
    last_applied_at: float | None = None  # when the last plan was applied, for the cooldown
    ledger_as_of: float | None = None  # when the ledger balances were last updated
    gpus_per_instance: Mapping[str, int] = field(default_factory=dict)  # missing types count 1

    def __post_init__(self) -> None:
        if not math.isfinite(self.now):
            raise InvalidInputError("now", f"{self.now!r} is not finite", "pass epoch seconds")
        for unit, cap in self.capacity.items():
            _check_count(f"capacity.{unit}", cap)
        names = [share.name for share in self.shares]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise InvalidInputError("shares", f"{duplicates} appear more than once", "list each share once")
        for share in self.shares:
            for label in ("entitlement", "demand", "in_use"):
                for unit in getattr(share, label):
                    if unit not in self.capacity:
                        raise InvalidInputError(
                            f"shares.{share.name}.{label}.{unit}",
                            "names an instance type the snapshot has no capacity for",
                            f"add it to capacity or use one of {sorted(self.capacity)}",
                        )
            if self.mode is SchedulingMode.FAIRSHARE and share.weight_factor is None:
                raise InvalidInputError(
                    f"shares.{share.name}.weight_factor", "is missing in fair-share mode", "pass its weight"
                )
            if self.mode is SchedulingMode.QUOTA and share.quota is None:
                raise InvalidInputError(
                    f"shares.{share.name}.quota", "is missing in quota mode", "pass its quota settings"
                )

    def share(self, name: str) -> ShareState:
        """The share called ``name``."""
        for share in self.shares:
            if share.name == name:
                return share
        raise InvalidInputError("share", f"{name!r} is not in the snapshot", f"use one of {self.names}")

    @property
    def names(self) -> list[str]:
        """Share names in a deterministic order."""
        return sorted(share.name for share in self.shares)


@dataclass(frozen=True)
class LedgerEntry:
    """One share's ledger after this interval: GPU-hours lent and borrowed, and the decayed balance."""

    lent: float
    borrowed: float
    balance: float


@dataclass(frozen=True)
class ShareChange:
    """One share's setting before and after the plan, and why (``before == after`` means held)."""

    share: str
    before: float | QuotaSettings  # weightFactor in fair-share mode
    after: float | QuotaSettings
    why: str
    quota_share_arn: str | None = None

    @property
    def moved(self) -> bool:
        """Whether applying the plan changes this share."""
        return self.before != self.after


@dataclass(frozen=True)
class RebalancePlan:
    """What to apply: every share's before/after/why, the targets behind it and the new ledger."""

    created_at: float
    mode: SchedulingMode
    changes: tuple[ShareChange, ...]
    reason: str  # "rebalanced", or why nothing moves ("cooldown", "within deadband", "no demand", ...)
    targets: Mapping[str, float] = field(default_factory=dict)  # instances per share, all types
    ledger: Mapping[str, LedgerEntry] = field(default_factory=dict)  # persist even when empty
    ledger_as_of: float | None = None

    @property
    def moved(self) -> tuple[ShareChange, ...]:
        """The changes that actually change something."""
        return tuple(change for change in self.changes if change.moved)

    @property
    def is_empty(self) -> bool:
        """Whether applying the plan would change nothing in AWS Batch."""
        return not self.moved

    def to_audit(self) -> dict[str, Any]:
        """A JSON-ready audit record of the plan; ``rollback_plan`` reads it back."""
        return {
            "createdAt": self.created_at,
            "mode": self.mode.value,
            "reason": self.reason,
            "changes": [
                {
                    "share": change.share,
                    "before": _setting_to_audit(change.before),
                    "after": _setting_to_audit(change.after),
                    "why": change.why,
                    "moved": change.moved,
                    **({"quotaShareArn": change.quota_share_arn} if change.quota_share_arn else {}),
                }
                for change in self.changes
            ],
            "targets": dict(self.targets),
            "ledger": {
                name: {"lent": e.lent, "borrowed": e.borrowed, "balance": e.balance}
                for name, e in self.ledger.items()
            },
            "ledgerAsOf": self.ledger_as_of,
        }


def _setting_to_audit(setting: float | QuotaSettings) -> Any:
    return setting.to_dict() if isinstance(setting, QuotaSettings) else setting


# ---------------------------------------------------------------------------------------------
# Water-filling


def _water_fill(
    amount: Fraction, caps: Mapping[str, Fraction], weights: Mapping[str, Fraction]
) -> dict[str, Fraction]:
    """Progressive filling: raise every share at ``weight x level`` until its cap; share what's left."""
    alloc = {name: Fraction(0) for name in caps}
    active = sorted(name for name in caps if caps[name] > 0 and weights[name] > 0)
    remaining = amount
    while active and remaining > 0:
        level = remaining / sum(weights[name] for name in active)
        saturated = [name for name in active if caps[name] - alloc[name] <= weights[name] * level]
        if not saturated:
            for name in active:
                alloc[name] += weights[name] * level
            break
        for name in saturated:
            remaining -= caps[name] - alloc[name]
            alloc[name] = caps[name]
        active = [name for name in active if name not in saturated]
    return alloc


def _as_fraction(field_name: str, value: float) -> Fraction:
    _check_count(field_name, value)
    return Fraction(value)


def target_allocation(
    capacity: float,
    demands: Mapping[str, float],
    weights: Mapping[str, float],
    guarantees: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Weighted max-min fair allocation of ``capacity`` over ``demands``, guarantees first.

    1. Every share gets ``min(demand, guarantee)``.
    2. The rest is water-filled by weight (a larger weight gets more) up to each share's demand.
    3. Zero-weight shares get only what the positive-weight shares cannot use, split equally.

    Never above demand; the total is ``min(capacity, total demand)``; exact (rational arithmetic)
    and independent of the mappings' order. Edge cases: a share with zero demand gets 0; when the
    guaranteed claims exceed the capacity (capacity < guarantees), the capacity is water-filled over
    those claims in proportion to each share's guarantee and nothing is left to share.
    """
    cap = _as_fraction("capacity", capacity)
    guarantees = guarantees or {}
    for label, mapping in (("weights", weights), ("guarantees", guarantees)):
        undemanded = sorted(set(mapping) - set(demands))
        if undemanded:
            raise InvalidInputError(
                label, f"{undemanded} have no demand entry", "give every share a demand (0 is fine)"
            )
    missing = sorted(set(demands) - set(weights))
    if missing:
        raise InvalidInputError(
            "weights", f"{missing} have no weight", "give every share a weight (0 is fine)"
        )
    demand = {name: _as_fraction(f"demands.{name}", value) for name, value in demands.items()}
    weight = {name: _as_fraction(f"weights.{name}", weights[name]) for name in demands}
    guarantee = {name: _as_fraction(f"guarantees.{name}", guarantees.get(name, 0)) for name in demands}

    claims = {name: min(demand[name], guarantee[name]) for name in demands}
    if sum(claims.values()) >= cap:
        alloc = _water_fill(cap, claims, guarantee)
        return {name: float(alloc[name]) for name in sorted(demands)}

    rest = cap - sum(claims.values())
    residual = {name: demand[name] - claims[name] for name in demands}
    extra = _water_fill(rest, residual, weight)
    leftover = rest - sum(extra.values())
    if leftover > 0:
        zero_weight = {name: residual[name] for name in demands if weight[name] == 0}
        extra.update(_water_fill(leftover, zero_weight, {name: Fraction(1) for name in zero_weight}))
    return {name: float(claims[name] + extra[name]) for name in sorted(demands)}


# ---------------------------------------------------------------------------------------------
# Ledger, nudge and SLO boost


def _gpus(snapshot: ShareSnapshot, unit: str) -> int:
    return snapshot.gpus_per_instance.get(unit, 1)


def ledger_interval_seconds(snapshot: ShareSnapshot, config: RebalanceConfig) -> float:
    """How long the current usage is credited for: since the last update, at most the configured cap."""
    if snapshot.ledger_as_of is None:
        return 0.0  # no previous update: nothing is known about the past interval
    return min(max(0.0, snapshot.now - snapshot.ledger_as_of), float(config.ledger_max_interval_seconds))


def lend_borrow_rates(snapshot: ShareSnapshot) -> dict[str, tuple[float, float]]:
    """GPUs each share is lending and borrowing right now: ``(lent, borrowed)``, zero-sum per type."""
    rates = {name: [0.0, 0.0] for name in snapshot.names}
    for unit in sorted(snapshot.capacity):
        over = {s.name: s.in_use.excess_over(s.entitlement, unit) for s in snapshot.shares}
        # Short of what it is owed: its entitlement, as far as it has work for it.
        short = {
            s.name: max(0, min(s.entitlement.of(unit), s.demand.of(unit)) - s.in_use.of(unit))
            for s in snapshot.shares
        }
        unentitled = max(0, snapshot.capacity[unit] - sum(s.entitlement.of(unit) for s in snapshot.shares))
        total_over, total_short = sum(over.values()), sum(short.values())
        # Borrowing comes out of unentitled capacity first; only the rest is held from a waiting owner.
        held = min(max(0, total_over - unentitled), total_short)
        if held <= 0:
            continue
        gpus = _gpus(snapshot, unit)
        for name in rates:
            rates[name][0] += held * short[name] / total_short * gpus
            rates[name][1] += held * over[name] / total_over * gpus
    return {name: (lent, borrowed) for name, (lent, borrowed) in rates.items()}


def credit_rates(snapshot: ShareSnapshot) -> dict[str, tuple[float, float]]:
    """Karma's rule: GPUs each share lends out of entitlement it leaves idle, and borrows beyond its own.

    Per instance type, ``lending.loans``: a share lends whether or not it has work waiting;
    unentitled capacity is borrowed first, from nobody. Zero-sum, as ``lend_borrow_rates``.
    """
    shares = sorted(snapshot.shares, key=lambda s: s.name)
    names = [s.name for s in shares]
    rates = {name: [0.0, 0.0] for name in names}
    for unit in sorted(snapshot.capacity):
        entitled = [s.entitlement.of(unit) for s in shares]
        unentitled = max(0, snapshot.capacity[unit] - sum(entitled))
        lent, borrowed = loans([s.in_use.of(unit) for s in shares], entitled, unentitled)
        gpus = _gpus(snapshot, unit)
        for name, out, back in zip(names, lent, borrowed, strict=True):
            rates[name][0] += out * gpus
            rates[name][1] += back * gpus
    return {name: (lent, borrowed) for name, (lent, borrowed) in rates.items()}


def update_ledger(snapshot: ShareSnapshot, config: RebalanceConfig) -> dict[str, LedgerEntry]:
    """Decay each balance by the half-life and add the GPU-hours lent minus borrowed this interval.

    What counts as lending is the design's: ``credit_rates`` for credits, else ``lend_borrow_rates``.
    """
    seconds = ledger_interval_seconds(snapshot, config)
    decay = 0.5 ** (seconds / config.ledger_half_life_seconds)
    hours = seconds / 3600.0
    rates = credit_rates if config.design is RebalanceDesign.CREDITS else lend_borrow_rates
    entries = {}
    for name, (lent_rate, borrowed_rate) in rates(snapshot).items():
        lent, borrowed = lent_rate * hours, borrowed_rate * hours
        balance = snapshot.share(name).ledger_balance * decay + lent - borrowed
        entries[name] = LedgerEntry(lent=lent, borrowed=borrowed, balance=balance)
    return entries


def ledger_scale_gpu_hours(snapshot: ShareSnapshot, config: RebalanceConfig) -> float:
    """The balance at which the nudge is about 3/4 of its maximum: one half-life of an equal split."""
    total_gpus = sum(cap * _gpus(snapshot, unit) for unit, cap in snapshot.capacity.items())
    shares = max(1, len(snapshot.shares))
    return total_gpus * (config.ledger_half_life_seconds / 3600.0) / shares


def _favour_scales(snapshot: ShareSnapshot, config: RebalanceConfig) -> dict[str, float]:
    """Each share's ledger scale: one shared scale, or (credit designs) hours of its own entitlement."""
    if not config.design.weighs_credits:
        shared = ledger_scale_gpu_hours(snapshot, config)
        return {name: shared for name in snapshot.names}
    return {
        share.name: config.credit_scale_hours
        * sum(count * _gpus(snapshot, unit) for unit, count in share.entitlement.items())
        for share in snapshot.shares
    }


def ledger_nudge(balance: float, scale: float, strength: float) -> float:
    """Water-filling weight multiplier in ``(1 - strength, 1 + strength)``: lenders up, borrowers down."""
    if scale <= 0 or strength == 0:
        return 1.0
    return 1.0 + strength * math.tanh(balance / scale)


def breached_tiers(share: ShareState, tiers: Mapping[Tier, TierWait]) -> list[Tier]:
    """Tiers over their wait SLO in which this share has work waiting (highest tier first)."""
    order = list(Tier)
    return sorted(
        (tier for tier, wait in tiers.items() if wait.breached and share.waiting_by_tier.get(tier, 0) > 0),
        key=order.index,
    )


@dataclass(frozen=True)
class _Target:
    per_type: Capacity
    multiplier: float
    boosted: tuple[Tier, ...]

    @property
    def total(self) -> float:
        return sum(self.per_type.values())


def _targets(
    snapshot: ShareSnapshot, config: RebalanceConfig, ledger: Mapping[str, LedgerEntry]
) -> dict[str, _Target]:
    scales = _favour_scales(snapshot, config)
    multiplier, boosted = {}, {}
    for share in snapshot.shares:
        tiers = tuple(breached_tiers(share, snapshot.tiers))
        boost = config.slo_boost_factor if tiers else 1.0
        nudge = ledger_nudge(ledger[share.name].balance, scales[share.name], config.ledger_nudge)
        multiplier[share.name] = nudge * boost
        boosted[share.name] = tiers
    per_type: dict[str, dict[str, float]] = {name: {} for name in snapshot.names}
    for unit in sorted(snapshot.capacity):
        alloc = target_allocation(
            snapshot.capacity[unit],
            {s.name: s.demand.of(unit) for s in snapshot.shares},
            {s.name: s.entitlement.of(unit) * multiplier[s.name] for s in snapshot.shares},
            {s.name: s.entitlement.of(unit) for s in snapshot.shares},
        )
        for name, value in alloc.items():
            per_type[name][unit] = value
    return {
        name: _Target(Capacity(per_type[name]), multiplier[name], boosted[name]) for name in snapshot.names
    }


# ---------------------------------------------------------------------------------------------
# Guard rails


def _quantize_weight(value: float, toward: float) -> float:
    """Round to the API's 4 decimals, toward ``toward`` so rounding never widens a step."""
    scaled = value * _WEIGHT_SCALE
    nearest = round(scaled)
    if math.isclose(scaled, nearest, rel_tol=0, abs_tol=1e-6):
        steps = nearest
    elif value > toward:
        steps = math.floor(scaled)
    else:
        steps = math.ceil(scaled)
    return min(WEIGHT_FACTOR_MAX, max(WEIGHT_FACTOR_MIN, steps / _WEIGHT_SCALE))


def _step_and_bound(before: float, wanted: float, low: float, high: float, max_step: float) -> float:
    """Move from ``before`` toward ``wanted`` by at most ``x(1+max_step)``; the bounds always win."""
    stepped = min(max(wanted, before / (1 + max_step)), before * (1 + max_step))
    return min(max(stepped, low), high)


def _within_deadband(before: float, after: float, deadband: float) -> bool:
    return before > 0 and abs(after / before - 1) < deadband


def weight_bounds(share: str, config: RebalanceConfig) -> tuple[float, float]:
    """The weightFactor range a share may be given: its override, else the global one, within the API."""
    override = config.shares.get(share)
    low = override.weight_factor_min if override and override.weight_factor_min else config.weight_factor_min
    high = override.weight_factor_max if override and override.weight_factor_max else config.weight_factor_max
    return max(low, WEIGHT_FACTOR_MIN), min(high, WEIGHT_FACTOR_MAX)


def _describe(share: ShareState, target: _Target, ledger: LedgerEntry) -> str:
    parts = [
        f"target {target.total:.4g} instances "
        f"(entitled {sum(share.entitlement.values())}, demand {share.total_demand}, "
        f"running {sum(share.in_use.values())})"
    ]
    if target.boosted:
        parts.append("SLO boost for " + ", ".join(tier.value for tier in target.boosted))
    if ledger.balance:
        parts.append(f"ledger {ledger.balance:+.4g} GPU-h")
    return "; ".join(parts)


def _wanted_weights(
    snapshot: ShareSnapshot, config: RebalanceConfig, targets: Mapping[str, _Target]
) -> dict[str, float]:
    """The weightFactor each share with demand should have, by the design (lower gets more).

    demand_targets: ``best target / own target``, the best-served share at 1.0. credits and
    owed_credits: the share's entitlement x its favour (``_Target.multiplier``), the largest at 1.0,
    whatever the demand now.
    Missing when there is nothing to weigh (no capacity for the demand).
    """
    demanding = [name for name in snapshot.names if snapshot.share(name).total_demand > 0]
    if config.design.weighs_credits:
        claim = {
            name: sum(snapshot.share(name).entitlement.values()) * targets[name].multiplier
            for name in demanding
        }
    else:
        claim = {name: targets[name].total for name in demanding}
    best = max(claim.values(), default=0.0)
    if best <= 0:
        return {}
    return {name: best / value if value > 0 else math.inf for name, value in claim.items()}


def _fairshare_changes(
    snapshot: ShareSnapshot,
    config: RebalanceConfig,
    targets: Mapping[str, _Target],
    ledger: Mapping[str, LedgerEntry],
) -> list[ShareChange]:
    wanted_weights = _wanted_weights(snapshot, config, targets)
    changes = []
    for name in snapshot.names:
        share = snapshot.share(name)
        before = share.weight_factor
        assert before is not None  # checked by ShareSnapshot
        context = _describe(share, targets[name], ledger[name])
        if share.total_demand == 0:
            changes.append(ShareChange(name, before, before, f"{REASON_NO_DEMAND}: weight kept"))
            continue
        wanted = wanted_weights.get(name)
        if wanted is None:
            changes.append(ShareChange(name, before, before, f"{REASON_NO_CAPACITY}: weight kept"))
            continue
        low, high = weight_bounds(name, config)
        moved = _step_and_bound(before, min(max(wanted, low), high), low, high, config.max_step)
        after = _quantize_weight(moved, before)
        out_of_bounds = not low <= before <= high
        if not out_of_bounds and _within_deadband(before, after, config.deadband):
            label = "at target" if after == before else REASON_DEADBAND
            changes.append(ShareChange(name, before, before, f"{label}: {context}"))
            continue
        notes = [context, f"wants weightFactor {min(wanted, WEIGHT_FACTOR_MAX):.4f}"]
        if out_of_bounds:
            notes.append(f"brought into bounds {low}..{high}")
        elif after != _quantize_weight(min(max(wanted, low), high), before):
            notes.append(f"step-limited to x{1 + config.max_step:g}")
        changes.append(ShareChange(name, before, after, "; ".join(notes)))
    return changes


def _step_int(before: int, wanted: int, low: int, high: int, max_step: float, scale: float) -> int:
    """Integer step in the quantity ``scale + value`` (relative), at least 1 unit, bounds win."""
    base = scale + before
    up = max(before + 1, math.floor(base * (1 + max_step) - scale + 1e-9))
    down = min(before - 1, math.ceil(base / (1 + max_step) - scale - 1e-9))
    return min(max(min(max(wanted, down), up), low), high)


def _capacity_limits(
    share: ShareState,
    current: QuotaSettings,
    target: _Target,
    config: RebalanceConfig,
) -> dict[str, int]:
    limits = dict(current.capacity_limits)
    for unit, before in current.capacity_limits.items():
        entitled = share.entitlement.of(unit)
        if entitled == 0:
            continue  # a limit the config does not entitle is an operator's, not ours
        low = max(1, math.ceil(entitled * config.capacity_limit_min_fraction - 1e-9))
        high = max(low, math.floor(entitled * config.capacity_limit_max_fraction + 1e-9))
        wanted = min(max(round(target.per_type.of(unit)), low), high)
        after = _step_int(before, wanted, low, high, config.max_step, 0)
        if after < before:
            # Never below what runs now (in whole instances: a limit is a count).
            after = max(after, min(before, math.ceil(share.in_use.of(unit))))
        if low <= before <= high and _within_deadband(before, after, config.deadband):
            after = before
        limits[unit] = after
    return limits


def _grant_raises(
    snapshot: ShareSnapshot, before: Mapping[str, QuotaSettings], wanted: Mapping[str, dict[str, int]]
) -> dict[str, dict[str, int]]:
    """Trim limit raises to the headroom left under the capacity, in proportion, deterministically."""
    granted = {name: dict(limits) for name, limits in wanted.items()}
    for unit, cap in sorted(snapshot.capacity.items()):
        holders = [name for name in sorted(wanted) if unit in wanted[name]]
        base = {n: min(before[n].capacity_limits[unit], wanted[n][unit]) for n in holders}
        raises = {n: wanted[n][unit] - base[n] for n in holders if wanted[n][unit] > base[n]}
        # Headroom never shrinks below what the shares already had: the plan adds no overcommit.
        headroom = max(cap, sum(before[n].capacity_limits[unit] for n in holders)) - sum(base.values())
        total = sum(raises.values())
        if total <= headroom:
            continue
        shares = {n: raises[n] * max(0, headroom) // total for n in raises}
        spare = max(0, headroom) - sum(shares.values())
        for n in sorted(raises, key=lambda n: (-(raises[n] * headroom % total), n)):
            if spare <= 0:
                break
            shares[n] += 1
            spare -= 1
        for n in raises:
            granted[n][unit] = base[n] + shares[n]
    return granted


def _borrow_limit(
    current: QuotaSettings, limits: Mapping[str, int], target: _Target, config: RebalanceConfig
) -> int:
    before = current.borrow_limit
    if not config.manage_borrow_limit or current.strategy is not SharingStrategy.LEND_AND_BORROW:
        return before
    needed = max(
        (target.per_type.of(unit) / limit for unit, limit in limits.items() if limit > 0), default=0.0
    )
    wanted = min(max(math.ceil(100 * (needed - 1) - 1e-9), config.borrow_limit_min), config.borrow_limit_max)
    low, high = config.borrow_limit_min, config.borrow_limit_max
    if before == UNLIMITED_BORROW or not low <= before <= high:
        return wanted  # unlimited or out of bounds: the bounds win over the step
    # Steps are relative in the reach (100 + borrowLimit)%, so 0 can move and 200 is not fragile.
    after = _step_int(before, wanted, low, high, config.max_step, 100)
    if _within_deadband(100 + before, 100 + after, config.deadband):
        return before
    return after


def _quota_changes(
    snapshot: ShareSnapshot,
    config: RebalanceConfig,
    targets: Mapping[str, _Target],
    ledger: Mapping[str, LedgerEntry],
) -> list[ShareChange]:
    current = {s.name: s.quota for s in snapshot.shares if s.quota is not None}
    # Shares without demand keep their limits but still count against the headroom.
    wanted = {
        name: _capacity_limits(snapshot.share(name), current[name], targets[name], config)
        if snapshot.share(name).total_demand > 0
        else dict(current[name].capacity_limits)
        for name in snapshot.names
    }
    granted = _grant_raises(snapshot, current, wanted)
    changes = []
    for name in snapshot.names:
        share, before = snapshot.share(name), current[name]
        if share.total_demand == 0:
            changes.append(
                ShareChange(name, before, before, f"{REASON_NO_DEMAND}: quota kept", share.quota_share_arn)
            )
            continue
        limits = granted[name]
        after = replace(
            before, capacity_limits=limits, borrow_limit=_borrow_limit(before, limits, targets[name], config)
        )
        context = _describe(share, targets[name], ledger[name])
        if after == before:
            why = f"at target or {REASON_DEADBAND}: {context}"
        else:
            notes = [context]
            if after.borrow_limit != before.borrow_limit:
                notes.append(f"borrowLimit {before.borrow_limit} -> {after.borrow_limit}")
            notes += [
                f"maxCapacity {unit} {before.capacity_limits[unit]} -> {limits[unit]}"
                for unit in sorted(limits)
                if limits[unit] != before.capacity_limits[unit]
            ]
            why = "; ".join(notes)
        changes.append(ShareChange(name, before, after, why, share.quota_share_arn))
    return changes


def _held(snapshot: ShareSnapshot, why: str) -> tuple[ShareChange, ...]:
    held = []
    for share in sorted(snapshot.shares, key=lambda s: s.name):
        setting = share.weight_factor if snapshot.mode is SchedulingMode.FAIRSHARE else share.quota
        assert setting is not None  # checked by ShareSnapshot
        held.append(ShareChange(share.name, setting, setting, why, share.quota_share_arn))
    return tuple(held)


def plan_rebalance(snapshot: ShareSnapshot, config: RebalanceConfig | SharesConfig) -> RebalancePlan:
    """Decide new weightFactors (fair-share) or quota limits (quota) for a snapshot; pure."""
    rules = config.rebalance if isinstance(config, SharesConfig) else config
    ledger = update_ledger(snapshot, rules)
    targets = _targets(snapshot, rules, ledger)

    def plan(changes: Sequence[ShareChange], reason: str) -> RebalancePlan:
        return RebalancePlan(
            created_at=snapshot.now,
            mode=snapshot.mode,
            changes=tuple(changes),
            reason=reason,
            targets={name: targets[name].total for name in snapshot.names},
            ledger=ledger,
            ledger_as_of=snapshot.now,
        )

    if (
        snapshot.last_applied_at is not None
        and snapshot.now - snapshot.last_applied_at < rules.cooldown_seconds
    ):
        wait = rules.cooldown_seconds - (snapshot.now - snapshot.last_applied_at)
        return plan(
            _held(snapshot, f"{REASON_COOLDOWN}: last plan applied {wait:.0f}s too recently"), REASON_COOLDOWN
        )
    if all(share.total_demand == 0 for share in snapshot.shares):
        return plan(_held(snapshot, f"{REASON_NO_DEMAND}: nothing running or waiting"), REASON_NO_DEMAND)
    if all(targets[name].total == 0 for name in snapshot.names):
        return plan(_held(snapshot, f"{REASON_NO_CAPACITY}: no capacity for the demand"), REASON_NO_CAPACITY)
    if snapshot.mode is SchedulingMode.FAIRSHARE:
        changes = _fairshare_changes(snapshot, rules, targets, ledger)
    else:
        changes = _quota_changes(snapshot, rules, targets, ledger)
    reason = REASON_REBALANCED if any(change.moved for change in changes) else REASON_DEADBAND
    return plan(changes, reason)


# ---------------------------------------------------------------------------------------------
# Request shapes and rollback


def _api_weight(value: float) -> float:
    return min(WEIGHT_FACTOR_MAX, max(WEIGHT_FACTOR_MIN, round(value, _WEIGHT_DECIMALS)))


def _team_identifiers(config: SharesConfig) -> dict[str, list[tuple[str, float]]]:
    """Team share -> [(identifier, tier multiplier)] (team_tier layout).

    Own-tier identifiers come first, largest multiplier first, the team's plain identifier last: the
    plain identifier's weight carries the tier charge (``domain.tier_charge``), so the team's weight
    is read from an own-tier identifier.
    """
    out: dict[str, list[tuple[str, float]]] = {}
    for identifier, key in sorted(config.share_keys.items()):
        multiplier = config.tiers[key.tier].weight_multiplier if key.tier else 1.0
        out.setdefault(config.teams[key.team].share, []).append((identifier, multiplier))
    plain = {team.share for team in config.teams.values()}
    for pairs in out.values():
        pairs.sort(key=lambda pair: (pair[0] in plain, -pair[1]))
    return out


def team_weights(config: SharesConfig, weights: Sequence[ShareWeight]) -> list[ShareWeight]:
    """A policy's weights as one weightFactor per team share, the unit the rebalancer plans in.

    In the team_tier layout a team's weight is an own-tier identifier's weight divided by the tier's
    multiplier, read from the own tier with the largest multiplier (its 4-decimal weight lost least
    to rounding; the plain identifier carries the tier charge). A team with no entry for that
    identifier yet (a queue not migrated) keeps the weight of its team share's entry. In the team
    layout the weights are the teams' already.
    """
    if not config.tiered_shares:
        return list(weights)
    out = []
    for share, identifiers in sorted(_team_identifiers(config).items()):
        identifier, multiplier = identifiers[0]
        if any(w.matches(identifier) for w in weights):
            value = weight_for(identifier, weights) / multiplier
        else:
            value = weight_for(share, weights)
        out.append(ShareWeight(share, _api_weight(value)))
    return out


def identifier_plan(plan: RebalancePlan, config: SharesConfig) -> RebalancePlan:
    """A fair-share plan over teams as one over share identifiers: team weight x tier multiplier.

    The rebalancer plans per team; in the team_tier layout each of a team's identifiers gets the
    team's new weight times its tier's ``weight_multiplier`` (the team's bounds held already, the
    API's range is held here). Any other plan, or a change that names no team's share, is unchanged.
    """
    if plan.mode is not SchedulingMode.FAIRSHARE or not config.tiered_shares:
        return plan
    identifiers = _team_identifiers(config)
    changes: list[ShareChange] = []
    for change in plan.changes:
        if change.share not in identifiers:
            changes.append(change)
            continue
        for identifier, multiplier in sorted(identifiers[change.share]):
            before, after = weight_factor(change.before), weight_factor(change.after)
            changes.append(
                replace(
                    change,
                    share=identifier,
                    before=_api_weight(before * multiplier),
                    after=_api_weight(after * multiplier),
                )
            )
    return replace(plan, changes=tuple(changes))


def weight_factor(setting: float | QuotaSettings) -> float:
    """A fair-share setting as a weight factor; quota settings have none (TypeError, as float() raised)."""
    if isinstance(setting, QuotaSettings):
        raise TypeError("a fair-share plan holds weight factors, not quota settings")
    return float(setting)


def _setting_from_audit(mode: SchedulingMode, share: str, value: Any) -> float | QuotaSettings:
    if mode is SchedulingMode.QUOTA:
        if not isinstance(value, Mapping):
            raise InvalidInputError(
                f"changes.{share}.before", "is not quota settings", "pass a quota audit record"
            )
        return QuotaSettings.from_dict(value)
    if not isinstance(value, int | float) or not WEIGHT_FACTOR_MIN <= value <= WEIGHT_FACTOR_MAX:
        raise InvalidInputError(
            f"changes.{share}.before", f"{value!r} is not a weightFactor", "pass a weight"
        )
    return float(value)


def plan_from_audit(audit: Mapping[str, Any]) -> RebalancePlan:
    """The plan ``RebalancePlan.to_audit`` wrote, read back whole (a PENDING plan is re-applied from it)."""
    try:
        mode = SchedulingMode(audit["mode"])

        def setting(value: Any) -> float | QuotaSettings:
            return QuotaSettings.from_dict(value) if mode is SchedulingMode.QUOTA else float(value)

        changes = tuple(
            ShareChange(
                c["share"],
                setting(c["before"]),
                setting(c["after"]),
                c.get("why", ""),
                c.get("quotaShareArn"),
            )
            for c in audit["changes"]
        )
        ledger = {
            name: LedgerEntry(float(e["lent"]), float(e["borrowed"]), float(e["balance"]))
            for name, e in (audit.get("ledger") or {}).items()
        }
        as_of = audit.get("ledgerAsOf")
        return RebalancePlan(
            created_at=float(audit["createdAt"]),
            mode=mode,
            changes=changes,
            reason=str(audit["reason"]),
            targets={share: float(v) for share, v in (audit.get("targets") or {}).items()},
            ledger=ledger,
            ledger_as_of=None if as_of is None else float(as_of),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(
            "plan", f"is not a plan audit record ({exc!r})", "pass RebalancePlan.to_audit() output"
        ) from exc


def rollback_plan(audit_before: Mapping[str, Any], now: float | None = None) -> RebalancePlan:
    """The plan that restores the ``before`` values of an audited plan (``RebalancePlan.to_audit``).

    A rollback is an explicit restore: it skips the step limit, deadband and cooldown, and leaves the
    ledger alone. It restores only the shares the audited plan moved.
    """
    try:
        mode = SchedulingMode(audit_before["mode"])
        created_at = float(audit_before["createdAt"])
        records = list(audit_before["changes"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(
            "audit_before", f"is not a plan audit record ({exc!r})", "pass RebalancePlan.to_audit() output"
        ) from exc
    changes = []
    for record in sorted(records, key=lambda r: r["share"]):
        share = record["share"]
        before = _setting_from_audit(mode, share, record["before"])
        after = _setting_from_audit(mode, share, record["after"])
        if before == after:
            continue
        changes.append(
            ShareChange(
                share,
                before=after,
                after=before,
                why=f"{REASON_ROLLBACK} of the plan created at {created_at:.0f}",
                quota_share_arn=record.get("quotaShareArn"),
            )
        )
    return RebalancePlan(
        created_at=created_at if now is None else now,
        mode=mode,
        changes=tuple(changes),
        reason=REASON_ROLLBACK if changes else f"{REASON_ROLLBACK}: the audited plan moved nothing",
    )
