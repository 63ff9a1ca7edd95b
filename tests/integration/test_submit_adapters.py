"""The submit path's adapters: S3 (versioned, on moto), Batch (botocore Stubber), SNS and DynamoDB (moto)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from moto import mock_aws
from shareplane.adapters.batch_service_jobs import ACTIVE_STATUSES, BatchServiceJobs
from shareplane.adapters.dynamodb_store import DynamoJobStore
from shareplane.adapters.s3_spec_bucket import S3SpecBucket
from shareplane.adapters.sns_alerts import MAX_MESSAGE_BYTES, SnsAlerts
from shareplane.domain.errors import RejectedByServiceError
from shareplane.domain.jobs.service_job_request import ServiceJobRequest

from tests.aws import create_jobs_table, topic_with_inbox

REGION = "us-east-1"


@pytest.fixture
def s3(aws_credentials: None) -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("s3", region_name=REGION)
        client.create_bucket(Bucket="drop")
        client.put_bucket_versioning(Bucket="drop", VersioningConfiguration={"Status": "Enabled"})
        yield client


def test_head_and_read_see_exactly_the_version_asked_for(s3: Any) -> None:
    bucket = S3SpecBucket(s3)
    v1 = s3.put_object(Bucket="drop", Key="submit/T/a.yaml", Body=b"one")["VersionId"]
    s3.put_object(Bucket="drop", Key="submit/T/a.yaml", Body=b"second")
    head = bucket.head("drop", "submit/T/a.yaml", v1)
    assert head is not None and head.size == 3 and head.version_id == v1 and head.last_modified_ms > 0
    assert bucket.read("drop", "submit/T/a.yaml", v1) == b"one"


def test_deleting_a_version_leaves_a_newer_upload_of_the_same_key(s3: Any) -> None:
    bucket = S3SpecBucket(s3)
    v1 = s3.put_object(Bucket="drop", Key="submit/T/a.yaml", Body=b"one")["VersionId"]
    bucket.copy("drop", "submit/T/a.yaml", v1, "accepted/T/a.yaml")
    s3.put_object(Bucket="drop", Key="submit/T/a.yaml", Body=b"newer")
    bucket.delete("drop", "submit/T/a.yaml", v1)
    assert bucket.head("drop", "submit/T/a.yaml", v1) is None
    assert s3.get_object(Bucket="drop", Key="submit/T/a.yaml")["Body"].read() == b"newer"
    assert s3.get_object(Bucket="drop", Key="accepted/T/a.yaml")["Body"].read() == b"one"


@pytest.mark.parametrize(
    "version",
    [None, "3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY+MTRCxf3vjVBH40Nr8X8gdRQBpUMLUo"],
    ids=["a missing key is None, not an error", "a version that does not exist is None, not an error"],
)
def test_missing_objects_and_versions_are_none(s3: Any, version: str | None) -> None:
    bucket = S3SpecBucket(s3)
    assert bucket.head("drop", "submit/T/none.yaml", version) is None
    assert bucket.get_json("drop", "accepted/T/none.yaml.receipt.json") is None


def test_json_answers_round_trip_and_garbage_reads_as_none(s3: Any) -> None:
    bucket = S3SpecBucket(s3)
    bucket.put_json("drop", "accepted/T/a.yaml.receipt.json", {"outcome": "accepted", "jobs": []})
    assert bucket.get_json("drop", "accepted/T/a.yaml.receipt.json") == {"outcome": "accepted", "jobs": []}
    s3.put_object(Bucket="drop", Key="accepted/T/b.yaml.receipt.json", Body=b"{not json")
    assert bucket.get_json("drop", "accepted/T/b.yaml.receipt.json") is None


# -- Batch ----------------------------------------------------------------------------------------
REQUEST = ServiceJobRequest(
    job_name="j",
    job_queue="q",
    service_job_type="SAGEMAKER_TRAINING",
    service_request_payload="{}",
    client_token="t" * 64,
)
#: What SubmitServiceJob is called with for REQUEST.
SENT = {
    "jobName": "j",
    "jobQueue": "q",
    "serviceJobType": "SAGEMAKER_TRAINING",
    "serviceRequestPayload": "{}",
    "clientToken": "t" * 64,
}


@pytest.fixture
def batch(aws_credentials: None) -> Iterator[tuple[BatchServiceJobs, Stubber]]:
    client = boto3.client("batch", region_name=REGION)
    with Stubber(client) as stubber:
        yield BatchServiceJobs(client), stubber
        stubber.assert_no_pending_responses()


def test_submit_returns_batchs_job(batch: tuple[BatchServiceJobs, Stubber]) -> None:
    adapter, stubber = batch
    stubber.add_response("submit_service_job", {"jobArn": "arn:x/1", "jobName": "j", "jobId": "1"}, SENT)
    assert adapter.submit(REQUEST).job_arn == "arn:x/1"


@pytest.mark.parametrize(
    ("code", "raised"),
    [("ClientException", RejectedByServiceError), ("ServerException", ClientError)],
    ids=["an invalid request is a permanent rejection", "a server error propagates so the record is retried"],
)
def test_submit_maps_batchs_errors(batch: tuple[BatchServiceJobs, Stubber], code: str, raised: type) -> None:
    adapter, stubber = batch
    stubber.add_client_error("submit_service_job", service_error_code=code, service_message="Share not found")
    with pytest.raises(raised):
        adapter.submit(REQUEST)


def test_terminate_many_goes_in_chunks_of_fifty(batch: tuple[BatchServiceJobs, Stubber]) -> None:
    adapter, stubber = batch
    ids = [f"job-{i}" for i in range(120)]
    for start in (0, 50, 100):
        chunk = ids[start : start + 50]
        errors = [{"job": chunk[0], "code": "X", "message": "m"}] if start == 100 else []
        stubber.add_response(
            "terminate_service_jobs",
            {"successful": chunk[1:] if errors else chunk, "errors": errors},
            {"jobs": chunk, "reason": "cleanup"},
        )
    result = adapter.terminate_many(ids, "cleanup")
    assert len(result.successful) == 119 and [e["job"] for e in result.errors] == ["job-100"]


def test_active_jobs_asks_each_active_status_with_the_share_filter_and_follows_pages(
    batch: tuple[BatchServiceJobs, Stubber],
) -> None:
    adapter, stubber = batch
    summary = {"jobId": "1", "jobName": "j", "serviceJobType": "SAGEMAKER_TRAINING", "status": "RUNNABLE"}
    for status in ACTIVE_STATUSES:
        base = {
            "jobQueue": "gpu",
            "jobStatus": status,
            "filters": [{"name": "QUOTA_SHARE_NAME", "values": ["S"]}],
        }
        if status == "RUNNABLE":
            stubber.add_response("list_service_jobs", {"jobSummaryList": [summary], "nextToken": "p2"}, base)
            stubber.add_response(
                "list_service_jobs", {"jobSummaryList": [summary]}, {**base, "nextToken": "p2"}
            )
        else:
            stubber.add_response("list_service_jobs", {"jobSummaryList": []}, base)
    assert len(list(adapter.active_jobs("gpu", "S", quota=True))) == 2


# -- SNS and the payload item ---------------------------------------------------------------------
def test_alerts_carry_string_attributes_and_stay_valid_json_when_huge(aws_credentials: None) -> None:
    with mock_aws():
        sns, sqs = boto3.client("sns", region_name=REGION), boto3.client("sqs", region_name=REGION)
        topic, inbox = topic_with_inbox(sns, sqs)
        huge = {"outcome": "rejected", "problems": [{"path": "x", "message": "m" * 1000, "fix": "f"}] * 400}
        SnsAlerts(sns, topic).publish("subject", huge, {"share": "ProdExp1", "kind": "spec_rejected"})
        (message,) = sqs.receive_message(QueueUrl=inbox)["Messages"]
        body = json.loads(message["Body"])
        assert {k: v["Value"] for k, v in body["MessageAttributes"].items()} == {
            "share": "ProdExp1",
            "kind": "spec_rejected",
        }
        text = body["Message"]
        assert len(text.encode()) <= MAX_MESSAGE_BYTES and json.loads(text) == {
            "outcome": "rejected",
            "truncated": True,
        }


def test_the_payload_item_is_written_once(aws_credentials: None) -> None:
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        store = DynamoJobStore(client, create_jobs_table(client))
        assert store.save_payload("arn:j", {"request": REQUEST.aws_fields()}) is True
        changed = replace(REQUEST, job_name="changed")
        assert store.save_payload("arn:j", {"request": changed.aws_fields()}) is False
        stored = store.load_payload("arn:j")
        assert stored is not None and stored.request == REQUEST
        assert store.jobs() == [], "a payload item is not a job state"
