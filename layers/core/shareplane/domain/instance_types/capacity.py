"""Capacity per instance type: how many instances of each type (Batch's capacity units) something holds.

What a share holds, waits for or is entitled to is a count per instance type; this value does the
arithmetic on such counts, so a type that is absent counts as zero without ``.get(unit, 0)`` at every
use. It is a read-only mapping too, so code that only lists or sums the counts reads it as one.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from types import MappingProxyType
from typing import Any, NoReturn

__all__ = ["Capacity"]


class Capacity(Mapping[str, float]):
    """Instances per instance type (or capacity unit); a type that is absent holds none.

    Immutable, and equal to any mapping with the same counts (a plain dict included), as a mapping
    is. A plain slotted class rather than a dataclass: the rebalance planner builds and reads these
    in its inner loops (the what-if replays it every tick), where each layer of indirection shows.
    """

    __slots__ = ("_counts",)
    _counts: dict[str, float]

    def __init__(self, units: Mapping[str, float] | None = None) -> None:
        object.__setattr__(self, "_counts", dict(units) if units else {})

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError(f"Capacity is immutable: cannot set {name}")

    @classmethod
    def of_pairs(cls, pairs: Iterable[tuple[str, float]]) -> Capacity:
        """The sum of ``(unit, quantity)`` pairs (a unit may repeat)."""
        total: dict[str, float] = {}
        for unit, quantity in pairs:
            # An int 0 to start from: whole counts stay ints (what a snapshot and its audit show).
            total[unit] = total.get(unit, 0) + quantity
        return cls(total)

    @property
    def units(self) -> Mapping[str, float]:
        """The counts, read-only."""
        return MappingProxyType(self._counts)

    def of(self, unit: str) -> float:
        """Instances of one type (0 when none)."""
        return self._counts.get(unit, 0)

    @property
    def total(self) -> float:
        """Instances of every type together."""
        return float(sum(self._counts.values()))

    def plus(self, unit: str, quantity: float) -> Capacity:
        """This capacity with ``quantity`` more instances of ``unit`` (fewer when negative)."""
        return Capacity({**self._counts, unit: self.of(unit) + quantity})

    def minus(self, unit: str, quantity: float) -> Capacity:
        """This capacity with ``quantity`` fewer instances of ``unit`` (it may go below zero)."""
        return self.plus(unit, -quantity)

    def excess_over(self, other: Capacity, unit: str) -> float:
        """Instances of ``unit`` held here beyond ``other``'s (0 when within it)."""
        return max(0, self.of(unit) - other.of(unit))

    def __add__(self, other: Capacity) -> Capacity:
        return Capacity.of_pairs([*self._counts.items(), *other.items()])

    # The mapping reads go straight to the counts: Mapping's generic views would call __getitem__
    # once per key.
    def __getitem__(self, unit: str) -> float:
        return self._counts[unit]

    def __iter__(self) -> Iterator[str]:
        return iter(self._counts)

    def __len__(self) -> int:
        return len(self._counts)

    def __contains__(self, unit: object) -> bool:
        return unit in self._counts

    def keys(self) -> KeysView[str]:
        return self._counts.keys()

    def items(self) -> ItemsView[str, float]:
        return self._counts.items()

    def values(self) -> ValuesView[float]:
        return self._counts.values()

    def __repr__(self) -> str:
        return f"Capacity({self._counts!r})"

    def __reduce__(self) -> tuple[type[Capacity], tuple[dict[str, float]]]:
        return (Capacity, (dict(self._counts),))

    def as_dict(self) -> dict[str, float]:
        """A plain mapping (for the snapshot and audit shapes)."""
        return dict(self._counts)
