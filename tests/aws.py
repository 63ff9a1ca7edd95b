"""AWS test helpers: tables made from template.yaml itself, and fault injection through botocore hooks."""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse

from tests.conftest import REPO


@cache
def template() -> dict[str, Any]:
    """template.yaml, decoded with its intrinsic functions (!Ref, !Sub ...) kept as dicts."""
    from cfnlint.decode import decode

    parsed, errors = decode(str(REPO / "template.yaml"))
    assert not errors, errors
    return parsed


def table_definition(logical_id: str = "JobsTable") -> dict[str, Any]:
    """CreateTable arguments for a table of the template: keys and indexes exactly as deployed."""
    props = template()["Resources"][logical_id]["Properties"]
    definition: dict[str, Any] = {
        "KeySchema": props["KeySchema"],
        "AttributeDefinitions": props["AttributeDefinitions"],
        "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
    }
    if props.get("GlobalSecondaryIndexes"):
        definition["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
    return definition


#: The SSM parameter tests store the shares config in (a deployed stack's is /<stack>/shares-config).
SHARES_CONFIG_PARAMETER = "/shareplane-test/shares-config"


def store_shares_config(ssm: Any, config: Any) -> dict[str, str]:
    """Store a shares config (JSON text, or a mapping) as the stack does, in an SSM parameter; returns
    the function setting that names it."""
    text = config if isinstance(config, str) else json.dumps(config)
    ssm.put_parameter(
        Name=SHARES_CONFIG_PARAMETER, Value=text, Type="String", Tier="Advanced", Overwrite=True
    )
    return {"SHAREPLANE_CONFIG_PARAMETER": SHARES_CONFIG_PARAMETER}


#: Credentials and a region no real account accepts, so no test can reach one.
TEST_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}


@contextlib.contextmanager
def test_credentials() -> Iterator[None]:
    """TEST_CREDENTIALS for a block (a module's moto), with no profile or endpoint of the machine's."""
    with pytest.MonkeyPatch.context() as patch:
        for key, value in TEST_CREDENTIALS.items():
            patch.setenv(key, value)
        for key in ("AWS_PROFILE", "AWS_ENDPOINT_URL"):
            patch.delenv(key, raising=False)
        yield


def clear_table(client: Any, table: str) -> None:
    """Delete every item of a table (a module's shared moto table, between tests)."""
    for page in client.get_paginator("scan").paginate(TableName=table, ProjectionExpression="pk, sk"):
        for item in page.get("Items", []):
            client.delete_item(TableName=table, Key={"pk": item["pk"], "sk": item["sk"]})


def create_jobs_table(client: Any, name: str = "shareplane-jobs") -> str:
    """Create the jobs table in moto from the template's definition; returns its name."""
    client.create_table(TableName=name, **table_definition())
    return name


class FaultInjector:
    """Fails a share of AWS calls before they are sent, as throttling or a 5xx, from a seeded Random.

    Hooked on ``before-send``: the request never reaches the service, so botocore's retry logic
    sees exactly what a real throttle or 500 looks like.
    """

    FAULTS = (
        (400, b'{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate exceeded"}'),
        (
            500,
            b'{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"Internal error"}',
        ),
        (
            503,
            b'{"__type":"com.amazon.coral.availability#ServiceUnavailableException","message":"Unavailable"}',
        ),
    )

    def __init__(self, rate: float, seed: int) -> None:
        self.rate = rate
        self.random = random.Random(seed)
        self.injected = 0
        self.calls = 0

    def attach(self, client: Any) -> None:
        client.meta.events.register("before-send", self._maybe_fail)

    def _maybe_fail(self, request: Any, **_: Any) -> AWSResponse | None:
        self.calls += 1
        if self.random.random() >= self.rate:
            return None
        self.injected += 1
        status, body = self.random.choice(self.FAULTS)
        response = AWSResponse(request.url, status, {"x-amzn-ErrorType": "x"}, None)
        response._content = body  # noqa: SLF001 - botocore reads the body from here
        return response


def subscribe_inbox(
    sns: Any,
    sqs: Any,
    topic_arn: str,
    name: str = "inbox",
    *,
    raw_delivery: bool = False,
    filter_policy: dict[str, Any] | None = None,
) -> str:
    """A new SQS queue subscribed to an SNS topic, as a team's endpoint would be; returns its URL.

    ``raw_delivery`` puts the bare message (and its attributes as SQS message attributes) in each body
    instead of SNS's JSON envelope; ``filter_policy`` is the subscription's FilterPolicy.
    """
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    attributes: dict[str, str] = {}
    if raw_delivery:
        attributes["RawMessageDelivery"] = "true"
    if filter_policy is not None:
        attributes["FilterPolicy"] = json.dumps(filter_policy)
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=arn, Attributes=attributes)
    return url


def topic_with_inbox(
    sns: Any,
    sqs: Any,
    inbox: str = "inbox",
    *,
    raw_delivery: bool = False,
    filter_policy: dict[str, Any] | None = None,
) -> tuple[str, str]:
    """The alerts topic with one SQS inbox subscribed (see ``subscribe_inbox``): (topic ARN, inbox URL)."""
    topic = sns.create_topic(Name="alerts")["TopicArn"]
    return topic, subscribe_inbox(
        sns, sqs, topic, inbox, raw_delivery=raw_delivery, filter_policy=filter_policy
    )
