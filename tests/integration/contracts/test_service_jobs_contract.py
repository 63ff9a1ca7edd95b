"""ServiceJobs / ReclaimBatch: the fake and BatchServiceJobs agree (submit, list, reprioritize, terminate).

moto has no service jobs, so the adapter runs against gpusim, the repository's emulator of Batch, served
over HTTP to a real boto3 client (as tests/rebalance_cluster.py serves it) on a clock that does not move.
DescribeServiceJob's answer is compared where a job's state shows (its listing), not field by field.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import boto3
import botocore.session
import pytest
from gpusim import BatchModel, ModelOptions, RealtimeEngine
from gpusim.server import GpuSimServer
from shareplane.adapters.batch_service_jobs import ACTIVE_STATUSES, BatchServiceJobs
from shareplane.domain.errors import RejectedByServiceError
from shareplane.domain.jobs.described_job import ListedJob
from shareplane.domain.jobs.service_job_request import ServiceJobRequest

from tests.fakes.service_jobs import FakeServiceJobs
from tests.rebalance_cluster import FAST, P4D, QUEUE, Cluster, fairshare_queue

SUMMARY_MEMBERS = set(
    botocore.session.get_session().get_service_model("batch").shape_for("ServiceJobSummary").members
)
TOKEN_TAG = "shareplane:client-token"
#: The ServiceJobSummary member each field of a ListedJob is read from.
LISTED_FROM = {
    f.name: "latestAttempt"
    if f.name == "latest_training_job_arn"
    else "".join(w if i == 0 else w.title() for i, w in enumerate(f.name.split("_")))
    for f in dataclasses.fields(ListedJob)
}


@pytest.fixture(params=["fake", "on gpusim"])
def batch(request: pytest.FixtureRequest, aws_credentials: None) -> Iterator[Any]:
    if request.param == "fake":
        yield FakeServiceJobs()
        return
    clock = [0.0]
    model = BatchModel(engine=RealtimeEngine(wall_clock=lambda: clock[0]), options=ModelOptions(timings=FAST))
    server = GpuSimServer(model).start()
    try:
        client = boto3.client("batch", region_name="us-east-1", endpoint_url=server.endpoint)
        fairshare_queue(Cluster(model, clock, client, None, None), {"ProdExp1": 1.0, "ProdExp2": 1.0})
        yield BatchServiceJobs(client)
    finally:
        server.stop()


def request(name: str, token: str, priority: int = 50) -> ServiceJobRequest:
    payload = {
        "TrainingJobName": name,
        "AlgorithmSpecification": {
            "TrainingImage": "111122223333.dkr.ecr.us-east-1.amazonaws.com/prodexp1/t:1",
            "TrainingInputMode": "File",
        },
        "RoleArn": "arn:aws:iam::111122223333:role/shareplane-search-ProdExp1-training",
        "OutputDataConfig": {"S3OutputPath": "s3://search-ml-training/prodexp1/"},
        "ResourceConfig": {"InstanceType": P4D, "InstanceCount": 1, "VolumeSizeInGB": 100},
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
    }
    return ServiceJobRequest(
        job_name=name,
        job_queue=QUEUE,
        service_job_type="SAGEMAKER_TRAINING",
        service_request_payload=json.dumps(payload),
        scheduling_priority=priority,
        share_identifier="ProdExp1",
        client_token=token,
        tags={TOKEN_TAG: token},
    )


def listed(
    batch: Any, job_id: str, statuses: tuple[str, ...] = (*ACTIVE_STATUSES, "SUCCEEDED", "FAILED")
) -> list[str]:
    """The statuses a job is listed under in its queue (by name; the ARN is the same queue)."""
    return [s for s in statuses for summary in batch.list_jobs(QUEUE, s) if summary.job_id == job_id]


def test_a_submit_makes_one_job_and_its_token_cannot_make_another(batch: Any) -> None:
    first = batch.submit(request("bert", "tok-1"))
    assert first.job_name == "bert" and first.job_arn.endswith("/" + first.job_id)
    with pytest.raises(RejectedByServiceError):
        batch.submit(request("bert", "tok-1"))
    second = batch.submit(request("bert", "tok-2"))
    assert second.job_id != first.job_id


def test_a_submitted_job_is_listed_once_as_an_active_job_with_summary_members_only(batch: Any) -> None:
    job = batch.submit(request("bert", "tok-1"))
    (status,) = listed(batch, job.job_id)
    assert status in ACTIVE_STATUSES
    (summary,) = [s for s in batch.list_jobs(QUEUE, status) if s.job_id == job.job_id]
    assert isinstance(summary, ListedJob) and set(LISTED_FROM.values()) <= SUMMARY_MEMBERS
    assert summary.job_name == "bert" and summary.job_arn == job.job_arn and summary.status == status
    assert summary.share_identifier == "ProdExp1" and summary.service_job_type == "SAGEMAKER_TRAINING"
    assert not {"schedulingPriority", "tags"} & set(LISTED_FROM.values())
    assert batch.list_jobs(QUEUE, "SUCCEEDED") == []


def test_a_retried_submit_finds_its_first_job_by_name_and_token(batch: Any) -> None:
    first = batch.submit(request("bert", "tok-1"))
    batch.submit(request("bert", "tok-2"))
    batch.submit(request("bert-2", "tok-1b"))
    found = batch.find_submitted(QUEUE, "bert", TOKEN_TAG, "tok-1")
    assert found is not None and found.job_id == first.job_id
    assert batch.find_submitted(QUEUE, "bert", TOKEN_TAG, "tok-9") is None
    assert batch.find_submitted(QUEUE, "ber", TOKEN_TAG, "tok-1") is None


def test_a_priority_update_is_refused_for_an_unknown_job_or_a_value_out_of_range(batch: Any) -> None:
    job = batch.submit(request("bert", "tok-1"))
    batch.update_priority(job.job_id, 9999)
    batch.update_priority(job.job_id, 0)
    for job_id, priority in ((job.job_id, 10000), (job.job_id, -1), ("never-submitted", 50)):
        with pytest.raises(RejectedByServiceError):
            batch.update_priority(job_id, priority)


def test_a_terminated_job_ends_failed_and_can_no_longer_be_updated(batch: Any) -> None:
    job = batch.submit(request("bert", "tok-1"))
    batch.terminate(job.job_id, "stopped for a waiting HIGHPRI job")
    assert listed(batch, job.job_id) == ["FAILED"]
    with pytest.raises(RejectedByServiceError):
        batch.update_priority(job.job_id, 60)
    with pytest.raises(RejectedByServiceError):
        batch.terminate("never-submitted", "reason")
