"""The failure path's messages, parsed once: a failure event with its typed detail, or a requeue-due message.

The events are the ones EventBridge routes to the failure queue (a service job FAILED, a training job
that Failed or Stopped, a preemption completed, a blocked queue); their details are the same models
record_state reads. The envelope is not required here: the failure path needs only the detail, and
a message without a time is decided at the clock's (``message_time``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ..domain.errors import InvalidInputError
from ..domain.failures.record import REQUEUE_DUE, RequeueDue
from .batch import PreemptionDetail
from .common import bounds_fix
from .event_time import envelope_time, event_time
from .sagemaker import TrainingJobDetail
from .service_job import ServiceJobDetail


class _FailureEvent(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class ServiceJobStateChanged(_FailureEvent):
    """``Batch Service Job State Change`` (the failure path acts on FAILED only)."""

    detail_type: Literal["Batch Service Job State Change"] = Field(alias="detail-type")
    detail: ServiceJobDetail


class TrainingJobStateChanged(_FailureEvent):
    """``SageMaker Training Job State Change`` (acted on when Failed or Stopped)."""

    detail_type: Literal["SageMaker Training Job State Change"] = Field(alias="detail-type")
    detail: TrainingJobDetail


class ServiceJobPreempted(_FailureEvent):
    """``Batch Service Job Preemption Completed``."""

    detail_type: Literal["Batch Service Job Preemption Completed"] = Field(alias="detail-type")
    detail: PreemptionDetail


class ServiceJobQueueBlocked(_FailureEvent):
    """``Batch Service Job Queue Blocked``: a job at the head of the queue can never run."""

    detail_type: Literal["Batch Service Job Queue Blocked"] = Field(alias="detail-type")
    detail: ServiceJobDetail


FailureEvent = Annotated[
    ServiceJobStateChanged | TrainingJobStateChanged | ServiceJobPreempted | ServiceJobQueueBlocked,
    Field(discriminator="detail_type"),
]
_FAILURE_EVENT: TypeAdapter[FailureEvent] = TypeAdapter(FailureEvent)
FAILURE_DETAIL_TYPES = (
    "Batch Service Job State Change",
    "SageMaker Training Job State Change",
    "Batch Service Job Preemption Completed",
    "Batch Service Job Queue Blocked",
)


#: What a failure-queue message is, once parsed.
FailureMessage = (
    RequeueDue
    | ServiceJobStateChanged
    | TrainingJobStateChanged
    | ServiceJobPreempted
    | ServiceJobQueueBlocked
)


def parse_failure_message(raw: Any) -> FailureMessage:
    """One failure-queue message as its model; InvalidInputError naming the field when it is not one."""
    if not isinstance(raw, Mapping):
        raise InvalidInputError(
            "message", f"is a {type(raw).__name__}, not a JSON object", "send the event as JSON"
        )
    if raw.get("shareplane") == REQUEUE_DUE:
        due = raw.get("dueAt")
        job_arn = raw.get("jobArn")
        return RequeueDue(
            decision_key=str(raw.get("decisionKey") or ""),
            job_arn=str(job_arn) if job_arn else None,
            due_at=float(due) if isinstance(due, (int, float)) and not isinstance(due, bool) else None,
        )
    if not isinstance(raw.get("detail"), Mapping):
        raise InvalidInputError("detail", "is missing or not an object", "send the event as AWS documents it")
    detail_type = raw.get("detail-type")
    if detail_type not in FAILURE_DETAIL_TYPES:
        raise InvalidInputError(
            "detail-type", f"{detail_type!r} is not a failure-path event", "route only failure events here"
        )
    try:
        return _FAILURE_EVENT.validate_python(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = ".".join(str(p) for p in first["loc"][1:]) or "event"  # drop the union tag
        fix = bounds_fix(first["type"], "send the event as AWS documents it")
        raise InvalidInputError(path, first["msg"], fix) from exc


@dataclass(frozen=True)
class FailureTrigger:
    """One failure-queue message, parsed, and the time it is decided at (None: the clock's, see
    ``message_time``)."""

    message: FailureMessage
    at: float | None

    @property
    def job_arn(self) -> str | None:
        """The job (service job or training job) the message is about, as it names it."""
        message = self.message
        if isinstance(message, RequeueDue):
            return message.job_arn
        if isinstance(message, TrainingJobStateChanged):
            return message.detail.TrainingJobArn
        if isinstance(message, ServiceJobPreempted):
            return message.detail.preemptedJobArn
        return message.detail.jobArn


def parse_failure_trigger(raw: Any) -> FailureTrigger:
    """One failure-queue message and its time; InvalidInputError naming the field when it is not one."""
    message = parse_failure_message(raw)
    return FailureTrigger(message, message_time(raw))


def message_time(raw: Mapping[str, Any]) -> float | None:
    """The time (epoch seconds) a failure-queue message is decided at, or None when it carries none.

    A requeue-due message carries the due time it was sent for; an event, the latest epoch-ms time
    in its detail, else its envelope ``time``. A blocked queue's detail dates only the job's creation,
    which may be hours before the queue blocked, so its envelope time comes first.
    """
    if raw.get("shareplane") == REQUEUE_DUE:
        due = raw.get("dueAt")
        return float(due) if isinstance(due, (int, float)) and not isinstance(due, bool) else None
    if raw.get("detail-type") == "Batch Service Job Queue Blocked":
        found = envelope_time(raw)
        return found if found is not None else event_time(raw)
    return event_time(raw)
