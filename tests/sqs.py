"""Build SQS batches around EventBridge events, as the event source mapping delivers them."""

from __future__ import annotations

import json
from typing import Any


def sqs_record(body: Any, message_id: str, receive_count: int = 1) -> dict[str, Any]:
    """One SQS record whose body is ``body`` (JSON-encoded unless already a string)."""
    return {
        "messageId": message_id,
        "receiptHandle": f"rh-{message_id}",
        "body": body if isinstance(body, str) else json.dumps(body),
        "attributes": {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": "1773690900000",
            "SenderId": "AIDAEVENTBRIDGE",
            "ApproximateFirstReceiveTimestamp": "1773690900001",
        },
        "messageAttributes": {},
        "md5OfBody": "0" * 32,
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:shareplane-record-state",
        "awsRegion": "us-east-1",
    }


def sqs_batch(bodies: list[Any], prefix: str = "m") -> dict[str, Any]:
    """An SQS event with one record per body, message ids ``<prefix>0``, ``<prefix>1`` ..."""
    return {"Records": [sqs_record(body, f"{prefix}{i}") for i, body in enumerate(bodies)]}
