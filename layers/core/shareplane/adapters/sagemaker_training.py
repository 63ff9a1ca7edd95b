"""SageMaker training jobs through an injected boto3 ``sagemaker`` client, read only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_sagemaker import SageMakerClient

#: What SageMaker answers for a training job name it does not know.
_UNKNOWN = ("ValidationException", "ResourceNotFound")


class SageMakerTrainingJobs:
    """TrainingJobs on the SageMaker API."""

    def __init__(self, client: SageMakerClient) -> None:
        self._client = client

    def describe(self, training_job_name: str) -> dict[str, Any] | None:
        """DescribeTrainingJob; None when SageMaker does not know the name (ValidationException)."""
        try:
            response = self._client.describe_training_job(TrainingJobName=training_job_name)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _UNKNOWN:
                return None
            raise
        return {key: value for key, value in response.items() if key != "ResponseMetadata"}
