"""A settable clock, the ``clock`` every use case's ports take."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Clock:
    """A settable clock."""

    now: float = 1773722900.0

    def __call__(self) -> float:
        return self.now
