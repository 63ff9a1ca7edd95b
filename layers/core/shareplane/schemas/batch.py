"""AWS Batch events: service jobs (SageMaker Training), container jobs, preemption, queue blocked."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .common import MAX_COUNT, Count, Detail, Envelope, EpochMillis

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


class ContainerAttempt(Detail):
    """One attempt of a container job."""

    startedAt: EpochMillis | None = None
    stoppedAt: EpochMillis | None = None
    statusReason: str | None = None


class ContainerJobDetail(Detail):
    """DescribeJobs' JobDetail shape, for CPU jobs on a FIFO queue."""

    jobArn: str
    jobId: str | None = None
    jobName: str | None = None
    jobQueue: str | None = None
    status: str
    statusReason: str | None = None
    shareIdentifier: str | None = None
    schedulingPriority: SchedulingPriority | None = None
    createdAt: EpochMillis | None = None
    startedAt: EpochMillis | None = None
    stoppedAt: EpochMillis | None = None
    attempts: list[ContainerAttempt] | None = Field(default=None, max_length=MAX_ATTEMPTS)


class PreemptionDetail(Detail):
    """Preemption started/completed: only the preempted job's ARN, a status and a summary."""

    preemptedJobArn: str
    status: str | None = None
    statusReason: str | None = None
    preemptionSummary: PreemptionSummary | None = None


class BatchServiceJobStateChange(Envelope):
    """``Batch Service Job State Change``."""

    source: Literal["aws.batch"]
    detail_type: Literal["Batch Service Job State Change"] = Field(alias="detail-type")
    detail: ServiceJobDetail


class BatchServiceJobQueueBlocked(Envelope):
    """``Batch Service Job Queue Blocked``: a RUNNABLE job at a blocked queue head."""

    source: Literal["aws.batch"]
    detail_type: Literal["Batch Service Job Queue Blocked"] = Field(alias="detail-type")
    detail: ServiceJobDetail


class BatchServiceJobPreemptionStarted(Envelope):
    """``Batch Service Job Preemption Started``."""

    source: Literal["aws.batch"]
    detail_type: Literal["Batch Service Job Preemption Started"] = Field(alias="detail-type")
    detail: PreemptionDetail


class BatchServiceJobPreemptionCompleted(Envelope):
    """``Batch Service Job Preemption Completed``: the job is back in RUNNABLE."""

    source: Literal["aws.batch"]
    detail_type: Literal["Batch Service Job Preemption Completed"] = Field(alias="detail-type")
    detail: PreemptionDetail


class BatchJobStateChange(Envelope):
    """``Batch Job State Change`` (container jobs, e.g. CPU work on a FIFO queue)."""

    source: Literal["aws.batch"]
    detail_type: Literal["Batch Job State Change"] = Field(alias="detail-type")
    detail: ContainerJobDetail


class BatchJobQueueBlocked(Envelope):
    """``Batch Job Queue Blocked`` (container jobs)."""

    source: Literal["aws.batch"]
    detail_type: Literal["Batch Job Queue Blocked"] = Field(alias="detail-type")
    detail: ContainerJobDetail
