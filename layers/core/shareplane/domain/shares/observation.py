"""What the rebalancer observed, typed once: a ``QueueObservation`` in, the ``ShareSnapshot`` out.

The Lambda (``service/rebalance_shares.observe``: Batch's snapshot and the jobs table) and the
what-if simulator (``gpusim.whatif``: its meter) measure the queue from different sources, but both
fill in the same ``QueueObservation`` and call ``snapshot_from_observation``, so every derived
figure the policy looks at (demand, waiting instances, each tier's wait p90) follows one rule:

- **demand** per instance type = instances in use (rounded up: Batch reports fractional quantities)
  + instances waiting;
- **tier wait p90** = the larger of the p90 of the waits of jobs that first started in the window
  and the p90 of the ages of *every* job still waiting (a tier where nothing starts would otherwise
  look healthy exactly when it starves); a tier with neither has no entry (nothing to judge).

``percentile`` is the one percentile convention of the project (nearest rank), used by the Lambda,
the simulator's metrics, the replay summary and the demo summary alike.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..config.shares import SchedulingMode, Tier
from ..errors import InvalidInputError
from ..instance_types.capacity import Capacity
from .rebalance import QuotaSettings, ShareSnapshot, ShareState, TierWait

#: Batch reports in-use quantities as floats; this much above an integer still counts as that integer.
_ROUNDING_SLACK = 1e-9


def percentile(values: Iterable[float], q: float) -> float | None:
    """Nearest-rank percentile: the smallest value with at least ``q`` of the values at or below it.

    ``q`` is a fraction in (0, 1]; the answer is always one of the values (never interpolated), at
    sorted index ``ceil(q * n) - 1``. So the p90 of ten values is the 9th smallest, the p50 of four is
    the 2nd, and the p95 of fewer than 20 values is the largest. ``None`` when there are no values.
    """
    if not 0 < q <= 1:
        raise InvalidInputError("q", f"{q!r} is not a fraction in (0, 1]", "pass e.g. 0.9 for the p90")
    ordered = sorted(values)
    if not ordered:
        return None
    return float(ordered[max(0, math.ceil(q * len(ordered) - 1e-12) - 1)])


@dataclass(frozen=True)
class ShareObservation:
    """One share as measured: instances per instance type, settings in Batch, stored balances."""

    name: str
    entitlement: Mapping[str, int]
    in_use: Mapping[str, float]  # instances running now (fractional as Batch reports them)
    waiting: Mapping[str, int] = field(default_factory=dict)  # instances RUNNABLE per instance type
    waiting_by_tier: Mapping[Tier, int] = field(default_factory=dict)  # instances RUNNABLE per tier
    usage_history: float = 0.0
    ledger_balance: float = 0.0
    weight_factor: float | None = None  # fair-share mode
    quota: QuotaSettings | None = None  # quota mode
    quota_share_arn: str | None = None


@dataclass(frozen=True)
class TierObservation:
    """One tier's raw waits: first-start waits in the window, and the ages of jobs still waiting."""

    slo_seconds: float
    recent_waits: Sequence[float] = ()  # seconds, jobs that first started within the wait window
    waiting_ages: Sequence[float] = ()  # seconds since submission, every job of the tier still waiting


@dataclass(frozen=True)
class QueueObservation:
    """Everything measured about one queue at ``now``; ``snapshot_from_observation`` derives the rest."""

    now: float
    mode: SchedulingMode
    capacity: Mapping[str, int]  # instances per instance type
    shares: tuple[ShareObservation, ...]
    tiers: Mapping[Tier, TierObservation] = field(default_factory=dict)
    last_applied_at: float | None = None
    ledger_as_of: float | None = None
    gpus_per_instance: Mapping[str, int] = field(default_factory=dict)


def tier_wait(tier: TierObservation) -> TierWait | None:
    """A tier's wait p90 against its SLO: max(p90 of recent waits, p90 of current waiters' ages)."""
    p90s = [
        p for p in (percentile(tier.recent_waits, 0.9), percentile(tier.waiting_ages, 0.9)) if p is not None
    ]
    if not p90s:
        return None
    return TierWait(p90_seconds=max(p90s), slo_seconds=float(tier.slo_seconds))


def instances_held(in_use: Mapping[str, float]) -> Capacity:
    """Whole instances in use per instance type: Batch's fractional quantities rounded up."""
    return Capacity({unit: math.ceil(q - _ROUNDING_SLACK) for unit, q in in_use.items()})


def snapshot_from_observation(observation: QueueObservation) -> ShareSnapshot:
    """The rebalancer's ``ShareSnapshot`` for an observation; pure, the observation is not modified."""
    states = []
    for share in observation.shares:
        held = instances_held(share.in_use)
        units = sorted(set(held) | set(share.waiting))
        states.append(
            ShareState(
                name=share.name,
                entitlement=Capacity(share.entitlement),
                demand=Capacity({u: held.of(u) + share.waiting.get(u, 0) for u in units}),
                in_use=held,
                waiting_by_tier={t: n for t, n in share.waiting_by_tier.items() if n > 0},
                usage_history=share.usage_history,
                ledger_balance=share.ledger_balance,
                weight_factor=share.weight_factor,
                quota=share.quota,
                quota_share_arn=share.quota_share_arn,
            )
        )
    tiers = {}
    for name in sorted(observation.tiers):
        wait = tier_wait(observation.tiers[name])
        if wait is not None:
            tiers[name] = wait
    return ShareSnapshot(
        now=observation.now,
        mode=observation.mode,
        capacity=dict(observation.capacity),
        shares=tuple(states),
        tiers=tiers,
        last_applied_at=observation.last_applied_at,
        ledger_as_of=observation.ledger_as_of,
        gpus_per_instance=dict(observation.gpus_per_instance),
    )
