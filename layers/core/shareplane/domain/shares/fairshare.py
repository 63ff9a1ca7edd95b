"""AWS Batch fair-share math: weights, decayed usage, the next share to serve, the reserved fraction.

Pure functions of their arguments (time is a parameter), shared by the control plane and the
simulator so both read the same rules:

- ``weightFactor`` lower gets more: usage accrues as ``instances x weightFactor`` per second, and the
  share with the lowest standing (usage plus what its running jobs will add) is served next, so
  0.125 ends up with 8x the instances of 1.0.
- Usage decays exponentially with time constant ``shareDecaySeconds`` (0 means the 600 s minimum
  window). AWS does not document the decay curve; exponential is the choice here because it has a
  closed form for constant accrual (``accrue``), which keeps the simulator's hot loop cheap.
- ``computeReservation`` keeps ``(cr/100) ** activeShares`` of the capacity free for shares that are
  not active yet.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import InvalidInputError

MIN_DECAY_WINDOW_SECONDS = 600.0
MAX_DECAY_SECONDS = 604800
DEFAULT_WEIGHT = 1.0
MIN_WEIGHT = 0.0001
MAX_WEIGHT = 999.9999


@dataclass(frozen=True)
class ShareWeight:
    """One shareDistribution entry: an identifier (or a prefix ending in ``*``) and its weightFactor."""

    share_identifier: str
    weight_factor: float = DEFAULT_WEIGHT

    def __post_init__(self) -> None:
        if not MIN_WEIGHT <= self.weight_factor <= MAX_WEIGHT:
            raise InvalidInputError(
                "weightFactor",
                f"{self.weight_factor} is outside {MIN_WEIGHT}..{MAX_WEIGHT}",
                "use a weight between 0.0001 and 999.9999 (lower gets more capacity)",
            )

    def matches(self, share: str) -> bool:
        """Whether this entry applies to ``share`` (exactly, or by prefix when it ends in ``*``)."""
        if self.share_identifier.endswith("*"):
            return share.startswith(self.share_identifier[:-1])
        return share == self.share_identifier


def decay_window(share_decay_seconds: float) -> float:
    """The effective decay time constant: 0 means the 600 s minimum window."""
    if share_decay_seconds < 0 or share_decay_seconds > MAX_DECAY_SECONDS:
        raise InvalidInputError(
            "shareDecaySeconds", f"{share_decay_seconds} is outside 0..{MAX_DECAY_SECONDS}", "use 0..604800"
        )
    return float(share_decay_seconds) if share_decay_seconds > 0 else MIN_DECAY_WINDOW_SECONDS


def weight_for(share: str, distribution: Iterable[ShareWeight]) -> float:
    """The weightFactor of ``share``: an exact entry wins over a prefix, the longest prefix wins, else 1.0."""
    best: ShareWeight | None = None
    for entry in distribution:
        if entry.share_identifier == share:
            return entry.weight_factor
        if entry.matches(share) and (
            best is None or len(entry.share_identifier) > len(best.share_identifier)
        ):
            best = entry
    return best.weight_factor if best is not None else DEFAULT_WEIGHT


def decayed(usage: float, elapsed: float, window: float) -> float:
    """Usage ``elapsed`` seconds later with nothing running: exponential decay, time constant ``window``."""
    if elapsed <= 0 or usage == 0.0:
        return usage
    return usage * math.exp(-elapsed / window)


def accrue(usage: float, rate: float, elapsed: float, window: float) -> float:
    """Usage after ``elapsed`` seconds of accruing ``rate`` (instances x weight) per second while decaying.

    Closed form of du/dt = rate - u/window, so the result does not depend on how often it is called.
    """
    if elapsed <= 0:
        return usage
    keep = math.exp(-elapsed / window)
    return usage * keep + rate * window * (1.0 - keep)


def standing(usage: float, rate: float, window: float) -> float:
    """What the scheduler compares: decayed usage plus what the running jobs will add (``rate x window``).

    Counting the running jobs at once keeps several dispatches at one instant from all going to the
    share that was lowest before the first of them; at equilibrium usage equals ``rate x window``, so
    equal standings mean ``instances x weightFactor`` is equal across shares.
    """
    return usage + rate * window


def reserved_fraction(compute_reservation: int, active_shares: int) -> float:
    """Fraction of capacity held for inactive shares: ``(cr/100) ** activeShares`` (0 with cr 0)."""
    if not 0 <= compute_reservation <= 99:
        raise InvalidInputError(
            "computeReservation", f"{compute_reservation} is outside 0..99", "use a percentage from 0 to 99"
        )
    if compute_reservation == 0:
        return 0.0
    return (compute_reservation / 100.0) ** max(active_shares, 0)


def usable_capacity(max_capacity: int, compute_reservation: int, active_shares: int) -> int:
    """Instances the active shares may hold together: capacity minus the reservation.

    The reservation is rounded down to whole instances, so a small environment (say one instance)
    is never reserved entirely.
    """
    reserved = int(math.floor(max_capacity * reserved_fraction(compute_reservation, active_shares) + 1e-9))
    return max_capacity - reserved
