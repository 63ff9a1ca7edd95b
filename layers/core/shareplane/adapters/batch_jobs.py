"""AWS Batch service jobs through an injected boto3 ``batch`` client: describe, submit, list, reprioritize."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from botocore.exceptions import ClientError

from ..domain.errors import RejectedByServiceError

#: Batch answers a request it refuses (validation, unknown job, a quota) with ClientException
#: (HTTP 400); ServerException and throttling are retried by botocore and then raised.
_REFUSED = "ClientException"


def _refused(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == _REFUSED


class BatchServiceJobsAdapter:
    """BatchServiceJobs on the Batch API."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def describe(self, job_id: str) -> dict[str, Any] | None:
        """DescribeServiceJob; None when Batch refuses it (the only input is the id: the job is unknown)."""
        try:
            response = self._client.describe_service_job(jobId=job_id)
        except ClientError as exc:
            if _refused(exc):
                return None
            raise
        response.pop("ResponseMetadata", None)
        return response

    def submit(self, params: Mapping[str, Any]) -> str:
        """SubmitServiceJob; Batch's refusal becomes RejectedByServiceError carrying its message."""
        try:
            response = self._client.submit_service_job(**params)
        except ClientError as exc:
            if _refused(exc):
                error = exc.response.get("Error", {})
                raise RejectedByServiceError(
                    "SubmitServiceJob",
                    error.get("Message") or str(exc),
                    "fix what AWS Batch names and resubmit",
                ) from exc
            raise
        return str(response["jobArn"])

    def list_jobs(self, job_queue: str, status: str) -> list[dict[str, Any]]:
        """ListServiceJobs of one queue and status, every page."""
        summaries: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"jobQueue": job_queue, "jobStatus": status, "maxResults": 100}
            if token:
                kwargs["nextToken"] = token
            response = self._client.list_service_jobs(**kwargs)
            summaries += response.get("jobSummaryList", [])
            token = response.get("nextToken")
            if not token:
                return summaries

    def update_priority(self, job_id: str, scheduling_priority: int) -> None:
        """UpdateServiceJob; a refusal (job finished, bad value) becomes RejectedByServiceError."""
        try:
            self._client.update_service_job(jobId=job_id, schedulingPriority=scheduling_priority)
        except ClientError as exc:
            if _refused(exc):
                message = exc.response.get("Error", {}).get("Message") or str(exc)
                raise RejectedByServiceError("UpdateServiceJob", message, "re-read the job's state") from exc
            raise


class SageMakerTrainingJobsAdapter:
    """TrainingJobs on the SageMaker API."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def describe(self, training_job_name: str) -> dict[str, Any] | None:
        """DescribeTrainingJob; None when SageMaker does not know the name (ValidationException)."""
        try:
            response = self._client.describe_training_job(TrainingJobName=training_job_name)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("ValidationException", "ResourceNotFound"):
                return None
            raise
        response.pop("ResponseMetadata", None)
        return response
