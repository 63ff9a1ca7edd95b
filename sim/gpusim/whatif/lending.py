"""The lend/payback ledger: who lent its idle entitlement to whom, and who was paid back, over time.

One rule (``shareplane.domain.shares.lending.loans``, which the rebalancer's credits design counts by
too) for every caller: the what-if's meter integrates it over a replay in GPUs, the demo over what it
observed in instances. ``Lending`` integrates it per report bucket, so the totals
are the last points of the cumulative series by construction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import accumulate
from typing import Any

from shareplane.domain.shares.lending import loans


def spread(buckets: list[float], width: float, value: float, t0: float, t1: float) -> None:
    """Add ``value`` x time over [t0, t1] to the buckets of ``width`` seconds it crosses (the last one
    takes whatever lies past the end)."""
    last = len(buckets) - 1
    b = min(int(t0 / width), last)
    # The bucket index moves on every step, so float rounding at a boundary cannot stall it.
    while t0 < t1:
        stop = t1 if b >= last else min(t1, (b + 1) * width)
        if stop > t0:
            buckets[b] += value * (stop - t0)
            t0 = stop
        b += 1


class Lending:
    """Each team's capacity lent to the others and paid back to it (``loans``), integrated over time
    (unit-seconds) per bucket of ``width`` seconds from its own clock's 0.

    ``lent`` and ``paid_back`` are the totals, the last points of ``lent_series`` and
    ``paid_back_series`` (cumulative at each bucket's end); ``paid_back_share`` is a team's paid back
    over its lent, None when it lent nothing, above 1 when it borrowed more than it lent.
    """

    def __init__(self, entitled: Sequence[int], buckets: int = 1, width: float = math.inf) -> None:
        self.entitled = list(entitled)
        self.width = width
        self.t = 0.0
        self.lent_by_bucket = [[0.0] * buckets for _ in self.entitled]
        self.paid_back_by_bucket = [[0.0] * buckets for _ in self.entitled]

    def advance(self, held: Sequence[int], dt: float) -> None:
        """``held`` units per team throughout the next ``dt`` seconds."""
        if dt <= 0:
            return
        t0, self.t = self.t, self.t + dt
        lent, paid_back = loans(held, self.entitled)
        for i, (lends, is_paid) in enumerate(zip(lent, paid_back, strict=True)):
            if lends:
                spread(self.lent_by_bucket[i], self.width, lends, t0, self.t)
            elif is_paid:
                spread(self.paid_back_by_bucket[i], self.width, is_paid, t0, self.t)

    def lent_series(self, i: int) -> list[float]:
        """Team ``i``'s unit-seconds lent by the end of each bucket."""
        return list(accumulate(self.lent_by_bucket[i]))

    def paid_back_series(self, i: int) -> list[float]:
        """Team ``i``'s unit-seconds paid back by the end of each bucket."""
        return list(accumulate(self.paid_back_by_bucket[i]))

    @property
    def lent(self) -> list[float]:
        """Each team's unit-seconds lent over the whole run."""
        return [self.lent_series(i)[-1] for i in range(len(self.entitled))]

    @property
    def paid_back(self) -> list[float]:
        """Each team's unit-seconds paid back over the whole run."""
        return [self.paid_back_series(i)[-1] for i in range(len(self.entitled))]

    def paid_back_share(self, i: int) -> float | None:
        """What team ``i`` was paid back over what it lent; None when it lent nothing."""
        lent = self.lent_series(i)[-1]
        return self.paid_back_series(i)[-1] / lent if lent > 0 else None


#: At most this many points of each series in the JSON output: the series are cumulative, so fewer
#: points lose no GPU-hour, only where in between it was lent.
LEDGER_JSON_POINTS = 50


def ledger_json(
    bucket_hours: float,
    lent: Mapping[str, Sequence[float]],
    paid_back: Mapping[str, Sequence[float]],
    unit: str,
    points: int = LEDGER_JSON_POINTS,
) -> dict[str, Any]:
    """The ledger in compact JSON: the hours since the start at which it is read (every few buckets'
    ends, always the last), and per team what it had lent and been paid back by then, in ``unit``
    (``lent_<unit>``, ``paid_back_<unit>``; the balance is lent minus paid back)."""
    length = max((len(s) for s in lent.values()), default=0)
    step = max(1, math.ceil(length / points))
    ends = list(range(step - 1, length, step))
    if length and (not ends or ends[-1] != length - 1):
        ends.append(length - 1)
    return {
        "hours": [round((k + 1) * bucket_hours, 3) for k in ends],
        f"lent_{unit}": {team: [round(s[k], 3) for k in ends] for team, s in lent.items()},
        f"paid_back_{unit}": {team: [round(s[k], 3) for k in ends] for team, s in paid_back.items()},
    }
