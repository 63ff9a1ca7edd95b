"""Shared pieces of the inbound models: a tolerant envelope and epoch-millisecond times."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from pydantic import BaseModel, BeforeValidator, ConfigDict


def _epoch_ms(value: Any) -> Any:
    # SageMaker's own samples write epoch-ms as strings ("1583831889050"); Batch writes numbers.
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


EpochMillis = Annotated[int, BeforeValidator(_epoch_ms)]


class Detail(BaseModel):
    """Base of every event detail: unknown fields are kept, never rejected (AWS adds fields)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Envelope(EventBridgeModel):
    """EventBridge envelope; ``account`` optional because some deliveries (and replays) omit it."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    account: str | None = None  # type: ignore[assignment]
