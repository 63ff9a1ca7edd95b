"""What AWS Batch says about a queue's shares: what each holds now, and the settings it runs by.

``QueueUsage`` is GetJobQueueSnapshot's utilization (the top shares by usage, per fair-share
identifier or per quota share); ``QuotaShare`` is one ListQuotaShares entry; ``SchedulingPolicy`` is
one DescribeSchedulingPolicies item. The Batch adapter reads them off the API's answers
(``adapters/batch_policy.py``); the rebalancer plans on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..config.shares import SchedulingMode
from ..errors import InvalidInputError
from ..instance_types.capacity import Capacity
from .fairshare import DEFAULT_WEIGHT, ShareWeight
from .rebalance import QuotaSettings, RebalancePlan

__all__ = ["IdentifierUsage", "QueueUsage", "QuotaShare", "SchedulingPolicy"]


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


def plan_to_update_scheduling_policy(plan: RebalancePlan, current_policy: SchedulingPolicy) -> dict[str, Any]:
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
    distribution: list[dict[str, Any]] = [
        {"shareIdentifier": w.share_identifier, "weightFactor": w.weight_factor}
        for w in current_policy.weights
    ]
    index = {entry["shareIdentifier"]: i for i, entry in enumerate(distribution)}
    for change in plan.moved:
        if change.share in index:
            distribution[index[change.share]]["weightFactor"] = change.after
            continue
        prefixes = [
            entry["shareIdentifier"]
            for entry in distribution
            if entry["shareIdentifier"].endswith("*")
            and change.share.startswith(entry["shareIdentifier"][:-1])
        ]
        if prefixes:
            raise InvalidInputError(
                f"shareDistribution.{change.share}",
                f"is covered by the prefix entry {prefixes[0]!r}",
                "replace the prefix entry with one entry per share identifier",
            )
        distribution.append({"shareIdentifier": change.share, "weightFactor": change.after})
        index[change.share] = len(distribution) - 1
    fairshare: dict[str, Any] = {}
    if current_policy.share_decay_seconds is not None:
        fairshare["shareDecaySeconds"] = current_policy.share_decay_seconds
    if current_policy.compute_reservation is not None:
        fairshare["computeReservation"] = current_policy.compute_reservation
    fairshare["shareDistribution"] = distribution
    return {"arn": current_policy.arn, "fairsharePolicy": fairshare}
