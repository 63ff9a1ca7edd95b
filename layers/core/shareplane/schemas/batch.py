"""AWS Batch events: service jobs (SageMaker Training), container jobs, preemption, queue blocked."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .common import Detail, Envelope, EpochMillis
from .service_job import MAX_ATTEMPTS, PreemptionSummary, SchedulingPriority, ServiceJobDetail


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
