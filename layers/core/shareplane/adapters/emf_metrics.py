"""Job metrics as CloudWatch EMF through Powertools: stdout in Lambda, no PutMetricData call."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from aws_lambda_powertools.metrics import MetricUnit, single_metric

if TYPE_CHECKING:
    from ..service.ports import MetricEvent

NAMESPACE = "shareplane"


class EmfMetricsSink:
    """MetricsSink writing one EMF document per measurement, with only that metric's dimensions."""

    def __init__(self, namespace: str = NAMESPACE) -> None:
        self._namespace = namespace

    def emit(
        self, events: Sequence[MetricEvent], dimensions: Mapping[str, str], properties: Mapping[str, str]
    ) -> None:
        """Publish each measurement; properties (the job ARN) ride along as EMF metadata."""
        for event in events:
            dims = {name: dimensions.get(name, "none") for name in event.dimensions}
            with single_metric(
                name=event.name,
                unit=MetricUnit(event.unit),
                value=event.value,
                namespace=self._namespace,
                default_dimensions=dims,
            ) as metric:
                for key, value in properties.items():
                    metric.add_metadata(key=key, value=value)
