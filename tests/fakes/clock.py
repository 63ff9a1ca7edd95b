"""A settable clock, the ``clock`` every use case's ports take."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Clock:
    """A settable clock."""

    now: float = 1773722900.0

    def __call__(self) -> float:
        return self.now


#: Where the worlds' functions read the clock when triggers are delivered: after every trigger the
#: tests date (March 2026), as a Lambda receives a tick or an event after its time.
DELIVERED = 1_776_000_000.0  # 2026-04-12


def delivery_clock() -> Clock:
    """The clock of a function that receives the tests' triggers after their time."""
    return Clock(DELIVERED)
