"""The reclaim queue's messages, parsed once into frozen values: the use case never reads a raw dict.

Four triggers reach reclaim_capacity: a GPU-queue job's ``Batch Service Job State Change`` (acted on
when RUNNABLE), this function's own delayed re-check of a waiting job (``reclaim-due``), the 5-minute
schedule tick (``Scheduled Event``) and a run asked for by hand (``{"shareplane": "reclaim"}``).
Only the detail fields reclaim reads are typed; the rest of the detail is kept unread (AWS adds
fields, and a RUNNABLE event carries the whole job). The envelope is not required: a RUNNABLE event
is decided at its own time, the latest epoch-ms time in its detail, else its envelope ``time``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..domain.errors import InvalidInputError
from ..domain.reclaim.record import RECLAIM_DUE, ReclaimDue
from .common import Count, Detail, EpochMillis, bounds_fix
from .event_time import event_time
from .scheduled import parse_scheduled_event, tick_time

#: The body of a run asked for by hand (it carries no time: the one case the clock decides).
MANUAL_RUN = {"shareplane": "reclaim"}
JOB_STATE_CHANGE = "Batch Service Job State Change"
_M = TypeVar("_M", bound=BaseModel)


@dataclass(frozen=True)
class ReclaimRun:
    """A run over the whole GPU queue: at a schedule tick's time, or (``at`` None) by hand, at the clock's."""

    at: float | None = None


@dataclass(frozen=True)
class RunnableEvent:
    """A GPU-queue job's state change, with the fields reclaim decides on and the event's time."""

    job_arn: str
    job_id: str
    status: str
    job_queue: str | None
    share_identifier: str | None
    scheduling_priority: int | None
    #: Epoch milliseconds, when the event carries it: the job waits from then.
    created_at: int | None
    #: The event's time (epoch seconds), None when neither its detail nor its envelope dates it.
    at: float | None


ReclaimTrigger = ReclaimRun | RunnableEvent | ReclaimDue


class _RunnableDetail(Detail):
    """The detail fields of a service job's state change that reclaim reads (DescribeServiceJob's names)."""

    jobArn: str | None = None
    jobId: str | None = None
    status: str
    jobQueue: str | None = None
    shareIdentifier: str | None = None
    # AWS does not promise schedulingPriority in events: absent, the tier may still be unknown.
    schedulingPriority: Count | None = None
    createdAt: EpochMillis | None = None


class _JobStateChange(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    detail_type: Literal["Batch Service Job State Change"] = Field(alias="detail-type")
    detail: _RunnableDetail


class _Due(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    shareplane: Literal["reclaim-due"]
    jobArn: str | None = None
    jobId: str | None = None
    dueAt: float
    #: Absent in re-checks sent before hops existed: such a message arrives at its due time.
    hopAt: float | None = None


def parse_reclaim_message(raw: Any) -> ReclaimTrigger:
    """One reclaim-queue message as its value; InvalidInputError naming the field when it is not one."""
    if raw == MANUAL_RUN:
        return ReclaimRun()
    if not isinstance(raw, Mapping):
        raise InvalidInputError("message", "is not a JSON object", "send an event or a reclaim-due message")
    if raw.get("shareplane") == RECLAIM_DUE:
        due = _validated(_Due, raw, "send reclaim-due messages as sent")
        return ReclaimDue(
            job_arn=due.jobArn or "",
            job_id=due.jobId or "",
            due_at=due.dueAt,
            hop_at=due.dueAt if due.hopAt is None else due.hopAt,
        )
    detail_type = raw.get("detail-type")
    if detail_type == "Scheduled Event":
        return ReclaimRun(tick_time(parse_scheduled_event(dict(raw))))
    if detail_type == JOB_STATE_CHANGE:
        if not isinstance(raw.get("detail"), Mapping):
            raise InvalidInputError(
                "detail", "is missing or not an object", "send the event as AWS documents it"
            )
        detail = _validated(_JobStateChange, raw, "send the event as AWS documents it").detail
        return RunnableEvent(
            job_arn=detail.jobArn or "",
            job_id=detail.jobId or "",
            status=detail.status,
            job_queue=detail.jobQueue,
            share_identifier=detail.shareIdentifier,
            scheduling_priority=detail.schedulingPriority,
            created_at=detail.createdAt,
            at=event_time(raw),
        )
    raise InvalidInputError(
        "detail-type",
        f"{detail_type!r} is not a reclaim trigger",
        "route only reclaim triggers here",
    )


def _validated(model: type[_M], raw: Mapping[str, Any], fix: str) -> _M:
    try:
        return model.model_validate(dict(raw))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "message"
        raise InvalidInputError(where, first["msg"], bounds_fix(first["type"], fix)) from exc
