"""AWS Batch service jobs on an injected client: submit, describe, list, reprioritize, terminate.

The one adapter the submit path, the failure path, the watcher and the CLI share. Batch's refusal
of a request (HTTP 400: ClientException, ValidationException) is permanent and becomes
RejectedByServiceError; anything else (throttling, 5xx, retried by botocore first) propagates so
the record is retried.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..domain.errors import RejectedByServiceError
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


class BatchServiceJobs:
    """Batch service-job calls on an injected client (boto3's, or anything with its method names)."""

    def __init__(self, client: BatchClient) -> None:
        self._client = client

    def submit(self, request: Mapping[str, Any]) -> SubmittedServiceJob:
        """SubmitServiceJob; the request's clientToken makes a repeat answer with the same job."""
        try:
            response = self._client.submit_service_job(**request)
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
        found: list[dict[str, Any]] = []
        for summary in summaries:
            if summary.get("jobName") != job_name:
                continue  # the filter also matches by prefix and case-insensitively
            described = self.describe(summary["jobId"])
            if described is not None and (described.get("tags") or {}).get(tag) == value:
                found.append(described)
        if not found:
            return None
        oldest = min(found, key=lambda job: (job.get("createdAt") or 0, job["jobId"]))
        return SubmittedServiceJob(
            job_arn=oldest.get("jobArn") or oldest["jobId"], job_id=oldest["jobId"], job_name=job_name
        )

    def describe(self, job_id: str) -> dict[str, Any] | None:
        """DescribeServiceJob; None when Batch refuses it (the only input is the id: the job is unknown)."""
        try:
            response = dict(self._client.describe_service_job(jobId=job_id))
        except ClientError as exc:
            if _refusal(exc) is None:
                raise
            return None
        response.pop("ResponseMetadata", None)
        return response

    def list_jobs(
        self, job_queue: str, status: str, filter_name: str | None = None, value: str | None = None
    ) -> list[dict[str, Any]]:
        """ListServiceJobs of one queue and status, every page; optionally by one filter and its value."""
        params: dict[str, Any] = {"jobQueue": job_queue, "jobStatus": status}
        if filter_name:
            params["filters"] = [{"name": filter_name, "values": [value]}]
        return list(follow_pages(self._client.list_service_jobs, "jobSummaryList", **params))

    def active_jobs(self, queue: str, share: str, quota: bool = False) -> Iterator[dict[str, Any]]:
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
