"""AWS Batch service jobs on an injected client: submit, describe, list, reprioritize, terminate.

The one adapter the submit path, the failure path, the watcher and the CLI share. Batch's refusal
of a request (HTTP 400: ClientException, ValidationException) is permanent and becomes
RejectedByServiceError; anything else (throttling, 5xx, retried by botocore first) propagates so
the record is retried.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..domain.errors import RejectedByServiceError
from ..domain.jobs.arns import job_id_of
from ..domain.jobs.described_job import DescribedJob, JobAttempt, ListedJob
from ..domain.jobs.lifecycle import CapacityUsage
from ..domain.jobs.service_job_request import ServiceJobRequest
from .paging import follow_pages

if TYPE_CHECKING:
    from mypy_boto3_batch import BatchClient
    from mypy_boto3_batch.type_defs import TerminateServiceJobsErrorDetailTypeDef

#: States a job can be terminated in (SUCCEEDED and FAILED are final).
ACTIVE_STATUSES = ("SUBMITTED", "PENDING", "RUNNABLE", "SCHEDULED", "STARTING", "RUNNING")
#: TerminateServiceJobs takes at most this many jobs per call.
TERMINATE_CHUNK = 50
#: Batch's "your request is invalid" answers; everything else (throttling, 5xx) is worth a retry.
_REFUSED = frozenset({"ClientException", "ValidationException"})
#: Submit settings DescribeServiceJob returns that a requeue passes back unchanged.
CARRIED_SETTINGS = ("retryStrategy", "timeoutConfig", "preemptionConfiguration")


def _refusal(exc: ClientError) -> str | None:
    """Batch's message when it refused the request itself; None for errors worth a retry."""
    error = exc.response.get("Error", {})
    if error.get("Code") not in _REFUSED:
        return None
    return str(error.get("Message") or error.get("Code"))


@dataclass(frozen=True)
class SubmittedServiceJob:
    """What SubmitServiceJob answered."""

    job_arn: str
    job_id: str
    job_name: str


@dataclass(frozen=True)
class TerminateResult:
    """Jobs TerminateServiceJobs accepted, and the per-job errors it reported."""

    successful: tuple[str, ...]
    errors: tuple[TerminateServiceJobsErrorDetailTypeDef, ...]  # job, code, message


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _attempt(item: Any) -> JobAttempt:
    attempt = _mapping(item)
    return JobAttempt(
        training_job_arn=_str(_mapping(attempt.get("serviceResourceId")).get("value")),
        started_at=_int(attempt.get("startedAt")),
        stopped_at=_int(attempt.get("stoppedAt")),
        status_reason=_str(attempt.get("statusReason")),
    )


def described_job(answer: Mapping[str, Any]) -> DescribedJob:
    """DescribeServiceJob's answer as a value; a member of an unexpected type reads as absent."""
    job_arn = str(answer.get("jobArn") or answer.get("jobId") or "")
    summary = answer.get("preemptionSummary")
    attempts = answer.get("attempts")
    return DescribedJob(
        job_arn=job_arn,
        job_id=str(answer.get("jobId") or job_id_of(job_arn)),
        status=str(answer.get("status") or ""),
        job_name=_str(answer.get("jobName")),
        job_queue=_str(answer.get("jobQueue")),
        status_reason=_str(answer.get("statusReason")),
        service_job_type=_str(answer.get("serviceJobType")),
        share_identifier=_str(answer.get("shareIdentifier")),
        quota_share_name=_str(answer.get("quotaShareName")),
        scheduling_priority=_int(answer.get("schedulingPriority")),
        created_at=_int(answer.get("createdAt")),
        scheduled_at=_int(answer.get("scheduledAt")),
        started_at=_int(answer.get("startedAt")),
        stopped_at=_int(answer.get("stoppedAt")),
        is_terminated=bool(answer.get("isTerminated")),
        attempts=None if attempts is None else tuple(_attempt(a) for a in attempts or ()),
        latest_training_job_arn=_attempt(answer.get("latestAttempt")).training_job_arn,
        preempted_attempts=_int(_mapping(summary).get("preemptedAttemptCount")),
        recent_preempted_attempts=tuple(
            _attempt(a) for a in _mapping(summary).get("recentPreemptedAttempts") or ()
        ),
        has_preemption_summary=bool(summary),
        capacity_usage=tuple(
            CapacityUsage(str(u.get("capacityUnit")), float(u.get("quantity") or 0))
            for u in answer.get("capacityUsage") or ()
            if isinstance(u, Mapping)
        ),
        payload=_str(answer.get("serviceRequestPayload")),
        tags={str(k): str(v) for k, v in _mapping(answer.get("tags")).items()},
        carried={key: answer[key] for key in CARRIED_SETTINGS if answer.get(key) is not None},
    )


#: What a ListServiceJobs summary tells: the fields of a ListedJob, each also a DescribedJob's.
_LISTED_FIELDS = tuple(f.name for f in fields(ListedJob))


