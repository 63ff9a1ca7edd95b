"""What the services read out of a described job's payload (domain/jobs/described_job.py)."""

from __future__ import annotations

import json

import pytest
from shareplane.domain.jobs.described_job import DescribedJob

ARN = "arn:aws:batch:us-east-1:123456789012:service-job/j-1"


def _described(payload: object) -> DescribedJob:
    text = payload if isinstance(payload, str) or payload is None else json.dumps(payload)
    return DescribedJob(job_arn=ARN, job_id="j-1", status="RUNNING", payload=text)


def test_the_instance_type_and_checkpoint_uri_are_read_from_the_training_request() -> None:
    described = _described(
        {
            "ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2},
            "CheckpointConfig": {"S3Uri": "s3://ckpt/team-a/job-1/"},
        }
    )
    assert described.payload_instance_type == "ml.p4d.24xlarge"
    assert described.checkpoint_uri == "s3://ckpt/team-a/job-1/"


@pytest.mark.parametrize(
    "payload",
    [
        None,
        "not json",
        [1, 2],
        {},
        {"ResourceConfig": "ml.p4d.24xlarge", "CheckpointConfig": "s3://x"},
        {"ResourceConfig": {"InstanceType": ""}, "CheckpointConfig": {"S3Uri": ""}},
        {"ResourceConfig": None, "CheckpointConfig": None},
    ],
)
def test_a_payload_without_them_names_neither(payload: object) -> None:
    described = _described(payload)
    assert described.payload_instance_type is None
    assert described.checkpoint_uri is None
