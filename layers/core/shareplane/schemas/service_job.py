"""A Batch service job's detail (DescribeServiceJob's shape, also its events' detail) and its observation.

Apart from the event envelopes in ``batch`` and ``parse`` so that the reconciler, which reads
DescribeServiceJob results and never an event, builds only these models at cold start, not every
Batch and SageMaker event model and the union adapter over them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field, ValidationError

from ..domain.errors import InvalidInputError
from ..domain.jobs.lifecycle import CapacityUsage, JobObservation, JobStatus, ObservationKind
from .common import MAX_COUNT, Count, Detail, EpochMillis, bounds_fix

if TYPE_CHECKING:
    # Only the reconciler hands this module a description; record_state parses events with these models
    # and never loads the description's types (tests/unit/test_architecture.py).
    from ..domain.jobs.described_job import DescribedJob, JobAttempt

#: AWS Batch accepts schedulingPriority 0-9999 (SubmitServiceJob / SubmitJob API references).
SchedulingPriority = Count
#: Attempt counts are written with three digits in the stored ordering key (Batch allows 10 attempts).
MAX_ATTEMPTS = 999


class ServiceResourceId(Detail):
    """Points a Batch attempt at the SageMaker training job it created."""

    name: str | None = None
    value: str


class ServiceJobAttempt(Detail):
    """One finished attempt of a service job."""

    serviceResourceId: ServiceResourceId | None = None
    startedAt: EpochMillis | None = None
    stoppedAt: EpochMillis | None = None
    statusReason: str | None = None


class LatestAttempt(Detail):
    """The attempt in flight (or the last one)."""

    serviceResourceId: ServiceResourceId | None = None


class CapacityUsageDetail(Detail):
    """Instances a job holds, by capacity unit."""

    capacityUnit: str
    quantity: float = Field(ge=0, le=MAX_COUNT, allow_inf_nan=False)


class PreemptionSummary(Detail):
    """Sliding window of a job's preempted attempts."""

    preemptedAttemptCount: Count | None = None
    recentPreemptedAttempts: list[ServiceJobAttempt] = Field(default_factory=list, max_length=MAX_COUNT)


class ServiceJobDetail(Detail):
    """DescribeServiceJob's shape (events omit tags and serviceRequestPayload); all but a few optional."""

    jobArn: str
    jobId: str | None = None
    jobName: str | None = None
    jobQueue: str | None = None
    status: str
    statusReason: str | None = None
    serviceJobType: str | None = None
    shareIdentifier: str | None = None
    quotaShareName: str | None = None
    schedulingPriority: SchedulingPriority | None = None
    createdAt: EpochMillis | None = None
    scheduledAt: EpochMillis | None = None
    startedAt: EpochMillis | None = None
    stoppedAt: EpochMillis | None = None
    isTerminated: bool | None = None
    attempts: list[ServiceJobAttempt] | None = Field(default=None, max_length=MAX_ATTEMPTS)
    latestAttempt: LatestAttempt | None = None
    capacityUsage: list[CapacityUsageDetail] | None = Field(default=None, max_length=MAX_COUNT)
    preemptionSummary: PreemptionSummary | None = None
    #: DescribeServiceJob's tags (events carry none): a shareless job's team tag, the requeue chain.
    tags: dict[str, str] | None = None


def job_status(value: str | None, field: str) -> JobStatus:
    if value is not None:
        try:
            return JobStatus(value)
        except ValueError:
            pass
    raise InvalidInputError(
        field, f"{value!r} is not a Batch job status", f"use one of {[s.value for s in JobStatus]}"
    )


