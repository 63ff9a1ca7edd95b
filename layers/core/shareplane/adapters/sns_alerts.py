"""Alerts on the SNS topic, with string message attributes subscribers filter on."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

#: SNS takes 256 KB per message, attributes included; leave room for them.
MAX_MESSAGE_BYTES = 240 * 1024
_LONG_FIELDS = ("problems", "rejected", "jobs")


class SnsAlerts:
    """AlertPublisher on one SNS topic."""

    def __init__(self, client: Any, topic_arn: str) -> None:
        self._client = client
        self._topic_arn = topic_arn

    def publish(self, subject: str, message: Mapping[str, object], attributes: Mapping[str, str]) -> None:
        """Publish a JSON message; attributes become String message attributes."""
        text = json.dumps(message, default=str)
        if len(text.encode("utf-8")) > MAX_MESSAGE_BYTES:
            # Keep the message valid JSON: drop the long lists, the answer document has them all.
            text = json.dumps(
                {k: v for k, v in message.items() if k not in _LONG_FIELDS} | {"truncated": True}, default=str
            )[:MAX_MESSAGE_BYTES]
        self._client.publish(
            TopicArn=self._topic_arn,
            Subject=subject[:100],
            Message=text,
            MessageAttributes={k: {"DataType": "String", "StringValue": v} for k, v in attributes.items()},
        )
