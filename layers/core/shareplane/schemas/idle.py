"""The idle detector's messages, parsed once into a frozen value: a schedule tick or a manual run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..domain.errors import InvalidInputError
from .scheduled import parse_scheduled_event, tick_time

#: The body of a run asked for by hand (it carries no time: the one case the clock decides).
MANUAL_RUN = {"shareplane": "detect-idle"}


@dataclass(frozen=True)
class IdleRun:
    """One run of the detector: at a schedule tick's time, or (``at`` None) by hand, at the clock's."""

    at: float | None = None
    #: The schedule tick's event id (None for a manual run): the run's correlation id.
    event_id: str | None = None


def parse_idle_message(raw: Any) -> IdleRun:
    """One detect_idle message as its run; InvalidInputError naming the field when it is neither kind."""
    if raw == MANUAL_RUN:
        return IdleRun()
    if not isinstance(raw, Mapping) or raw.get("detail-type") != "Scheduled Event":
        raise InvalidInputError(
            "detail-type",
            f"{raw.get('detail-type') if isinstance(raw, Mapping) else type(raw).__name__!r} is not a "
            "schedule tick",
            f"route only the schedule rule's events (or {MANUAL_RUN}) to detect_idle",
        )
    event = parse_scheduled_event(dict(raw))
    return IdleRun(tick_time(event), event.id)
