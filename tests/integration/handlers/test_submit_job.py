"""submit_job handler: the S3 Object Created sample from events/, moto behind boto3, Batch stubbed."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from moto import mock_aws
from shareplane import bootstrap

from tests.aws import SHARES_CONFIG_PARAMETER, create_jobs_table, store_shares_config
from tests.conftest import REPO, load_event, load_handler
from tests.sqs import sqs_batch

TABLE = "shareplane-jobs"
BUCKET = "shareplane-dev-dropbucket-1a2b3c4d5e6f"
SPEC = (REPO / "config" / "jobs" / "prodexp1-bert.yaml").read_bytes()
JOB_ARN = "arn:aws:batch:us-east-1:123456789012:service-job/{}"


@pytest.fixture
def handler(aws_credentials: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    import yaml

    monkeypatch.setenv("TABLE_NAME", TABLE)
    monkeypatch.setenv("SHAREPLANE_CONFIG_PARAMETER", SHARES_CONFIG_PARAMETER)
    with mock_aws():
        store_shares_config(
            boto3.client("ssm", region_name="us-east-1"),
            yaml.safe_load((REPO / "config" / "shares.yaml").read_text()),
        )
        create_jobs_table(boto3.client("dynamodb", region_name="us-east-1"), TABLE)
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        topic = boto3.client("sns", region_name="us-east-1").create_topic(Name="alerts")["TopicArn"]
        monkeypatch.setenv("ALERTS_TOPIC_ARN", topic)
        with bootstrap.installed(bootstrap.Root.from_environment()):
            yield load_handler("submit_job")


def dropped_event(key: str, body: bytes) -> dict[str, Any]:
    """The events/ sample, pointing at an object actually put in the (moto) bucket."""
    version = boto3.client("s3", region_name="us-east-1").put_object(Bucket=BUCKET, Key=key, Body=body)[
        "VersionId"
    ]
    event = copy.deepcopy(load_event("s3_object_created_submit"))
    event["detail"]["object"].update({"key": key, "size": len(body), "version-id": version})
    return event


#: The team x tier layout: HIGHPRI has an identifier of its own, LOWPRI goes to the team's.
SHARES = {"bert-large-ranker-ft-01": "ProdExp1HIGHPRI", "ranker-lr-sweep-07": "ProdExp1"}


def stub_submissions(names: list[str]) -> Stubber:
    """Expect one SubmitServiceJob per name, validated against botocore's model of the request."""
    stubber = Stubber(bootstrap.root().batch_jobs._client)  # noqa: SLF001 - the handler's client
    for i, name in enumerate(names):
        job_id = f"00000000-0000-4000-8000-00000000000{i}"
        expected = {
            "jobName": name,
            "jobQueue": ANY,
            "serviceJobType": "SAGEMAKER_TRAINING",
            "serviceRequestPayload": ANY,
            "retryStrategy": ANY,
            "timeoutConfig": ANY,
            "tags": ANY,
            "clientToken": ANY,
        }
        if name != "ranker-tokenize-v7":  # the CPU FIFO job carries no share
            # The team x tier layout: the job's tier's own identifier, else the team's.
            expected |= {"shareIdentifier": SHARES[name], "schedulingPriority": ANY}
        stubber.add_response(
            "submit_service_job",
            {"jobArn": JOB_ARN.format(job_id), "jobName": name, "jobId": job_id},
            expected,
        )
    stubber.activate()
    return stubber


def test_the_sample_event_submits_every_job_of_the_dropped_file(handler: Any, lambda_context: Any) -> None:
    # GIVEN the example spec dropped under a key with a space and a plus sign (raw in EventBridge)
    key = "submit/ProdExp1/ranker sweep+v2.yaml"
    event = dropped_event(key, SPEC)
    version = event["detail"]["object"]["version-id"]
    stubber = stub_submissions(["bert-large-ranker-ft-01", "ranker-lr-sweep-07", "ranker-tokenize-v7"])
    # WHEN the handler gets it from SQS
    response = handler.lambda_handler(sqs_batch([event]), lambda_context)
    # THEN every job is submitted, the original moved and the receipt written
    assert response == {"batchItemFailures": []}
    stubber.assert_no_pending_responses()
    s3 = boto3.client("s3", region_name="us-east-1")
    receipt = json.loads(
        s3.get_object(Bucket=BUCKET, Key=f"answers/ProdExp1/ranker sweep+v2.yaml/{version}.json")[
            "Body"
        ].read()
    )
    assert receipt["outcome"] == "accepted" and len(receipt["jobs"]) == 3
    assert [j.status.value for j in bootstrap.root().store.jobs()] == ["SUBMITTED"] * 3


