"""What AWS Batch says about a queue's shares: what each holds now, and each quota share's settings.

``QueueUsage`` is GetJobQueueSnapshot's utilization (the top shares by usage, per fair-share
identifier or per quota share); ``QuotaShare`` is one ListQuotaShares entry. The Batch adapter reads
them off the API's answers (``adapters/batch_policy.py``); the rebalancer plans on them.
"""

from __future__ import annotations

from dataclasses import dataclass

from .capacity import Capacity
from .config import SchedulingMode
from .rebalance import QuotaSettings

__all__ = ["IdentifierUsage", "QueueUsage", "QuotaShare"]


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
