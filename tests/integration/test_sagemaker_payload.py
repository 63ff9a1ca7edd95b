"""A spec file and the SageMaker SDK's ModelTrainer + TrainingQueue put the same job in the same queue.

Needs the optional ``shareplane[sagemaker]`` extra. The SDK builds its SubmitServiceJob request offline
once two things are out of its way: ModelTrainer validates the execution role with IAM
SimulatePrincipalPolicy while it is constructed (``SAGEMAKER_VALIDATE_ROLE=false`` turns that off), and
TrainingQueue.submit calls Batch (its client factory is replaced by a recorder). mock_aws guarantees
nothing else reaches the network.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from moto import mock_aws
from shareplane.domain.submit.jobspec import parse_spec_file

from tests.fakes.failure_world import shares_config

pytestmark = pytest.mark.sagemaker

SPEC = b"""\
name: ranker-ft-01
priority: HIGHPRI
instance_type: ml.p4d.24xlarge
instance_count: 2
framework: pytorch
framework_version: "2.6.0"
hyperparameters: {epochs: 3}
inputs: {train: "s3://search-ml-datasets/prodexp1/train/"}
output_path: s3://search-ml-training/prodexp1/output/
"""


def sdk_request(monkeypatch: pytest.MonkeyPatch, image: str, role: str) -> dict[str, Any]:
    """The SubmitServiceJob request TrainingQueue.submit makes for the same job."""
    import boto3
    from sagemaker.core.helper.session_helper import Session
    from sagemaker.train import ModelTrainer
    from sagemaker.train.aws_batch import batch_api_helper
    from sagemaker.train.aws_batch.training_queue import TrainingQueue
    from sagemaker.train.configs import Compute, InputData, OutputDataConfig, StoppingCondition

    captured: dict[str, Any] = {}

    class Recorder:
        def submit_service_job(self, **request: Any) -> dict[str, str]:
            captured.update(request)
            return {
                "jobArn": "arn:aws:batch:us-east-1:123456789012:service-job/1",
                "jobName": request["jobName"],
                "jobId": "1",
            }

    monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")
    monkeypatch.setattr(batch_api_helper, "get_batch_boto_client", lambda *a, **k: Recorder())
    with mock_aws():
        trainer = ModelTrainer(
            training_image=image,
            base_job_name="ranker",
            role=role,
            compute=Compute(instance_type="ml.p4d.24xlarge", instance_count=2, volume_size_in_gb=100),
            stopping_condition=StoppingCondition(max_runtime_in_seconds=86400),
            hyperparameters={"epochs": 3},
            output_data_config=OutputDataConfig(s3_output_path="s3://search-ml-training/prodexp1/output/"),
            sagemaker_session=Session(boto_session=boto3.Session(region_name="us-east-1")),
        )
        TrainingQueue("search-p4d-queue").submit(
            trainer,
            [InputData(channel_name="train", data_source="s3://search-ml-datasets/prodexp1/train/")],
            "ranker-ft-01",
            priority=90,
            # The team x tier layout: an SDK user submits to the team's identifier of the tier.
            share_identifier="ProdExp1HIGHPRI",
        )
    return captured


def test_a_spec_file_and_the_sdk_submit_the_same_job_to_the_same_queue(
    aws_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = shares_config()
    (job,) = parse_spec_file(SPEC, "submit/ProdExp1/ranker.yaml", config, bucket="drop", version_id="v1").jobs
    ours = job.request.aws_fields() if job.request else {}
    ours_payload = json.loads(ours["serviceRequestPayload"])
    theirs = sdk_request(
        monkeypatch, ours_payload["AlgorithmSpecification"]["TrainingImage"], ours_payload["RoleArn"]
    )
    theirs_payload = json.loads(theirs["serviceRequestPayload"])
    # Same queue, share, priority, job type, name and timeout
    for field in (
        "jobName",
        "jobQueue",
        "shareIdentifier",
        "schedulingPriority",
        "serviceJobType",
        "timeoutConfig",
    ):
        assert ours[field] == theirs[field], field
    # The same CreateTrainingJob: every field that defines the job is equal ...
    for field in (
        "AlgorithmSpecification",
        "HyperParameters",
        "ResourceConfig",
        "RoleArn",
        "StoppingCondition",
    ):
        assert ours_payload[field] == theirs_payload[field], field
    assert (
        ours_payload["OutputDataConfig"]["S3OutputPath"] == theirs_payload["OutputDataConfig"]["S3OutputPath"]
    )
    strip = [{k: c[k] for k in ("ChannelName", "DataSource")} for c in theirs_payload["InputDataConfig"]]
    assert ours_payload["InputDataConfig"] == strip
    # ... and the spec's payload has every field the SDK sends. The known differences are by design:
    # the SDK names the training job <base>-<timestamp> (ours: the spec's name), repeats the default
    # InputMode File per channel and CompressionType GZIP, and retries once on its no-space
    # InternalServerError pattern; ours adds team/tier tags and the team's retry policy.
    assert set(theirs_payload) <= set(ours_payload)
    assert (
        theirs_payload["TrainingJobName"].startswith("ranker-")
        and ours_payload["TrainingJobName"] == "ranker-ft-01"
    )
