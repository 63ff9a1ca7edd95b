"""CloudTrail S3 data events ("AWS API Call via CloudTrail"): the principal, or a clear error for the DLQ."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from shareplane.domain.errors import InvalidInputError
from shareplane.schemas.cloudtrail import parse_s3_write
from shareplane.schemas.s3 import parse_object_created

from tests.conftest import load_event


def sample() -> dict[str, Any]:
    return copy.deepcopy(load_event("cloudtrail_s3_put_object_submit"))


def test_the_sample_names_the_session_its_role_and_the_request_of_the_object_created_sample() -> None:
    attribution = parse_s3_write(sample())
    assert attribution is not None
    assert attribution.principal_arn == "arn:aws:sts::111122223333:assumed-role/prodexp1-ml-engineers/alice"
    assert attribution.principal_type == "AssumedRole"
    assert attribution.session_issuer_arn == "arn:aws:iam::111122223333:role/prodexp1-ml-engineers"
    assert attribution.policy_principal == attribution.session_issuer_arn
    assert attribution.account_id == "111122223333"
    assert attribution.event_name == "PutObject"
    # the join: CloudTrail's requestID is the Object Created event's request-id, same bucket and key
    (dropped,) = parse_object_created(load_event("s3_object_created_submit"))
    assert (attribution.request_id, attribution.bucket, attribution.key) == (
        dropped.request_id,
        dropped.bucket,
        dropped.key,
    )


def test_an_iam_user_is_its_own_policy_principal() -> None:
    event = sample()
    event["detail"]["userIdentity"] = {
        "type": "IAMUser",
        "principalId": "AIDAEXAMPLE",
        "arn": "arn:aws:iam::111122223333:user/alice",
        "accountId": "111122223333",
        "userName": "alice",
    }
    attribution = parse_s3_write(event)
    assert attribution is not None
    assert attribution.session_issuer_arn is None
    assert attribution.policy_principal == "arn:aws:iam::111122223333:user/alice"


def test_a_write_s3_refused_created_nothing_and_is_ignored() -> None:
    event = sample()
    event["detail"]["errorCode"] = "AccessDenied"
    assert parse_s3_write(event) is None


def _without(path: str) -> dict[str, Any]:
    event = sample()
    *parents, last = path.split(".")
    node = event
    for part in parents:
        node = node[part]
    del node[last]
    return event


def _with(path: str, value: Any) -> dict[str, Any]:
    event = sample()
    *parents, last = path.split(".")
    node = event
    for part in parents:
        node = node[part]
    node[last] = value
    return event


MALFORMED = [
    ("no principal ARN", _without("detail.userIdentity.arn"), "detail.userIdentity.arn"),
    ("no request id", _without("detail.requestID"), "detail.requestID"),
    ("no key", _without("detail.requestParameters.key"), "detail.requestParameters.key"),
    ("a read, not a write", _with("detail.eventName", "GetObject"), "detail.eventName"),
    ("another service", _with("detail.eventSource", "ec2.amazonaws.com"), "detail.eventSource"),
    ("another detail-type", _with("detail-type", "Object Created"), "detail-type"),
    ("an empty principal ARN", _with("detail.userIdentity.arn", ""), "detail.userIdentity.arn"),
    ("no envelope time", _without("time"), "time"),
]


@pytest.mark.parametrize(
    ("event", "field"), [(e, f) for _, e, f in MALFORMED], ids=[n for n, _, _ in MALFORMED]
)
def test_a_malformed_event_fails_naming_the_field_and_the_fix(event: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_s3_write(event)
    assert caught.value.field == field
    assert "CloudTrail data events" in caught.value.fix


def test_a_body_that_is_not_an_object_fails_naming_the_event() -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_s3_write(["not", "an", "event"])
    assert caught.value.field == "event"
