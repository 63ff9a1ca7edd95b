"""The local runner's recorder: calls of the acting function's handler sessions, and nothing else."""

from __future__ import annotations

import json
import threading

import boto3
from botocore.stub import Stubber
from shareplane_cli.local.aws_calls import AwsCallRecorder, Location, RolePolicy

ROLE = RolePolicy("SubmitJobRole", ())
PAYLOAD = json.dumps({"RoleArn": "arn:aws:iam::123456789012:role/team", "TrainingJobName": "bert"})


def stubbed_batch() -> tuple[object, Stubber]:
    client = boto3.session.Session().client(
        "batch", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stubber = Stubber(client)
    stubber.add_response(
        "submit_service_job",
        {"jobArn": "arn:aws:batch:us-east-1:123456789012:service-job/j1", "jobName": "bert", "jobId": "j1"},
    )
    stubber.activate()
    return client, stubber


def submit(client: object) -> None:
    client.submit_service_job(  # type: ignore[attr-defined]
        jobQueue="gpu", jobName="bert", serviceJobType="SAGEMAKER_TRAINING", serviceRequestPayload=PAYLOAD
    )


def test_a_handler_session_call_is_recorded_with_its_authorizations_and_role() -> None:
    recorder = AwsCallRecorder(Location("us-east-1", "123456789012"))
    with recorder.acting_as("SubmitJobFunction", ROLE):
        client, _ = stubbed_batch()  # created inside the invocation, as bootstrap does on a cold start
        submit(client)
    (call,) = recorder.calls
    assert (call.function, call.service, call.operation, call.role) == (
        "SubmitJobFunction",
        "batch",
        "SubmitServiceJob",
        ROLE,
    )
    assert {a.action for a in call.authorizations} == {"batch:SubmitServiceJob", "iam:PassRole"}
    assert "arn:aws:batch:us-east-1:123456789012:service-job/j1" in {a.resource for a in call.authorizations}


def test_calls_outside_an_invocation_or_from_another_thread_are_not_the_functions() -> None:
    recorder = AwsCallRecorder(Location("us-east-1", "123456789012"))
    with recorder.acting_as("SubmitJobFunction", ROLE):
        client, stubber = stubbed_batch()
        stubber.add_response(
            "submit_service_job",
            {
                "jobArn": "arn:aws:batch:us-east-1:123456789012:service-job/j2",
                "jobName": "bert",
                "jobId": "j2",
            },
        )
        other = threading.Thread(target=submit, args=(client,))  # an emulator thread, say
        other.start()
        other.join()
    submit(client)  # a client kept past its invocation, used outside one
    assert not recorder.calls
    assert boto3.session.Session.__name__ == "Session"  # the patch is undone
