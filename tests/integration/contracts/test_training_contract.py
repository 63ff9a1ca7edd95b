"""TrainingJobs: the fake and SageMakerTrainingJobs on moto describe a training job alike.

The fake holds DescribeTrainingJob answers as tests give them; on moto the job is created with
CreateTrainingJob (moto marks it Completed at once), so the cases compare what the readers of a
description use (TrainingJobFacts: its name, status and failure reason), and None for a name SageMaker
does not know.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws
from shareplane.adapters.sagemaker_training import SageMakerTrainingJobs

from tests.fakes.training import FakeTraining

REGION = "us-east-1"
REQUEST = {
    "TrainingJobName": "AWSBatchbert-ft-01a2b3",
    "AlgorithmSpecification": {
        "TrainingImage": "123456789012.dkr.ecr.us-east-1.amazonaws.com/bert:1",
        "TrainingInputMode": "File",
    },
    "RoleArn": "arn:aws:iam::123456789012:role/shareplane-training",
    "OutputDataConfig": {"S3OutputPath": "s3://search-ml-training/prodexp1/out/"},
    "ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2, "VolumeSizeInGB": 100},
    "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
    "CheckpointConfig": {"S3Uri": "s3://search-ml-training/prodexp1/ckpt/bert/"},
}


@dataclass
class TrainingUnderTest:
    training: Any
    create: Callable[[dict[str, Any]], None]


@pytest.fixture(params=["fake", "on moto"])
def under_test(request: pytest.FixtureRequest, aws_credentials: None) -> Iterator[TrainingUnderTest]:
    if request.param == "fake":
        fake = FakeTraining()

        def create(job: dict[str, Any]) -> None:
            arn = f"arn:aws:sagemaker:{REGION}:123456789012:training-job/{job['TrainingJobName']}"
            fake.jobs[job["TrainingJobName"]] = {
                **job,
                "TrainingJobArn": arn,
                "TrainingJobStatus": "Completed",
            }

        yield TrainingUnderTest(fake, create)
        return
    with mock_aws():
        client = boto3.client("sagemaker", region_name=REGION)
        yield TrainingUnderTest(SageMakerTrainingJobs(client), lambda job: client.create_training_job(**job))


def test_a_training_job_is_described_with_what_it_was_created_with(under_test: TrainingUnderTest) -> None:
    under_test.create(REQUEST)
    described = under_test.training.describe(REQUEST["TrainingJobName"])
    assert described is not None
    assert described.name == REQUEST["TrainingJobName"]
    assert described.status == "Completed"
    assert described.failure_reason is None


def test_a_name_sagemaker_does_not_know_is_none(under_test: TrainingUnderTest) -> None:
    under_test.create(REQUEST)
    assert under_test.training.describe("AWSBatchnever-started") is None


def test_a_training_job_is_observed_as_its_state_event_would_say_it(under_test: TrainingUnderTest) -> None:
    under_test.create(REQUEST)
    observed = under_test.training.observe(REQUEST["TrainingJobName"])
    assert observed is not None
    assert observed.training_job_arn.endswith(":training-job/" + REQUEST["TrainingJobName"])
    assert (observed.status.value, observed.status.is_final) == ("Completed", True)
    assert (observed.instance_type, observed.instance_count) == ("ml.p4d.24xlarge", 2)
    assert under_test.training.observe("AWSBatchnever-started") is None
