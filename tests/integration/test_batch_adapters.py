"""The Batch service-jobs adapter's failure-path calls, the shared pager and SageMaker (botocore Stubber)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from shareplane.adapters.batch_policy import BatchPolicyAdapter
from shareplane.adapters.batch_service_jobs import BatchServiceJobs, described_job
from shareplane.adapters.sagemaker_training import SageMakerTrainingJobs
from shareplane.domain.errors import RejectedByServiceError

REGION = "us-east-1"
DESCRIBED = {
    "jobId": "j1",
    "jobName": "bert",
    "jobQueue": "gpu",
    "serviceJobType": "SAGEMAKER_TRAINING",
    "startedAt": 1,
    "status": "FAILED",
}


@pytest.fixture
def batch(aws_credentials: None) -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client("batch", region_name=REGION)
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def test_describe_returns_the_job_without_response_metadata(batch: tuple[Any, Stubber]) -> None:
    client, stubber = batch
    stubber.add_response("describe_service_job", DESCRIBED, {"jobId": "j1"})
    assert BatchServiceJobs(client).describe("j1") == described_job(DESCRIBED)


@pytest.mark.parametrize(
    ("code", "outcome"),
    [("ClientException", None), ("ServerException", ClientError)],
    ids=[
        "a job Batch refuses to describe is unknown (None)",
        "a server error propagates so the record is retried",
    ],
)
def test_describe_maps_batchs_errors(batch: tuple[Any, Stubber], code: str, outcome: type | None) -> None:
    client, stubber = batch
    stubber.add_client_error("describe_service_job", service_error_code=code)
    if outcome is None:
        assert BatchServiceJobs(client).describe("gone") is None
    else:
        with pytest.raises(outcome):
            BatchServiceJobs(client).describe("gone")


def test_list_jobs_follows_every_page_with_the_filter(batch: tuple[Any, Stubber]) -> None:
    client, stubber = batch
    summary = {"jobId": "1", "jobName": "j", "serviceJobType": "SAGEMAKER_TRAINING"}
    base = {
        "jobQueue": "gpu",
        "jobStatus": "RUNNABLE",
        "filters": [{"name": "SHARE_IDENTIFIER", "values": ["A"]}],
    }
    stubber.add_response("list_service_jobs", {"jobSummaryList": [summary], "nextToken": "p2"}, base)
    stubber.add_response(
        "list_service_jobs", {"jobSummaryList": [summary, summary]}, {**base, "nextToken": "p2"}
    )
    assert len(BatchServiceJobs(client).list_jobs("gpu", "RUNNABLE", "SHARE_IDENTIFIER", "A")) == 3


def test_update_priority_turns_a_refusal_into_a_rejection(batch: tuple[Any, Stubber]) -> None:
    client, stubber = batch
    stubber.add_client_error(
        "update_service_job", service_error_code="ClientException", service_message="done"
    )
    with pytest.raises(RejectedByServiceError) as raised:
        BatchServiceJobs(client).update_priority("j1", 90)
    assert raised.value.field == "UpdateServiceJob" and raised.value.problem == "done"


def test_the_policy_adapter_pages_quota_shares_with_the_shared_pager(batch: tuple[Any, Stubber]) -> None:
    client, stubber = batch
    stubber.add_response(
        "list_quota_shares", {"quotaShares": [listed_quota_share("A")], "nextToken": "n"}, {"jobQueue": "q"}
    )
    stubber.add_response(
        "list_quota_shares", {"quotaShares": [listed_quota_share("B")]}, {"jobQueue": "q", "nextToken": "n"}
    )
    assert [s.name for s in BatchPolicyAdapter(client).list_quota_shares("q")] == ["A", "B"]


def listed_quota_share(name: str) -> dict[str, Any]:
    """A ListQuotaShares entry (QuotaShareDetail) with every member the API marks required."""
    return {
        "quotaShareName": name,
        "quotaShareArn": f"arn:aws:batch:us-east-1:123456789012:quota-share/q/{name}",
        "jobQueueArn": "arn:aws:batch:us-east-1:123456789012:job-queue/q",
        "capacityLimits": [{"maxCapacity": 4, "capacityUnit": "ml.p4d.24xlarge"}],
        "resourceSharingConfiguration": {"strategy": "LEND_AND_BORROW", "borrowLimit": -1},
        "preemptionConfiguration": {"inSharePreemption": "DISABLED"},
        "state": "ENABLED",
        "status": "VALID",
    }


def test_a_training_job_sagemaker_does_not_know_is_none(aws_credentials: None) -> None:
    client = boto3.client("sagemaker", region_name=REGION)
    with Stubber(client) as stubber:
        stubber.add_client_error("describe_training_job", service_error_code="ValidationException")
        assert SageMakerTrainingJobs(client).describe("nope") is None
