"""SageMaker training jobs through an injected boto3 ``sagemaker`` client, read only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..domain.training import TrainingJobFacts

if TYPE_CHECKING:
    from mypy_boto3_sagemaker import SageMakerClient

#: What SageMaker answers for a training job name it does not know.
_UNKNOWN = ("ValidationException", "ResourceNotFound")


class SageMakerTrainingJobs:
    """TrainingJobs on the SageMaker API."""

    def __init__(self, client: SageMakerClient) -> None:
        self._client = client

    def describe(self, training_job_name: str) -> TrainingJobFacts | None:
        """DescribeTrainingJob; None when SageMaker does not know the name (ValidationException)."""
        try:
            response = self._client.describe_training_job(TrainingJobName=training_job_name)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _UNKNOWN:
                return None
            raise
        return training_job_facts(dict(response))


def training_job_facts(answer: Mapping[str, Any]) -> TrainingJobFacts:
    """DescribeTrainingJob's answer, as far as the failure path reads it."""

    def text(key: str) -> str | None:
        value = answer.get(key)
        return value if isinstance(value, str) else None

    return TrainingJobFacts(
        name=text("TrainingJobName"),
        status=text("TrainingJobStatus"),
        secondary_status=text("SecondaryStatus"),
        failure_reason=text("FailureReason"),
    )
