"""What AWS Batch says about a queue's shares, the settings it runs by, and the updates a plan makes.

``QueueUsage`` is GetJobQueueSnapshot's utilization (the top shares by usage, per fair-share
identifier or per quota share); ``QuotaShare`` is one ListQuotaShares entry; ``SchedulingPolicy`` is
one DescribeSchedulingPolicies item. The Batch adapter reads them off the API's answers
(``adapters/batch_policy.py``); the rebalancer plans on them. A plan is applied as a
``SchedulingPolicyUpdate`` (fair share) or one ``QuotaShareUpdate`` per quota share it moves, which
the adapter writes into UpdateSchedulingPolicy and UpdateQuotaShare requests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..config.shares import SchedulingMode
from ..errors import InvalidInputError
from ..instance_types.capacity import Capacity
from .fairshare import DEFAULT_WEIGHT, ShareWeight
from .rebalance import QuotaSettings, RebalancePlan, weight_factor

__all__ = [
    "IdentifierUsage",
    "QueueUsage",
    "QuotaShare",
    "QuotaShareUpdate",
    "SchedulingPolicy",
    "SchedulingPolicyUpdate",
    "plan_to_update_quota_share_requests",
    "plan_to_update_scheduling_policy",
]


@dataclass(frozen=True)
class IdentifierUsage:
    """What one share identifier (or quota share) holds, in the units Batch reports (NUM_INSTANCES too)."""

    identifier: str
    capacity: Capacity


@dataclass(frozen=True)
class QueueUsage:
    """A queue's top shares by usage, as GetJobQueueSnapshot lists them (at most 20 each)."""

    fairshare: tuple[IdentifierUsage, ...] = ()
    quota: tuple[IdentifierUsage, ...] = ()

    def top(self, mode: SchedulingMode) -> tuple[IdentifierUsage, ...]:
        """The list of the queue's scheduling mode."""
        return self.fairshare if mode is SchedulingMode.FAIRSHARE else self.quota


@dataclass(frozen=True)
class QuotaShare:
    """One quota share of a queue: its name, ARN and current settings."""

    name: str
    arn: str
    settings: QuotaSettings


@dataclass(frozen=True)
class SchedulingPolicy:
    """A scheduling policy: fair-share (decay, reservation and the weights in order) or quota-share."""

    arn: str
    mode: SchedulingMode = SchedulingMode.FAIRSHARE
    name: str | None = None
    share_decay_seconds: int | None = None
    compute_reservation: int | None = None
    #: shareDistribution in Batch's order (an identifier, or a prefix ending in ``*``).
    weights: tuple[ShareWeight, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SchedulingPolicy:
        """Read a DescribeSchedulingPolicies item (or an UpdateSchedulingPolicy request)."""
        if "arn" not in data:
            raise InvalidInputError(
                "current_policy.arn", "is missing", "pass the DescribeSchedulingPolicies item"
            )
        fair = data.get("fairsharePolicy") or {}
        return cls(
            arn=str(data["arn"]),
            mode=SchedulingMode.QUOTA if "quotaSharePolicy" in data else SchedulingMode.FAIRSHARE,
            name=data.get("name"),
            share_decay_seconds=fair.get("shareDecaySeconds"),
            compute_reservation=fair.get("computeReservation"),
            weights=tuple(
                ShareWeight(e["shareIdentifier"], float(e.get("weightFactor", DEFAULT_WEIGHT)))
                for e in fair.get("shareDistribution") or []
            ),
        )


@dataclass(frozen=True)
class SchedulingPolicyUpdate:
    """A fair-share policy's settings as an update writes them whole (Batch replaces what it is sent)."""

    arn: str
    share_decay_seconds: int | None
    compute_reservation: int | None
    #: shareDistribution in order: the policy's entries where they were, new shares after them.
    weights: tuple[ShareWeight, ...]


@dataclass(frozen=True)
class QuotaShareUpdate:
    """One quota share's new settings."""

    quota_share_arn: str
    settings: QuotaSettings


def plan_to_update_scheduling_policy(
    plan: RebalancePlan, current_policy: SchedulingPolicy
) -> SchedulingPolicyUpdate:
    """The UpdateSchedulingPolicy request that applies a fair-share plan to the current policy.

    ``current_policy`` is the policy as Batch describes it. Entries the plan
    does not move (including prefix entries ending in ``*``) are kept as they are, in their order;
    shares without an entry are appended. A share covered by a prefix entry cannot get its own entry
    (AWS rejects overlapping identifiers), so that is an error.
    """
    if plan.mode is not SchedulingMode.FAIRSHARE:
        raise InvalidInputError(
            "plan.mode", f"is {plan.mode.value}", "build UpdateQuotaShare requests instead"
        )
    weights = {w.share_identifier: w.weight_factor for w in current_policy.weights}
    for change in plan.moved:
        if change.share not in weights:
            prefixes = [p for p in weights if p.endswith("*") and change.share.startswith(p[:-1])]
            if prefixes:
                raise InvalidInputError(
                    f"shareDistribution.{change.share}",
                    f"is covered by the prefix entry {prefixes[0]!r}",
                    "replace the prefix entry with one entry per share identifier",
                )
        # A dict keeps its first insertion's place: a moved entry stays where it was, a new one is last.
        weights[change.share] = weight_factor(change.after)
    return SchedulingPolicyUpdate(
        arn=current_policy.arn,
        share_decay_seconds=current_policy.share_decay_seconds,
        compute_reservation=current_policy.compute_reservation,
        weights=tuple(ShareWeight(share, weight) for share, weight in weights.items()),
    )


def plan_to_update_quota_share_requests(plan: RebalancePlan) -> list[QuotaShareUpdate]:
    """One UpdateQuotaShare request per quota share the plan moves, in share-name order."""
    if plan.mode is not SchedulingMode.QUOTA:
        raise InvalidInputError("plan.mode", f"is {plan.mode.value}", "build UpdateSchedulingPolicy instead")
    requests = []
    for change in sorted(plan.moved, key=lambda c: c.share):
        if not change.quota_share_arn:
            raise InvalidInputError(
                f"shares.{change.share}.quota_share_arn",
                "is missing",
                "put the quota share ARN in the snapshot",
            )
        if not isinstance(change.after, QuotaSettings):
            raise InvalidInputError(
                f"changes.{change.share}.after", "is not quota settings", "plan in quota mode"
            )
        requests.append(QuotaShareUpdate(change.quota_share_arn, change.after))
    return requests
