"""The model's jobs in AWS's shapes: DescribeServiceJob, DescribeTrainingJob and the event details.

The API answers with these and the model publishes its events with them, so a response and the event
of the same change never disagree. Times are epoch milliseconds (``BatchModel.ms``); the SageMaker
facade turns them into datetimes, as boto3 returns them.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from . import texts
from .resources import Job, TrainingJob
from .states import FINAL, RUNNABLE


class WireModel(Protocol):
    """What the shapes need from the model (``BatchModel``): its epoch times and spot billing."""

    def ms(self, t: float | None = None) -> int: ...

    @property
    def spot_billable_fraction(self) -> float: ...


def attempt(model: WireModel, record: dict[str, Any]) -> dict[str, Any]:
    """One ServiceJobAttemptDetail from the model's attempt record."""
    out: dict[str, Any] = {}
    if record["arn"]:
        out["serviceResourceId"] = {"name": "TrainingJobArn", "value": record["arn"]}
    if record["startedAt"] is not None:
        out["startedAt"] = model.ms(record["startedAt"])
    out["stoppedAt"] = model.ms(record["stoppedAt"])
    out["statusReason"] = record["statusReason"]
    return out


def preemption_summary(model: WireModel, job: Job) -> dict[str, Any]:
    """The job's ServiceJobPreemptionSummary."""
    return {
        "preemptedAttemptCount": job.preempted_count,
        "recentPreemptedAttempts": [attempt(model, a) for a in job.preempted],
    }


def describe_job(model: WireModel, job: Job, event: bool = False) -> dict[str, Any]:
    """DescribeServiceJob; with ``event`` the event detail (no tags, no payload)."""
    ms = model.ms
    out: dict[str, Any] = {
        "attempts": [attempt(model, a) for a in job.attempts],
        # "For service jobs, this is the instance type" (API_ServiceJobCapacityUsageDetail.html), whatever
        # unit the service environment limits: a NUM_INSTANCES limit is the environment's, not the job's.
        "capacityUsage": [{"capacityUnit": job.instance_type, "quantity": float(job.count)}],
        "createdAt": ms(job.created),
        "isTerminated": job.terminated,
        "jobArn": job.arn,
        "jobId": job.id,
        "jobName": job.name,
        "jobQueue": job.queue.arn,
    }
    if job.training is not None:
        out["latestAttempt"] = {"serviceResourceId": {"name": "TrainingJobArn", "value": job.training.arn}}
    if job.retry is not None:
        out["retryStrategy"] = job.retry
    if job.scheduled_at is not None:
        out["scheduledAt"] = ms(job.scheduled_at)
    out["schedulingPriority"] = job.priority
    out["serviceJobType"] = "SAGEMAKER_TRAINING"
    if job.share is not None:
        out["shareIdentifier"] = job.share
    if job.qshare is not None:
        out["quotaShareName"] = job.qshare.name
    if job.preemption is not None:
        out["preemptionConfiguration"] = job.preemption
    if job.qshare is not None or job.preempted_count:
        out["preemptionSummary"] = preemption_summary(model, job)
    if job.started_at is not None:
        out["startedAt"] = ms(job.started_at)
    out["status"] = job.status
    if job.reason is not None:
        out["statusReason"] = job.reason
    if job.stopped_at is not None and job.status in FINAL:
        out["stoppedAt"] = ms(job.stopped_at)
    if job.timeout is not None:
        out["timeoutConfig"] = job.timeout
    if not event:
        out["serviceRequestPayload"] = job.payload_text or json.dumps(job.payload)
        out["tags"] = dict(job.tags)
    return out


def describe_training_job(model: WireModel, tj: TrainingJob, event: bool = False) -> dict[str, Any]:
    """DescribeTrainingJob, times as epoch ms; with ``event`` the event detail (tags as a map)."""
    ms = model.ms
    p = tj.payload
    out: dict[str, Any] = {"TrainingJobName": tj.name, "TrainingJobArn": tj.arn}
    if tj.status == "Completed":
        output = p.get("OutputDataConfig", {}).get("S3OutputPath", "").rstrip("/")
        out["ModelArtifacts"] = {"S3ModelArtifacts": f"{output}/{tj.name}/output/model.tar.gz"}
    out["TrainingJobStatus"] = tj.status
    out["SecondaryStatus"] = tj.secondary
    if tj.failure_reason and tj.status == "Failed":
        out["FailureReason"] = tj.failure_reason
    for key in (
        "HyperParameters",
        "AlgorithmSpecification",
        "RoleArn",
        "InputDataConfig",
        "OutputDataConfig",
        "ResourceConfig",
        "VpcConfig",
        "StoppingCondition",
        "EnableManagedSpotTraining",
        "CheckpointConfig",
        "RetryStrategy",
        "Environment",
    ):
        if key in p:
            out[key] = p[key]
    out["CreationTime"] = ms(tj.created)
    if tj.started is not None:
        out["TrainingStartTime"] = ms(tj.started)
    if tj.ended is not None:
        out["TrainingEndTime"] = ms(tj.ended)
    out.update(billable_times(model, tj))
    out["LastModifiedTime"] = ms(tj.modified)
    transitions = []
    for status, start, end, message in tj.transitions:
        t: dict[str, Any] = {"Status": status, "StartTime": ms(start)}
        if end is not None:
            t["EndTime"] = ms(end)
        t["StatusMessage"] = message
        transitions.append(t)
    out["SecondaryStatusTransitions"] = transitions
    tags = p.get("Tags", [])
    out["Tags"] = {t["Key"]: t["Value"] for t in tags} if event else list(tags)
    return out


def billable_times(model: WireModel, tj: TrainingJob) -> dict[str, int]:
    """TrainingTimeInSeconds and BillableTimeInSeconds of a training job that ended after it started.

    Billed from TrainingStartTime to TrainingEndTime (API_DescribeTrainingJob.html), so the
    provisioning before the start is not; managed spot training bills ``spot_billable_fraction`` of it.
    """
    if tj.started is None or tj.ended is None or tj.status not in ("Completed", "Failed", "Stopped"):
        return {}
    training = max(0, round(tj.ended - tj.started))
    spot = bool(tj.payload.get("EnableManagedSpotTraining"))
    billable = round(training * model.spot_billable_fraction) if spot else training
    return {"TrainingTimeInSeconds": training, "BillableTimeInSeconds": billable}


def queue_blocked_detail(model: WireModel, job: Job, blocked: str) -> dict[str, Any]:
    """The detail of ``Batch Service Job Queue Blocked``: the head job, RUNNABLE, with why."""
    detail = describe_job(model, job, event=True)
    detail["status"] = RUNNABLE
    detail["statusReason"] = blocked
    return detail


def preemption_started_detail(job: Job, reason: str) -> dict[str, Any]:
    """The detail of ``Batch Service Job Preemption Started``."""
    return {
        "statusReason": texts.PREEMPTION_IN_PROGRESS + reason,
        "preemptedJobArn": job.arn,
        "status": job.status,
    }


def preemption_completed_detail(model: WireModel, job: Job) -> dict[str, Any]:
    """The detail of ``Batch Service Job Preemption Completed``."""
    return {
        "preemptedJobArn": job.arn,
        "preemptionSummary": preemption_summary(model, job),
        "status": job.status,
    }
