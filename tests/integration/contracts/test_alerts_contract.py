"""AlertPublisher: the fake and SnsAlerts agree on what a subscriber of the alerts topic receives.

On moto the topic has one SQS inbox (SNS's JSON envelope, not raw delivery, so the subject is kept).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws
from shareplane.adapters.sns_alerts import FALLBACK_SUBJECT, MAX_MESSAGE_BYTES, SnsAlerts

from tests.aws import topic_with_inbox
from tests.fakes.alerts import FakeAlerts

REGION = "us-east-1"
ATTRIBUTES = {"share": "ProdExp1", "team": "ProdExp1", "kind": "failure", "severity": "warning"}

#: One received alert: (subject, message, attributes).
Received = tuple[str, Any, dict[str, str]]


@dataclass
class PublisherUnderTest:
    publisher: Any
    received: Callable[[], list[Received]]


@pytest.fixture(params=["fake", "on moto"])
def under_test(request: pytest.FixtureRequest, aws_credentials: None) -> Iterator[PublisherUnderTest]:
    if request.param == "fake":
        fake = FakeAlerts()
        yield PublisherUnderTest(fake, lambda: list(fake.sent))
        return
    with mock_aws():
        sns, sqs = boto3.client("sns", region_name=REGION), boto3.client("sqs", region_name=REGION)
        topic, inbox = topic_with_inbox(sns, sqs)

        def received() -> list[Received]:
            messages = sqs.receive_message(QueueUrl=inbox, MaxNumberOfMessages=10).get("Messages", [])
            envelopes = [json.loads(m["Body"]) for m in messages]
            return [
                (
                    e["Subject"],
                    json.loads(e["Message"]),
                    {k: v["Value"] for k, v in e.get("MessageAttributes", {}).items()},
                )
                for e in envelopes
            ]

        yield PublisherUnderTest(SnsAlerts(sns, topic), received)


def test_an_alert_arrives_with_its_subject_json_message_and_string_attributes(
    under_test: PublisherUnderTest,
) -> None:
    message = {"headline": "bert failed (gpu_oom)", "fix": "smaller batch", "instances": 2, "lost": 1.5}
    under_test.publisher.publish("[warning] ProdExp1: bert failed", message, ATTRIBUTES)
    assert under_test.received() == [("[warning] ProdExp1: bert failed", message, ATTRIBUTES)]


@pytest.mark.parametrize(
    ("subject", "arrives_as"),
    [
        ("ProdExp1: bert\nfailed\tagain", "ProdExp1: bert failed again"),
        ("Équipe ProdExp1 — échec", "Equipe ProdExp1 echec"),
        ("  x" + "y" * 150, "x" + "y" * 99),
        ("\n\t ", FALLBACK_SUBJECT),
    ],
    ids=["line breaks", "not ascii", "too long", "nothing printable"],
)
def test_a_subject_arrives_as_sns_accepts_it(
    under_test: PublisherUnderTest, subject: str, arrives_as: str
) -> None:
    under_test.publisher.publish(subject, {"headline": "h"}, ATTRIBUTES)
    ((received, _, _),) = under_test.received()
    assert received == arrives_as


def test_values_json_lacks_arrive_as_their_text(under_test: PublisherUnderTest) -> None:
    at = datetime(2026, 3, 17, 4, 15, tzinfo=UTC)
    under_test.publisher.publish("s", {"at": at, "victims": ("lo-1", "lo-2")}, ATTRIBUTES)
    ((_, message, _),) = under_test.received()
    assert message == {"at": str(at), "victims": ["lo-1", "lo-2"]}


def test_a_huge_alert_arrives_as_valid_json_without_its_long_lists(under_test: PublisherUnderTest) -> None:
    huge = {"outcome": "rejected", "problems": [{"path": "x", "message": "m" * 1000}] * 400, "jobs": ["a"]}
    under_test.publisher.publish("s", huge, ATTRIBUTES)
    ((_, message, _),) = under_test.received()
    assert message == {"outcome": "rejected", "truncated": True}
    assert len(json.dumps(message).encode()) <= MAX_MESSAGE_BYTES