def service_job_observation(detail: ServiceJobDetail, kind: ObservationKind) -> JobObservation:
    arns = [a.serviceResourceId.value for a in detail.attempts or () if a.serviceResourceId]
    latest = (
        detail.latestAttempt.serviceResourceId.value
        if detail.latestAttempt and detail.latestAttempt.serviceResourceId
        else None
    )
    summary = detail.preemptionSummary
    finished = [*(detail.attempts or ()), *(summary.recentPreemptedAttempts if summary else ())]
    if summary:
        arns += [a.serviceResourceId.value for a in summary.recentPreemptedAttempts if a.serviceResourceId]
    attempt_times = [t for a in finished for t in (a.startedAt, a.stoppedAt) if t]
    usage = tuple(CapacityUsage(u.capacityUnit, u.quantity) for u in detail.capacityUsage or ())
    typed = [u.unit for u in usage if u.unit != "NUM_INSTANCES"]
    return JobObservation(
        job_arn=detail.jobArn,
        status=job_status(detail.status, "detail.status"),
        kind=kind,
        job_id=detail.jobId,
        job_name=detail.jobName,
        job_queue=detail.jobQueue,
        status_reason=detail.statusReason,
        share_identifier=detail.shareIdentifier,
        quota_share_name=detail.quotaShareName,
        scheduling_priority=detail.schedulingPriority,
        created_at=detail.createdAt,
        scheduled_at=detail.scheduledAt,
        started_at=detail.startedAt,
        stopped_at=detail.stoppedAt,
        attempts=len(detail.attempts) if detail.attempts is not None else None,
        preemptions=summary.preemptedAttemptCount if summary else None,
        latest_training_job_arn=latest,
        training_job_arns=tuple(dict.fromkeys(arns)),
        capacity_usage=usage,
        instance_type=typed[0] if typed else None,
        attempt_time_ms=max(attempt_times, default=None),
    )


def reconciled_observation(described: DescribedJob) -> JobObservation:
    """A DescribeServiceJob result as a RECONCILED observation (the reconciler's repair path).

    The description is checked by the same model, and bounds, as the job's events.
    """
    try:
        detail = ServiceJobDetail.model_validate(_detail_of(described))
    except ValidationError as exc:
        first = exc.errors()[0]
        path = ".".join(str(p) for p in first["loc"]) or "job"
        fix = bounds_fix(first["type"], "pass DescribeServiceJob's result unchanged")
        raise InvalidInputError(path, first["msg"], fix) from exc
    return service_job_observation(detail, ObservationKind.RECONCILED)


def _attempt_of(attempt: JobAttempt) -> dict[str, Any]:
    resource = {"value": attempt.training_job_arn} if attempt.training_job_arn else None
    return {
        "serviceResourceId": resource,
        "startedAt": attempt.started_at,
        "stoppedAt": attempt.stopped_at,
        "statusReason": attempt.status_reason,
    }


def _detail_of(job: DescribedJob) -> dict[str, Any]:
    """The detail a description stands for, in the API's member names."""
    summary = (
        {
            "preemptedAttemptCount": job.preempted_attempts,
            "recentPreemptedAttempts": [_attempt_of(a) for a in job.recent_preempted_attempts],
        }
        if job.has_preemption_summary
        else None
    )
    latest = (
        {"serviceResourceId": {"value": job.latest_training_job_arn}} if job.latest_training_job_arn else None
    )
    return {
        "jobArn": job.job_arn,
        "jobId": job.job_id,
        "jobName": job.job_name,
        "jobQueue": job.job_queue,
        "status": job.status,
        "statusReason": job.status_reason,
        "serviceJobType": job.service_job_type,
        "shareIdentifier": job.share_identifier,
        "quotaShareName": job.quota_share_name,
        "schedulingPriority": job.scheduling_priority,
        "createdAt": job.created_at,
        "scheduledAt": job.scheduled_at,
        "startedAt": job.started_at,
        "stoppedAt": job.stopped_at,
        "isTerminated": job.is_terminated,
        "attempts": None if job.attempts is None else [_attempt_of(a) for a in job.attempts],
        "latestAttempt": latest,
        "capacityUsage": [{"capacityUnit": u.unit, "quantity": u.quantity} for u in job.capacity_usage],
        "preemptionSummary": summary,
    }
