"""Shared pieces of the inbound models: a tolerant envelope and epoch-millisecond times."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field


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


class Envelope(BaseModel):
    """The EventBridge envelope (the fields of Powertools' EventBridgeModel).

    Written out rather than subclassed: importing the Powertools parser package costs about 25 ms
    of every cold start and nothing else of it is used. ``account`` is optional because some
    deliveries and replays omit it.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    version: str = "0"
    id: str
    source: str
    account: str | None = None
    time: datetime
    region: str | None = None
    resources: list[str] = Field(default_factory=list)
    replay_name: str | None = Field(default=None, alias="replay-name")
