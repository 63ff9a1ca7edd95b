"""When an event happened, read from the event itself: the time every decision about it is made at.

Deciding with the event's time instead of the clock makes a redelivered event decide exactly as the
first delivery did, and lets the local stack (whose emulated Batch and SageMaker stamp events with a
sped-up virtual clock) measure backoffs, storm windows and wait SLOs in the same time as its jobs.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..domain.jobs.described_job import MIN_EPOCH_MS
from .common import MAX_EPOCH_MS

#: Free-form maps inside a detail whose keys are the user's, not AWS's (a hyperparameter named
#: ``startTime`` is no event time).
_FREE_FORM = frozenset({"HyperParameters", "Environment", "Tags", "tags", "serviceRequestPayload"})


def detail_time(detail: Any) -> float | None:
    """The latest epoch-millisecond time in a Batch or SageMaker detail, as epoch seconds; None if none.

    Batch writes ``createdAt``/``startedAt``/``stoppedAt`` (also inside ``attempts`` and preemption
    summaries), SageMaker ``CreationTime``/``LastModifiedTime``/``TrainingEndTime`` and the transitions'
    ``StartTime``/``EndTime``: any key ending in ``At`` or ``Time`` holding epoch milliseconds counts.
    """
    latest = _latest_ms(detail)
    return latest / 1000 if latest is not None else None


def envelope_time(event: Any) -> float | None:
    """The EventBridge envelope ``time`` (one-second precision) as epoch seconds; None when absent."""
    raw = event.get("time") if isinstance(event, Mapping) else None
    if not isinstance(raw, str) or not raw:
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def event_time(event: Any) -> float | None:
    """An event's time: the latest epoch-ms time in its detail, else its envelope ``time`` (None: neither)."""
    detail = event.get("detail") if isinstance(event, Mapping) else None
    found = detail_time(detail)
    return found if found is not None else envelope_time(event)


def _latest_ms(node: Any) -> int | None:
    latest: int | None = None
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key in _FREE_FORM:
                continue
            found = _epoch_ms(value) if isinstance(key, str) and key.endswith(("At", "Time")) else None
            if found is None:
                found = _latest_ms(value)
            if found is not None and (latest is None or found > latest):
                latest = found
    elif isinstance(node, list):
        for item in node:
            found = _latest_ms(item)
            if found is not None and (latest is None or found > latest):
                latest = found
    return latest


def _epoch_ms(value: Any) -> int | None:
    # SageMaker's own samples write epoch-ms as strings; Batch writes numbers. Booleans are not times.
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    # Above MAX_EPOCH_MS (2286) a number is no time the schemas accept: a decision dated by it would
    # push quiet windows and storm guards out of reach of every later event.
    if isinstance(value, (int, float)) and MIN_EPOCH_MS <= value <= MAX_EPOCH_MS:
        return int(value)
    return None
