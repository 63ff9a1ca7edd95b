"""Turn a raw EventBridge event into a normalized observation, or a clear error naming the field."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any

from pydantic import Field, TypeAdapter, ValidationError

from ..domain.errors import InvalidInputError, UnknownEventError
from ..domain.jobs.lifecycle import JobObservation, JobStatus, ObservationKind
from ..domain.jobs.training import TrainingJobObservation, TrainingJobStatus
from .batch import (
    BatchJobQueueBlocked,
    BatchJobStateChange,
    BatchServiceJobPreemptionCompleted,
    BatchServiceJobPreemptionStarted,
    BatchServiceJobQueueBlocked,
    BatchServiceJobStateChange,
    ContainerJobDetail,
    PreemptionDetail,
)
from .common import bounds_fix
from .sagemaker import SageMakerTrainingJobStateChange
from .service_job import ServiceJobDetail, job_status, service_job_observation

StateEvent = Annotated[
    BatchServiceJobStateChange
    | BatchServiceJobQueueBlocked
    | BatchServiceJobPreemptionStarted
    | BatchServiceJobPreemptionCompleted
    | BatchJobStateChange
    | BatchJobQueueBlocked
    | SageMakerTrainingJobStateChange,
    Field(discriminator="detail_type"),
]
_STATE_EVENT: TypeAdapter[StateEvent] = TypeAdapter(StateEvent)
KNOWN_DETAIL_TYPES = frozenset(
    {
        "Batch Service Job State Change",
        "Batch Service Job Queue Blocked",
        "Batch Service Job Preemption Started",
        "Batch Service Job Preemption Completed",
        "Batch Job State Change",
        "Batch Job Queue Blocked",
        "SageMaker Training Job State Change",
    }
)


def parse_state_event(raw: Any) -> JobObservation | TrainingJobObservation:
    """Parse one EventBridge event of any job state detail-type into its observation."""
    if not isinstance(raw, dict):
        raise InvalidInputError(
            "event", f"is a {type(raw).__name__}, not a JSON object", "send the event as JSON"
        )
    detail_type = raw.get("detail-type")
    if detail_type not in KNOWN_DETAIL_TYPES:
        raise UnknownEventError(
            "detail-type",
            f"{detail_type!r} is not a job state event",
            f"route only these detail-types here: {sorted(KNOWN_DETAIL_TYPES)}",
        )
    try:
        event = _STATE_EVENT.validate_python(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = ".".join(str(p) for p in first["loc"][1:]) or "event"  # drop the union tag
        fix = bounds_fix(first["type"], "send the event as AWS documents it")
        raise InvalidInputError(path, first["msg"], fix) from exc
    return _observe(event)


def _observe(event: Any) -> JobObservation | TrainingJobObservation:
    detail = event.detail
    if isinstance(event, SageMakerTrainingJobStateChange):
        return _training(detail)
    if isinstance(detail, PreemptionDetail):
        kind = (
            ObservationKind.PREEMPTION_STARTED
            if isinstance(event, BatchServiceJobPreemptionStarted)
            else ObservationKind.PREEMPTION_COMPLETED
        )
        observed = _preemption(detail, kind, event.time)
        return replace(observed, delivered_at_ms=int(event.time.timestamp() * 1000))
    kind = (
        ObservationKind.QUEUE_BLOCKED
        if isinstance(event, (BatchServiceJobQueueBlocked, BatchJobQueueBlocked))
        else ObservationKind.STATE_CHANGE
    )
    if isinstance(detail, ServiceJobDetail):
        observed = service_job_observation(detail, kind)
    else:
        observed = _container_job(detail, kind)
    return replace(observed, delivered_at_ms=int(event.time.timestamp() * 1000))


def _container_job(detail: ContainerJobDetail, kind: ObservationKind) -> JobObservation:
    return JobObservation(
        job_arn=detail.jobArn,
        status=job_status(detail.status, "detail.status"),
        kind=kind,
        job_id=detail.jobId,
        job_name=detail.jobName,
        job_queue=detail.jobQueue,
        status_reason=detail.statusReason,
        share_identifier=detail.shareIdentifier,
        scheduling_priority=detail.schedulingPriority,
        created_at=detail.createdAt,
        started_at=detail.startedAt,
        stopped_at=detail.stoppedAt,
        attempts=len(detail.attempts) if detail.attempts is not None else None,
    )


def _preemption(detail: PreemptionDetail, kind: ObservationKind, envelope_time: datetime) -> JobObservation:
    summary = detail.preemptionSummary
    recent = summary.recentPreemptedAttempts if summary else []
    stopped = max((a.stoppedAt for a in recent if a.stoppedAt), default=None)
    started = max((a.startedAt for a in recent if a.startedAt), default=None)
    arns = tuple(a.serviceResourceId.value for a in recent if a.serviceResourceId)
    # The attempt that stopped last is the dispatch this preemption ended.
    ended = max(
        (a for a in recent if a.serviceResourceId),
        key=lambda a: (a.stoppedAt or 0, a.startedAt or 0),
        default=None,
    )
    default_status = JobStatus.RUNNING if kind is ObservationKind.PREEMPTION_STARTED else JobStatus.RUNNABLE
    has_time = stopped is not None or started is not None
    return JobObservation(
        job_arn=detail.preemptedJobArn,
        status=job_status(detail.status, "detail.status") if detail.status else default_status,
        kind=kind,
        status_reason=detail.statusReason or (recent[-1].statusReason if recent else None),
        started_at=started,
        stopped_at=stopped,
        preemptions=summary.preemptedAttemptCount if summary else None,
        training_job_arns=arns,
        ended_training_job_arn=ended.serviceResourceId.value if ended and ended.serviceResourceId else None,
        # A preemption-started detail has no time at all; the envelope time keeps two preemptions apart.
        envelope_time_ms=None if has_time else int(envelope_time.timestamp() * 1000),
    )


def _training(detail: Any) -> TrainingJobObservation:
    try:
        status = TrainingJobStatus(detail.TrainingJobStatus)
    except ValueError:
        raise InvalidInputError(
            "detail.TrainingJobStatus",
            f"{detail.TrainingJobStatus!r} is not a SageMaker training job status",
            f"use one of {[s.value for s in TrainingJobStatus]}",
        ) from None
    resources = detail.ResourceConfig
    return TrainingJobObservation(
        training_job_arn=detail.TrainingJobArn,
        status=status,
        training_job_name=detail.TrainingJobName,
        secondary_status=detail.SecondaryStatus,
        failure_reason=detail.FailureReason,
        instance_type=resources.InstanceType if resources else None,
        instance_count=resources.InstanceCount if resources else None,
        created_at=detail.CreationTime,
        training_started_at=detail.TrainingStartTime,
        training_ended_at=detail.TrainingEndTime,
        last_modified_at=detail.LastModifiedTime,
        transitions=len(detail.SecondaryStatusTransitions),
        tags=dict(detail.Tags),
        billable_seconds=detail.BillableTimeInSeconds,
        training_seconds=detail.TrainingTimeInSeconds,
        managed_spot=bool(detail.EnableManagedSpotTraining),
    )
