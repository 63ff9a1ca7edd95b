"""MetricsSink (adapters/emf_metrics.py) in memory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit


@dataclass
class FakeMetrics:
    """EMF: every measurement as (name, value, dimensions).

    A dimension the caller did not give is ``none``, and a unit CloudWatch does not know is refused
    (ValueError), as EmfMetricsSink does.
    """

    emitted: list[tuple[str, float, dict[str, str]]] = field(default_factory=list)

    def emit(
        self, events: Sequence[Any], dimensions: Mapping[str, str], properties: Mapping[str, str]
    ) -> None:
        for event in events:
            MetricUnit(event.unit)
            self.emitted.append(
                (event.name, event.value, {d: dimensions.get(d, "none") for d in event.dimensions})
            )

    def count(self, name: str) -> float:
        """The sum of one metric's values."""
        return sum(v for n, v, _ in self.emitted if n == name)

    def named(self, name: str) -> list[tuple[float, dict[str, str]]]:
        """One metric's measurements as (value, dimensions)."""
        return [(v, d) for n, v, d in self.emitted if n == name]