def test_a_duplicated_event_in_one_batch_submits_once(handler: Any, lambda_context: Any) -> None:
    event = dropped_event("submit/ProdExp1/one.yaml", SPEC)
    stubber = stub_submissions(["bert-large-ranker-ft-01", "ranker-lr-sweep-07", "ranker-tokenize-v7"])
    duplicate = {**event, "id": "another-delivery"}
    response = handler.lambda_handler(sqs_batch([event, duplicate]), lambda_context)
    assert response == {"batchItemFailures": []}
    stubber.assert_no_pending_responses()  # and no fourth call: the stub would have raised


def test_a_bad_record_fails_alone(handler: Any, lambda_context: Any) -> None:
    good = dropped_event("submit/ProdExp1/bad.yaml", b"name: [")
    response = handler.lambda_handler(
        sqs_batch(["{not json", good, {"detail-type": "Object Deleted"}]), lambda_context
    )
    assert response["batchItemFailures"] == [{"itemIdentifier": "m0"}, {"itemIdentifier": "m2"}]
    keys = {
        o["Key"]
        for o in boto3.client("s3", region_name="us-east-1").list_objects_v2(Bucket=BUCKET)["Contents"]
    }
    version = good["detail"]["object"]["version-id"]
    assert keys == {"rejected/ProdExp1/bad.yaml", f"answers/ProdExp1/bad.yaml/{version}.json"}


# -- the receipt's first start prediction (RECEIPT_FORECAST_SECONDS set) ----------------------------
@pytest.fixture
def forecasting_handler(handler: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The handler with the receipt's forecast on; Batch's queue settings from the fake (moto has none)."""
    from tests.fakes.shares_batch import FakeSharesBatch
    from tests.unit.service.test_start_predictions import POLICY

    monkeypatch.setenv("RECEIPT_FORECAST_SECONDS", "10")
    with bootstrap.installed(
        bootstrap.Root.from_environment(batch_policy=FakeSharesBatch(policy=POLICY, capacity=4))
    ):
        yield handler


def receipt_of(event: dict[str, Any]) -> dict[str, Any]:
    key, version = event["detail"]["object"]["key"], event["detail"]["object"]["version-id"]
    team, name = key.split("/")[1:]
    body = boto3.client("s3", region_name="us-east-1").get_object(
        Bucket=BUCKET, Key=f"answers/{team}/{name}/{version}.json"
    )["Body"]
    return dict(json.loads(body.read()))


def test_the_receipt_gives_each_gpu_jobs_first_prediction(
    forecasting_handler: Any, lambda_context: Any
) -> None:
    # GIVEN the example spec (two GPU jobs, one CPU job) dropped with the forecast at submission on
    event = dropped_event("submit/ProdExp1/predicted.yaml", SPEC)
    stub_submissions(["bert-large-ranker-ft-01", "ranker-lr-sweep-07", "ranker-tokenize-v7"])
    # WHEN the handler answers it
    assert forecasting_handler.lambda_handler(sqs_batch([event]), lambda_context) == {"batchItemFailures": []}
    # THEN the GPU jobs' entries carry p10/p50/p90 from the template's 100 runs; the CPU job's none
    receipt = receipt_of(event)
    predictions = {j["name"]: j["prediction"] for j in receipt["jobs"]}
    assert predictions["ranker-tokenize-v7"] is None
    for name in SHARES:
        prediction = predictions[name]
        assert prediction["samples"] == 100 and prediction["startedFraction"] > 0
        assert prediction["predictedAt"] <= prediction["startP10"] <= prediction["startP50"]
    assert "submit_job" in receipt["prediction"]["predictedBy"]


def test_an_invocation_near_its_end_submits_and_receipts_without_a_prediction(
    forecasting_handler: Any, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an invocation with less time left than the rest of the batch is kept
    app = load_handler("submit_job")
    monkeypatch.setattr(
        lambda_context, "get_remaining_time_in_millis", lambda: int(app.RESERVE_SECONDS * 1000)
    )
    event = dropped_event("submit/ProdExp1/late.yaml", SPEC)
    stub_submissions(["bert-large-ranker-ft-01", "ranker-lr-sweep-07", "ranker-tokenize-v7"])
    # WHEN the handler answers the drop
    assert forecasting_handler.lambda_handler(sqs_batch([event]), lambda_context) == {"batchItemFailures": []}
    # THEN every job is submitted and receipted, and the receipt says why it has no prediction
    receipt = receipt_of(event)
    assert receipt["outcome"] == "accepted" and all(j["prediction"] is None for j in receipt["jobs"])
    assert "not read within the forecast's budget" in receipt["prediction"]["notAtSubmission"]
