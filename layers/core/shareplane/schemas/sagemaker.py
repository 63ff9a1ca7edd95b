"""SageMaker ``Training Job State Change`` events (a DescribeTrainingJob-like detail)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from .common import MAX_COUNT, Count, Detail, Envelope, EpochMillis, Seconds


class SecondaryStatusTransition(Detail):
    """One step of SageMaker's secondary status history."""

    Status: str
    StartTime: EpochMillis | None = None
    EndTime: EpochMillis | None = None
    StatusMessage: str | None = None


class TrainingResources(Detail):
    """Instances the training job asked for."""

    InstanceType: str | None = None
    InstanceCount: Count | None = None


class TrainingJobDetail(Detail):
    """The training job; FailureReason appears only when it failed (cut at 1024 characters)."""

    TrainingJobName: str | None = None
    TrainingJobArn: str
    TrainingJobStatus: str
    SecondaryStatus: str | None = None
    FailureReason: str | None = None
    ResourceConfig: TrainingResources | None = None
    CreationTime: EpochMillis | None = None
    TrainingStartTime: EpochMillis | None = None
    TrainingEndTime: EpochMillis | None = None
    LastModifiedTime: EpochMillis | None = None
    #: Seconds billed per instance (DescribeTrainingJob): training only, not provisioning; with managed
    #: spot training, less than TrainingTimeInSeconds by the spot saving.
    BillableTimeInSeconds: Seconds | None = None
    TrainingTimeInSeconds: Seconds | None = None
    EnableManagedSpotTraining: bool | None = None
    # Its length is the transition count the stored ordering key writes with four digits.
    SecondaryStatusTransitions: list[SecondaryStatusTransition] = Field(
        default_factory=list, max_length=MAX_COUNT
    )
    Tags: dict[str, str] = Field(default_factory=dict)

    @field_validator("Tags", mode="before")
    @classmethod
    def _tags_as_map(cls, value: Any) -> Any:
        # Events carry a map; the API's [{Key, Value}] list is accepted too.
        if isinstance(value, list):
            return {item["Key"]: item["Value"] for item in value if isinstance(item, dict) and "Key" in item}
        return value


class SageMakerTrainingJobStateChange(Envelope):
    """``SageMaker Training Job State Change``."""

    source: Literal["aws.sagemaker"]
    detail_type: Literal["SageMaker Training Job State Change"] = Field(alias="detail-type")
    detail: TrainingJobDetail
