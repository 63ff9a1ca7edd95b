"""Capacity per instance type: how many instances of each type (Batch's capacity units) something holds.

What a share holds, waits for or is entitled to is a count per instance type; this value does the
arithmetic on such counts, so a type that is absent counts as zero without ``.get(unit, 0)`` at every
use.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["Capacity"]


@dataclass(frozen=True)
class Capacity:
    """Instances per instance type (or capacity unit); a type that is absent holds none."""

    units: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "units", MappingProxyType(dict(self.units)))

    @classmethod
    def of_pairs(cls, pairs: Iterable[tuple[str, float]]) -> Capacity:
        """The sum of ``(unit, quantity)`` pairs (a unit may repeat)."""
        total: dict[str, float] = {}
        for unit, quantity in pairs:
            total[unit] = total.get(unit, 0.0) + quantity
        return cls(total)

    def of(self, unit: str) -> float:
        """Instances of one type (0 when none)."""
        return self.units.get(unit, 0.0)

    @property
    def total(self) -> float:
        """Instances of every type together."""
        return float(sum(self.units.values()))

    def plus(self, unit: str, quantity: float) -> Capacity:
        """This capacity with ``quantity`` more instances of ``unit``."""
        return Capacity({**self.units, unit: self.of(unit) + quantity})

    def __add__(self, other: Capacity) -> Capacity:
        return Capacity.of_pairs([*self.units.items(), *other.units.items()])

    def __iter__(self) -> Iterator[str]:
        return iter(self.units)

    def as_dict(self) -> dict[str, float]:
        """A plain mapping (for the snapshot and audit shapes)."""
        return dict(self.units)
