"""The EventBridge schedule's event, and the tick id a scheduled run is made idempotent by."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError

from ..domain.errors import InvalidInputError
from .common import Detail, Envelope


class ScheduledEvent(Envelope):
    """``aws.events`` / ``Scheduled Event``: an empty detail; ``time`` is the tick (1 s precision)."""

    source: Literal["aws.events"]
    detail_type: Literal["Scheduled Event"] = Field(alias="detail-type")
    detail: Detail = Field(default_factory=Detail)


def parse_scheduled_event(raw: Any) -> ScheduledEvent:
    """Parse a scheduled event, or raise InvalidInputError naming the field that is wrong."""
    if not isinstance(raw, dict):
        raise InvalidInputError(
            "event", f"is a {type(raw).__name__}, not a JSON object", "send the event as JSON"
        )
    try:
        return ScheduledEvent.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"]) or "event"
        raise InvalidInputError(
            where, error["msg"], "deliver the EventBridge schedule rule's Scheduled Event unchanged"
        ) from exc


def tick_id(event: ScheduledEvent) -> str:
    """The tick a scheduled event stands for: its time, which every redelivery of it shares."""
    return event.time.strftime("%Y-%m-%dT%H:%M:%SZ")