def listed_job(summary: Mapping[str, Any]) -> ListedJob:
    """One ListServiceJobs summary as a value; a member of an unexpected type reads as absent.

    A summary's members are DescribeServiceJob's under the same names, so the description's reader
    reads them too.
    """
    described = described_job(summary)
    return ListedJob(**{name: getattr(described, name) for name in _LISTED_FIELDS})


class BatchServiceJobs:
    """Batch service-job calls on an injected client (boto3's, or anything with its method names)."""

    def __init__(self, client: BatchClient) -> None:
        self._client = client

    def submit(self, request: ServiceJobRequest) -> SubmittedServiceJob:
        """SubmitServiceJob; the request's clientToken makes a repeat answer with the same job."""
        try:
            response = self._client.submit_service_job(**request.aws_fields())
        except ClientError as exc:
            problem = _refusal(exc)
            if problem is None:
                raise
            fix = "check the job queue exists and takes this share, or ask the platform team"
            raise RejectedByServiceError("request", problem, fix) from exc
        job_id = response["jobId"]
        return SubmittedServiceJob(
            job_arn=response.get("jobArn") or job_id, job_id=job_id, job_name=response["jobName"]
        )

    def find_submitted(
        self, job_queue: str, job_name: str, tag: str, value: str
    ) -> SubmittedServiceJob | None:
        """The oldest job of ``job_queue`` named ``job_name`` whose tag ``tag`` is ``value``, if any.

        How a retried submit finds the job its first try created: Batch rejects a second identical
        request with the same clientToken (API_SubmitServiceJob.html) and describes no token, so the
        token travels as a tag. ListServiceJobs' JOB_NAME filter ignores jobStatus, so one listing
        covers every state; summaries carry no tags, hence one DescribeServiceJob per namesake.
        """
        summaries = follow_pages(
            self._client.list_service_jobs,
            "jobSummaryList",
            jobQueue=job_queue,
            filters=[{"name": "JOB_NAME", "values": [job_name]}],
        )
        found: list[DescribedJob] = []
        for summary in summaries:
            if summary.get("jobName") != job_name:
                continue  # the filter also matches by prefix and case-insensitively
            described = self.describe(summary["jobId"])
            if described is not None and described.tags.get(tag) == value:
                found.append(described)
        if not found:
            return None
        oldest = min(found, key=lambda job: (job.created_at or 0, job.job_id))
        return SubmittedServiceJob(job_arn=oldest.job_arn, job_id=oldest.job_id, job_name=job_name)

    def describe(self, job_id: str) -> DescribedJob | None:
        """DescribeServiceJob; None when Batch refuses it (the only input is the id: the job is unknown)."""
        try:
            response = dict(self._client.describe_service_job(jobId=job_id))
        except ClientError as exc:
            if _refusal(exc) is None:
                raise
            return None
        return described_job(response)

    def list_jobs(
        self, job_queue: str, status: str, filter_name: str | None = None, value: str | None = None
    ) -> list[ListedJob]:
        """ListServiceJobs of one queue and status, every page; optionally by one filter and its value."""
        params: dict[str, Any] = {"jobQueue": job_queue, "jobStatus": status}
        if filter_name:
            params["filters"] = [{"name": filter_name, "values": [value]}]
        pages = follow_pages(self._client.list_service_jobs, "jobSummaryList", **params)
        return [listed_job(summary) for summary in pages]

    def active_jobs(self, queue: str, share: str, quota: bool = False) -> Iterator[ListedJob]:
        """A share's jobs in a queue in every active state (the share filter combines with jobStatus)."""
        name = "QUOTA_SHARE_NAME" if quota else "SHARE_IDENTIFIER"
        for status in ACTIVE_STATUSES:
            yield from self.list_jobs(queue, status, name, share)

    def update_priority(self, job_id: str, scheduling_priority: int) -> None:
        """UpdateServiceJob; a refusal (job finished, bad value) becomes RejectedByServiceError."""
        try:
            self._client.update_service_job(jobId=job_id, schedulingPriority=scheduling_priority)
        except ClientError as exc:
            problem = _refusal(exc)
            if problem is None:
                raise
            raise RejectedByServiceError("UpdateServiceJob", problem, "re-read the job's state") from exc

    def terminate(self, job_id: str, reason: str) -> None:
        """TerminateServiceJob (one job); a refusal (unknown or gone) becomes RejectedByServiceError."""
        try:
            self._client.terminate_service_job(jobId=job_id, reason=reason)
        except ClientError as exc:
            problem = _refusal(exc)
            if problem is None:
                raise
            raise RejectedByServiceError("TerminateServiceJob", problem, "re-read the job's state") from exc

    def terminate_many(self, job_ids: Sequence[str], reason: str) -> TerminateResult:
        """TerminateServiceJobs in chunks of 50; per-job errors are collected, not raised."""
        successful: list[str] = []
        errors: list[TerminateServiceJobsErrorDetailTypeDef] = []
        for start in range(0, len(job_ids), TERMINATE_CHUNK):
            response = self._client.terminate_service_jobs(
                jobs=list(job_ids[start : start + TERMINATE_CHUNK]), reason=reason
            )
            successful += response.get("successful", [])
            errors += response.get("errors", [])
        return TerminateResult(tuple(successful), tuple(errors))
