"""SQS delays on the virtual clock: a delayed message is received when the virtual clock says, not the wall's."""

from __future__ import annotations

import time

import boto3
from moto import mock_aws
from shareplane_cli.local.sqs_delays import VirtualDelays

ACCOUNT, REGION = "123456789012", "us-east-1"


def receive(sqs, url: str) -> list[str]:
    return [m["Body"] for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])]


@mock_aws
def test_a_delayed_message_waits_its_delay_in_virtual_time_and_an_undelayed_one_does_not() -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName="reclaim")["QueueUrl"]
    delays = VirtualDelays(ACCOUNT, REGION)
    # GIVEN a handler at virtual time 1,000 sends a re-check due in 300 s and a message due now
    sqs.send_message(QueueUrl=url, MessageBody="re-check", DelaySeconds=300)
    sqs.send_message(QueueUrl=url, MessageBody="now")
    delays.capture(1000.0)
    delays.capture(1100.0)  # a later capture leaves a captured message's due time alone
    # THEN only the undelayed message is received before virtual time 1,300, whatever the wall says
    assert receive(sqs, url) == ["now"]
    delays.release(1299.0)
    assert receive(sqs, url) == []
    assert (
        sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesDelayed"])[
            "Attributes"
        ]["ApproximateNumberOfMessagesDelayed"]
        == "1"
    )
    # AND at 1,300 the re-check is received, once
    delays.release(1300.0)
    assert receive(sqs, url) == ["re-check"]
    assert delays.pending == {}


@mock_aws
def test_delays_are_counted_from_the_virtual_time_each_message_was_captured_at() -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName="failures")["QueueUrl"]
    delays = VirtualDelays(ACCOUNT, REGION)
    sqs.send_message(QueueUrl=url, MessageBody="first", DelaySeconds=60)
    delays.capture(0.0)
    sqs.send_message(QueueUrl=url, MessageBody="second", DelaySeconds=10)
    delays.capture(100.0)
    delays.release(70.0)
    assert receive(sqs, url) == ["first"]
    delays.release(109.0)
    assert receive(sqs, url) == []
    delays.release(110.0)
    assert receive(sqs, url) == ["second"]


@mock_aws
def test_a_message_already_received_is_not_delayed_again_by_a_late_capture() -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName="drained")["QueueUrl"]
    delays = VirtualDelays(ACCOUNT, REGION)
    # GIVEN a message sent outside a turn, whose wall-clock delay ran out before any capture,
    # received once and failed back to the queue (visible again at once)
    sqs.send_message(QueueUrl=url, MessageBody="requeue", DelaySeconds=1)
    time.sleep(1.2)
    (message,) = sqs.receive_message(QueueUrl=url).get("Messages", [])
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    # WHEN the next turn captures THEN it is left as it is: received again, not hidden for a new delay
    delays.capture(5000.0)
    assert delays.pending == {} and receive(sqs, url) == ["requeue"]
