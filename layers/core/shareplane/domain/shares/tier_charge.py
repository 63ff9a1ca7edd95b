"""A team's own-share tiers are charged to the team, so HIGHPRI priority does not grow its entitlement.

In the team_tier layout a team's HIGHPRI jobs run under an identifier of their own. Batch computes
a fair-share percentage for each share identifier from its own usage
(https://docs.aws.amazon.com/batch/latest/userguide/fair-share-scheduling.html), so
the team's plain identifier never pays for the HIGHPRI work: a team with much HIGHPRI work would
then get its entitlement on the plain identifier *plus* its HIGHPRI GPU-hours, at the expense of the
other teams (docs/design/share-layout.md has what the what-if measured without the charge).

The charge makes the plain identifier accrue usage as if it had run the team's own-tier work too.
Batch accrues ``instances x weightFactor`` per second, so multiplying the plain identifier's weight
by ``(own + plain) / plain``, the ratio of the team's decayed instance-seconds on all its identifiers
to those on the plain one, charges exactly that, with the same memory as Batch's own usage (the
queue's decay window). Nothing here is fitted to a trace: the factor is a measured ratio.

The own-tier identifiers keep ``team weight x tier multiplier``: they still win dispatch across
teams, which is the point of the layout; the team pays for it on its other work.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import InvalidInputError
from .fairshare import accrue
from .rebalance import WEIGHT_FACTOR_MAX, WEIGHT_FACTOR_MIN


@dataclass(frozen=True)
class TeamTierUsage:
    """A team's decayed instance-seconds on its own-tier identifiers and on its plain identifier."""

    own: float = 0.0
    plain: float = 0.0

    def __post_init__(self) -> None:
        for name in ("own", "plain"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise InvalidInputError(
                    f"tier_usage.{name}", f"{value!r} is not a non-negative number", "pass instance-seconds"
                )

    def accrue(self, own_in_use: float, plain_in_use: float, elapsed: float, window: float) -> TeamTierUsage:
        """Usage ``elapsed`` seconds later, with these instances held throughout (Batch's decay)."""
        return TeamTierUsage(
            own=accrue(self.own, own_in_use, elapsed, window),
            plain=accrue(self.plain, plain_in_use, elapsed, window),
        )

    @property
    def charge(self) -> float:
        """The plain identifier's weight multiplier: all the team's usage over its plain usage.

        1.0 while the team has no plain usage yet: there is nothing to charge the HIGHPRI work to,
        and a huge weight would starve the first plain job.
        """
        if self.plain <= 0:
            return 1.0
        return (self.own + self.plain) / self.plain


def charged_plain_weights(
    team_weights: Mapping[str, float],
    plain_weights: Mapping[str, float],
    usage: Mapping[str, TeamTierUsage],
) -> dict[str, float]:
    """The plain identifiers to re-weigh: team weight x charge, where its 4-decimal value changed.

    ``team_weights`` and ``plain_weights`` are keyed by the team's share (its plain identifier), as
    set now; a team missing from either is left alone. No deadband: the charge moves slowly (its
    memory is the decay window), so following it exactly costs at most one UpdateSchedulingPolicy
    per run, and the rebalancer's deadband made it lag (docs/design/share-layout.md, "The tier
    charge", has the seed where it missed the team-ratio target).
    """
    out: dict[str, float] = {}
    for share, tier_usage in sorted(usage.items()):
        if share not in team_weights or share not in plain_weights:
            continue
        charged = round(team_weights[share] * tier_usage.charge, 4)
        after = min(WEIGHT_FACTOR_MAX, max(WEIGHT_FACTOR_MIN, charged))
        if after != plain_weights[share]:
            out[share] = after
    return out
