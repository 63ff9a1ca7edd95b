"""The share rebalancer's metrics: names, units and their (low-cardinality) dimensions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

#: Dimensions of each rebalancer metric. Low cardinality only: the rebalancer plans per team (a
#: handful; at most 20 in quota mode), and WeightFactor is the team's (its identifiers' is this
#: times the tier multiplier) and Reason takes one of ``SKIP_REASON_VALUES``; plan ids are EMF
#: properties, never dimensions.
REBALANCE_METRIC_DIMENSIONS: Mapping[str, tuple[str, ...]] = {
    "TargetInstances": ("Queue", "Team"),
    "ActualInstances": ("Queue", "Team"),
    "WeightFactor": ("Queue", "Team"),
    "BorrowLimit": ("Queue", "Team"),
    "PlansApplied": ("Queue",),
    "PlansSkipped": ("Queue", "Reason"),
}

#: Every value the PlansSkipped Reason dimension can take.
SKIP_REASON_VALUES = (
    "cooldown",
    "deadband",
    "no_demand",
    "no_capacity",
    "unchanged",
    "dry_run",
    "advisory",
    "duplicate_tick",
)


@dataclass(frozen=True)
class ShareMetricEvent:
    """One rebalancer measurement; its dimensions come from ``REBALANCE_METRIC_DIMENSIONS``."""

    name: str
    value: float
    unit: str  # Count | None (a weight or a percent has no CloudWatch unit)

    def __post_init__(self) -> None:
        if self.name not in REBALANCE_METRIC_DIMENSIONS:
            raise ValueError(f"{self.name} is not a rebalancer metric; add it to REBALANCE_METRIC_DIMENSIONS")

    @property
    def dimensions(self) -> tuple[str, ...]:
        """The dimension names this metric is published under."""
        return REBALANCE_METRIC_DIMENSIONS[self.name]
