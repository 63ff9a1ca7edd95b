"""SageMaker training jobs through an injected boto3 ``sagemaker`` client, read only."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..domain.jobs.training import TrainingJobFacts, TrainingJobObservation, TrainingJobStatus

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
        answer = self._describe(training_job_name)
        return training_job_facts(answer) if answer is not None else None

    def observe(self, training_job_name: str) -> TrainingJobObservation | None:
        """DescribeTrainingJob as an observation of the training job (what its state event would
        say); None when SageMaker does not know the name or answers in no known status."""
        answer = self._describe(training_job_name)
        return training_job_observation(answer) if answer is not None else None

    def _describe(self, training_job_name: str) -> dict[str, Any] | None:
        try:
            response = self._client.describe_training_job(TrainingJobName=training_job_name)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _UNKNOWN:
                return None
            raise
        return dict(response)


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


def _epoch_ms(value: Any) -> int | None:
    """A DescribeTrainingJob time (boto3 gives datetimes) as epoch ms, as the state events carry it."""
    if isinstance(value, datetime):
        return int(round(value.timestamp() * 1000))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    return None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def training_job_observation(answer: Mapping[str, Any]) -> TrainingJobObservation | None:
    """DescribeTrainingJob's answer read as the state event's detail is (``schemas/parse.py``), so an
    event and a description of one state have one digest; None without an ARN or a known status."""
    arn, status = answer.get("TrainingJobArn"), answer.get("TrainingJobStatus")
    if not isinstance(arn, str) or status not in {s.value for s in TrainingJobStatus}:
        return None
    resources = answer.get("ResourceConfig")
    resources = resources if isinstance(resources, Mapping) else {}
    transitions = answer.get("SecondaryStatusTransitions")

    def text(key: str) -> str | None:
        value = answer.get(key)
        return value if isinstance(value, str) else None

    instance_type = resources.get("InstanceType")
    return TrainingJobObservation(
        training_job_arn=arn,
        status=TrainingJobStatus(status),
        training_job_name=text("TrainingJobName"),
        secondary_status=text("SecondaryStatus"),
        failure_reason=text("FailureReason"),
        instance_type=instance_type if isinstance(instance_type, str) else None,
        instance_count=_count(resources.get("InstanceCount")),
        created_at=_epoch_ms(answer.get("CreationTime")),
        training_started_at=_epoch_ms(answer.get("TrainingStartTime")),
        training_ended_at=_epoch_ms(answer.get("TrainingEndTime")),
        last_modified_at=_epoch_ms(answer.get("LastModifiedTime")),
        transitions=len(transitions) if isinstance(transitions, list) else 0,
        billable_seconds=_count(answer.get("BillableTimeInSeconds")),
        training_seconds=_count(answer.get("TrainingTimeInSeconds")),
        managed_spot=answer.get("EnableManagedSpotTraining") is True,
    )
