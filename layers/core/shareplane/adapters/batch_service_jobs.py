"""AWS Batch service jobs: submit with a client token, terminate, list a share's active jobs."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from ..domain.errors import RejectedByServiceError

#: States a job can be terminated in (SUCCEEDED and FAILED are final).
ACTIVE_STATUSES = ("SUBMITTED", "PENDING", "RUNNABLE", "SCHEDULED", "STARTING", "RUNNING")
#: TerminateServiceJobs takes at most this many jobs per call.
TERMINATE_CHUNK = 50
#: Batch's "your request is invalid" answer; everything else (throttling, 5xx) is worth a retry.
_INVALID_REQUEST = {"ClientException", "ValidationException"}


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
    errors: tuple[Mapping[str, str], ...]


class BatchServiceJobs:
    """Batch service-job calls on an injected client."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def submit(self, request: Mapping[str, Any]) -> SubmittedServiceJob:
        """SubmitServiceJob; RejectedByServiceError when Batch calls the request invalid."""
        try:
            response = self._client.submit_service_job(**request)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            if error.get("Code") in _INVALID_REQUEST:
                raise RejectedByServiceError(
                    "request",
                    str(error.get("Message") or error.get("Code")),
                    "check the job queue exists and takes this share, or ask the platform team",
                ) from exc
            raise
        job_id = response["jobId"]
        return SubmittedServiceJob(
            job_arn=response.get("jobArn") or job_id, job_id=job_id, job_name=response["jobName"]
        )

    def terminate(self, job_id: str, reason: str) -> None:
        """TerminateServiceJob (one job)."""
        self._client.terminate_service_job(jobId=job_id, reason=reason)

    def terminate_many(self, job_ids: Sequence[str], reason: str) -> TerminateResult:
        """TerminateServiceJobs in chunks of 50; per-job errors are collected, not raised."""
        successful: list[str] = []
        errors: list[Mapping[str, str]] = []
        for start in range(0, len(job_ids), TERMINATE_CHUNK):
            response = self._client.terminate_service_jobs(
                jobs=list(job_ids[start : start + TERMINATE_CHUNK]), reason=reason
            )
            successful += response.get("successful", [])
            errors += response.get("errors", [])
        return TerminateResult(tuple(successful), tuple(errors))

    def active_jobs(self, queue: str, share: str, quota: bool = False) -> Iterator[Mapping[str, Any]]:
        """A share's jobs in a queue in every active state (the share filter combines with jobStatus)."""
        name = "QUOTA_SHARE_NAME" if quota else "SHARE_IDENTIFIER"
        for status in ACTIVE_STATUSES:
            token: str | None = None
            while True:
                kwargs: dict[str, Any] = {
                    "jobQueue": queue,
                    "jobStatus": status,
                    "filters": [{"name": name, "values": [share]}],
                }
                if token:
                    kwargs["nextToken"] = token
                response = self._client.list_service_jobs(**kwargs)
                yield from response.get("jobSummaryList", [])
                token = response.get("nextToken")
                if not token:
                    break
