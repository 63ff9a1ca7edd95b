"""The EventBridge schedule's event, the tick id a scheduled run is made idempotent by, and its time."""

from __future__ import annotations

from datetime import UTC, datetime
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


def _utc(event: ScheduledEvent) -> datetime:
    # EventBridge writes UTC with a Z; an offset is converted and a time without a zone read as UTC,
    # so the tick id and the tick time always name the same instant.
    at = event.time
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def tick_id(event: ScheduledEvent) -> str:
    """The tick a scheduled event stands for: its time, which every redelivery of it shares."""
    return _utc(event).strftime("%Y-%m-%dT%H:%M:%SZ")


def tick_time(event: ScheduledEvent) -> float:
    """The epoch seconds a scheduled run decides at: its tick's time, the same on every redelivery.

    Whole seconds, the second ``tick_id`` names.
    """
    return float(int(_utc(event).timestamp()))
