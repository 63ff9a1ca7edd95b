"""Capacity per instance type: how many instances of each type (Batch's capacity units) something holds.

What a share holds, waits for or is entitled to is a count per instance type; this value does the
arithmetic on such counts, so a type that is absent counts as zero without ``.get(unit, 0)`` at every
use. It is a read-only mapping too, so code that only lists or sums the counts reads it as one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["Capacity"]


@dataclass(frozen=True, eq=False)
class Capacity(Mapping[str, float]):
    """Instances per instance type (or capacity unit); a type that is absent holds none.

    Equal to any mapping with the same counts (a plain dict included), as a mapping is.
    """

    units: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "units", MappingProxyType(dict(self.units)))

    @classmethod
    def of_pairs(cls, pairs: Iterable[tuple[str, float]]) -> Capacity:
        """The sum of ``(unit, quantity)`` pairs (a unit may repeat)."""
        total: dict[str, float] = {}
        for unit, quantity in pairs:
            # An int 0 to start from: whole counts stay ints (what a snapshot and its audit show).
            total[unit] = total.get(unit, 0) + quantity
        return cls(total)

    def of(self, unit: str) -> float:
        """Instances of one type (0 when none)."""
        return self.units.get(unit, 0)

    @property
    def total(self) -> float:
        """Instances of every type together."""
        return float(sum(self.units.values()))

    def plus(self, unit: str, quantity: float) -> Capacity:
        """This capacity with ``quantity`` more instances of ``unit`` (fewer when negative)."""
        return Capacity({**self.units, unit: self.of(unit) + quantity})

    def minus(self, unit: str, quantity: float) -> Capacity:
        """This capacity with ``quantity`` fewer instances of ``unit`` (it may go below zero)."""
        return self.plus(unit, -quantity)

    def excess_over(self, other: Capacity, unit: str) -> float:
        """Instances of ``unit`` held here beyond ``other``'s (0 when within it)."""
        return max(0, self.of(unit) - other.of(unit))

    def clipped(self, ceiling: Capacity) -> Capacity:
        """Each type's count capped at ``ceiling``'s (a type ``ceiling`` lacks is capped at 0)."""
        return Capacity({unit: min(quantity, ceiling.of(unit)) for unit, quantity in self.units.items()})

    def __add__(self, other: Capacity) -> Capacity:
        return Capacity.of_pairs([*self.units.items(), *other.units.items()])

    def __getitem__(self, unit: str) -> float:
        return self.units[unit]

    def __iter__(self) -> Iterator[str]:
        return iter(self.units)

    def __len__(self) -> int:
        return len(self.units)

    def __repr__(self) -> str:
        return f"Capacity({dict(self.units)!r})"

    def __reduce__(self) -> tuple[type[Capacity], tuple[dict[str, float]]]:
        # The read-only view cannot be pickled or deep-copied; the plain counts can.
        return (Capacity, (dict(self.units),))

    def as_dict(self) -> dict[str, float]:
        """A plain mapping (for the snapshot and audit shapes)."""
        return dict(self.units)
