"""Shared pieces of the inbound models: a tolerant envelope and epoch-millisecond times."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field


def _epoch_ms(value: Any) -> Any:
    # SageMaker's own samples write epoch-ms as strings ("1583831889050"); Batch writes numbers.
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: The largest epoch-millisecond time accepted (2286-11-20): stored ordering keys write times as 13
#: zero-padded digits, so a larger (or negative) time would sort out of order and poison the job.
MAX_EPOCH_MS = 9_999_999_999_999
#: Counts that stored ordering keys write with four digits (preemptions, priorities, transitions).
MAX_COUNT = 9999

EpochMillis = Annotated[int, BeforeValidator(_epoch_ms), Field(ge=0, le=MAX_EPOCH_MS)]
Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
#: A duration in whole seconds (SageMaker's TrainingTimeInSeconds, BillableTimeInSeconds): at most a
#: year, far past SageMaker's 28-day MaxRuntimeInSeconds limit.
Seconds = Annotated[int, Field(ge=0, le=366 * 24 * 3600)]


def bounds_fix(error_type: str, default: str) -> str:
    """The fix for a validation error: the accepted range when a number was out of it."""
    if error_type in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        return f"send times as epoch milliseconds in 0..{MAX_EPOCH_MS} and counts in 0..{MAX_COUNT}"
    if error_type == "too_long":
        return f"send at most {MAX_COUNT} items"
    return default


def _in_epoch_range(value: datetime) -> datetime:
    # A time without a zone is UTC, as EventBridge writes it.
    at = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if not 0 <= at.timestamp() * 1000 <= MAX_EPOCH_MS:
        raise ValueError(f"is {value.isoformat()}, outside 1970-01-01..2286-11-20")
    return value


#: The envelope's ``time``: the same range as EpochMillis, since some paths order by it.
EnvelopeTime = Annotated[datetime, AfterValidator(_in_epoch_range)]


class Detail(BaseModel):
    """Base of every event detail: unknown fields are kept, never rejected (AWS adds fields)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Envelope(BaseModel):
    """The EventBridge envelope (the fields of Powertools' EventBridgeModel).

    Written out rather than subclassed: importing the Powertools parser package adds to every cold
    start (docs/design/cold-start.md) and nothing else of it is used. ``account`` is optional because some
    deliveries and replays omit it.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    version: str = "0"
    id: str
    source: str
    account: str | None = None
    time: EnvelopeTime
    region: str | None = None
    resources: list[str] = Field(default_factory=list)
    replay_name: str | None = Field(default=None, alias="replay-name")
