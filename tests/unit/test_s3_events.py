"""S3 Object Created events: raw keys from EventBridge, form-decoded keys from direct notifications."""

from __future__ import annotations

import copy
from urllib.parse import quote_plus

import pytest
from shareplane.domain.errors import InvalidInputError
from shareplane.schemas.s3 import parse_object_created

from tests.conftest import load_event

KEYS = [
    ("a key with a space", "submit/ProdExp1/ranker sweep.yaml"),
    ("a key with a plus sign", "submit/ProdExp1/a+b.yaml"),
    ("a key with unicode", "submit/ProdExp1/größe-模型.yaml"),
    ("a key with a percent sign", "submit/ProdExp1/100%25.yaml"),
]


def eventbridge(key: str) -> dict:
    event = copy.deepcopy(load_event("s3_object_created_submit"))
    event["detail"]["object"]["key"] = key
    return event


def notification(encoded_key: str) -> dict:
    return {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": "us-east-1",
                "eventTime": "2026-03-16T19:55:02.123Z",
                "eventName": "ObjectCreated:Put",
                "s3": {
                    "s3SchemaVersion": "1.0",
                    "bucket": {"name": "drop", "arn": "arn:aws:s3:::drop"},
                    "object": {
                        "key": encoded_key,
                        "size": 10,
                        "eTag": "abc",
                        "versionId": "v1",
                        "sequencer": "0A",
                    },
                },
            }
        ]
    }


@pytest.mark.parametrize("key", [k for _, k in KEYS], ids=[f"EventBridge keeps {n} raw" for n, _ in KEYS])
def test_eventbridge_keys_are_used_as_they_are(key: str) -> None:
    (obj,) = parse_object_created(eventbridge(key))
    assert obj.key == key


@pytest.mark.parametrize(
    "key", [k for _, k in KEYS], ids=[f"a direct notification decodes {n}" for n, _ in KEYS]
)
def test_direct_notification_keys_are_form_decoded(key: str) -> None:
    # S3 form-encodes the key (a space as '+', a '+' as '%2B'); decoding gives the real key back
    (obj,) = parse_object_created(notification(quote_plus(key, safe="/")))
    assert obj.key == key and obj.version_id == "v1" and obj.etag == "abc"


def test_the_sample_event_reads_with_its_version_and_etag() -> None:
    (obj,) = parse_object_created(load_event("s3_object_created_submit"))
    assert obj.key == "submit/ProdExp1/ranker sweep+v2.yaml"  # a '+' in an EventBridge key is a '+'
    assert (obj.bucket, obj.version_id, obj.size) == (
        "shareplane-dev-dropbucket-1a2b3c4d5e6f",
        "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e",
        1342,
    )
    # who uploaded it, as far as S3 tells: the account, and the request that finds the principal in CloudTrail
    assert (obj.requester, obj.bucket_owner) == ("123456789012", "123456789012")
    assert obj.uploader == {"account": "123456789012", "requestId": "N4N7GDK58NMKJ12R"}


def test_motos_etag_spelling_is_accepted() -> None:
    event = eventbridge("submit/ProdExp1/a.yaml")
    event["detail"]["object"]["eTag"] = event["detail"]["object"].pop("etag")
    assert parse_object_created(event)[0].etag == "b1946ac92492d2347c6235b4d2611184"


def test_the_test_event_s3_sends_on_configuration_names_no_object() -> None:
    assert parse_object_created({"Service": "Amazon S3", "Event": "s3:TestEvent", "Bucket": "drop"}) == []


def test_a_removal_record_in_a_notification_is_not_a_drop() -> None:
    message = notification("submit/ProdExp1/a.yaml")
    message["Records"][0]["eventName"] = "ObjectRemoved:Delete"
    assert parse_object_created(message) == []


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({**load_event("s3_object_created_submit"), "detail-type": "Object Deleted"}, "detail-type"),
        ({**load_event("s3_object_created_submit"), "detail": {"bucket": {"name": "b"}}}, "detail.object"),
        ({"hello": "world"}, "event"),
        (["not", "an", "object"], "event"),
    ],
    ids=[
        "an Object Deleted event is refused",
        "a detail without object is refused",
        "an unknown shape is refused",
        "a JSON list is refused",
    ],
)
def test_bad_events_name_the_field(event: object, field: str) -> None:
    with pytest.raises(InvalidInputError) as error:
        parse_object_created(event)
    assert error.value.field == field and error.value.fix
