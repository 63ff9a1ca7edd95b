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


TICK_ID_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def _utc(event: ScheduledEvent) -> datetime:
    # EventBridge writes UTC with a Z; an offset is converted and a time without a zone read as UTC,
    # so the tick id and the tick time always name the same instant.
    at = event.time
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def tick_id(event: ScheduledEvent) -> str:
    """The tick a scheduled event stands for: its time, which every redelivery of it shares."""
    return _utc(event).strftime(TICK_ID_FORMAT)


def tick_id_at(seconds: float) -> str:
    """The tick id of an instant given in epoch seconds (a watermark written by a run that is not a tick)."""
    return datetime.fromtimestamp(int(seconds), UTC).strftime(TICK_ID_FORMAT)


def tick_time(event: ScheduledEvent) -> float:
    """The epoch seconds a scheduled run decides at: its tick's time, the same on every redelivery.

    Whole seconds, the second ``tick_id`` names.
    """
    return float(int(_utc(event).timestamp()))


#: How far ahead of the receiving function's own clock a scheduled tick or trigger may be dated. On
#: AWS a tick is delivered after its own time and a redelivery keeps that time (it only gets older),
#: and an event is dated when its state changed, before it was sent: a genuine trigger is never ahead
#: of the clock by more than the clocks' skew (Lambda's is kept by the Amazon Time Sync Service, well
#: under a second). A run records its tick as a watermark and every tick at or before it is a no-op
#: redelivery, so a tick dated ahead would silence the real ones, and a trigger dated ahead would
#: make every waiting job look long past its threshold. The bound is against the clock alone, never
#: a watermark: a chain of ticks each a little ahead of the last would otherwise walk it anywhere. On
#: the local stack each function's clock is the emulator's virtual one, so the same bound holds there.
MAX_TICK_LEAD_SECONDS = 60


def check_tick_lead(tick_at: float, clock_now: float) -> None:
    """Refuse a tick or trigger dated more than MAX_TICK_LEAD_SECONDS ahead of the receiving clock."""
    lead = tick_at - clock_now
    if lead > MAX_TICK_LEAD_SECONDS:
        when = datetime.fromtimestamp(tick_at, UTC).strftime(TICK_ID_FORMAT)
        raise InvalidInputError(
            "time",
            f"is {when}, {lead:.0f}s ahead of this function's clock (at most {MAX_TICK_LEAD_SECONDS}s "
            "allowed); a run dated there would decide as if that time had come",
            "deliver the schedule rule's (or AWS's) own events; drop this message from the dead-letter queue",
        )
