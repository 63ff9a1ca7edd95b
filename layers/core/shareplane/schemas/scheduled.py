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


#: How far ahead of both the receiving clock and the stored watermark (the last tick handled) a
#: scheduled tick may be dated. A run records its tick as the watermark and every tick at or before
#: it is a no-op redelivery, so one tick dated in 2100 would silence every later run until 2100.
#: On AWS a tick is delivered minutes after its own time and a redelivery keeps that time (it only
#: gets older), so a genuine tick is never ahead of the clock by more than clock skew. On the local
#: stack ticks are stamped with the emulator's virtual clock, which runs ahead of the wall clock
#: without bound (100x and more); there the watermark term admits them, since consecutive ticks are a
#: schedule period apart in virtual time. One day is far above both, and bounds what a bad tick can
#: still cost: at most a day of skipped runs, instead of decades.
MAX_TICK_LEAD_SECONDS = 86400


def check_tick_lead(tick_at: float, clock_now: float, watermark: str | None) -> None:
    """Refuse a tick dated more than MAX_TICK_LEAD_SECONDS ahead of both the clock and ``watermark``.

    ``watermark`` is the tick id of the last tick handled (``tick_id``'s format), or None.
    """
    reference = clock_now
    if watermark:
        try:
            last = datetime.strptime(watermark, TICK_ID_FORMAT).replace(tzinfo=UTC).timestamp()
        except ValueError:
            last = None
        if last is not None:
            reference = max(reference, last)
    lead = tick_at - reference
    if lead > MAX_TICK_LEAD_SECONDS:
        when = datetime.fromtimestamp(tick_at, UTC).strftime(TICK_ID_FORMAT)
        raise InvalidInputError(
            "time",
            f"is {when}, {lead:.0f}s ahead of the clock and of the last tick handled "
            f"(at most {MAX_TICK_LEAD_SECONDS}s allowed); a run dated there would decide as if that "
            "time had come",
            "deliver the schedule rule's (or AWS's) own events; drop this message from the dead-letter queue",
        )
