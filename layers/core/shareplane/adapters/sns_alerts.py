"""Alerts on the SNS topic, with string message attributes subscribers filter on."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient

#: SNS takes 256 KB per message, attributes included; leave room for them.
MAX_MESSAGE_BYTES = 240 * 1024
_LONG_FIELDS = ("problems", "rejected", "jobs")
#: Publish's Subject rules (https://docs.aws.amazon.com/sns/latest/api/API_Publish.html): ASCII text
#: that begins with a letter, number or punctuation mark, no line breaks or control characters, at
#: most 100 characters. moto accepts anything, so the rule is applied here for every alert.
MAX_SUBJECT_CHARS = 100
FALLBACK_SUBJECT = "shareplane alert"


def _printable_ascii(ch: str) -> str:
    """The character when it is printable ASCII, its accent-free base letter (NFKD), else a space."""
    if " " <= ch <= "~":
        return ch
    folded = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode("ascii")
    return folded if folded and all(" " <= c <= "~" for c in folded) else " "


def sns_subject(text: str) -> str:
    """``text`` as a Subject SNS accepts: printable ASCII, no leading space, at most 100 characters.

    Line breaks, tabs, other control characters and text with no ASCII form become single spaces;
    after that the first character is a letter, a number or a punctuation mark, as Publish requires.
    """
    cleaned = " ".join("".join(_printable_ascii(ch) for ch in text).split())
    return cleaned[:MAX_SUBJECT_CHARS].rstrip() or FALLBACK_SUBJECT


def sns_message(message: Mapping[str, object]) -> str:
    """``message`` as the JSON text published (values JSON lacks as their str), within SNS's size.

    Past MAX_MESSAGE_BYTES the long lists are dropped and ``truncated`` is set, so the text stays
    valid JSON: the answer document has them all.
    """
    text = json.dumps(message, default=str)
    if len(text.encode("utf-8")) > MAX_MESSAGE_BYTES:
        text = json.dumps(
            {k: v for k, v in message.items() if k not in _LONG_FIELDS} | {"truncated": True}, default=str
        )[:MAX_MESSAGE_BYTES]
    return text


class SnsAlerts:
    """AlertPublisher on one SNS topic."""

    def __init__(self, client: SNSClient, topic_arn: str) -> None:
        self._client = client
        self._topic_arn = topic_arn

    def publish(self, subject: str, message: Mapping[str, object], attributes: Mapping[str, str]) -> None:
        """Publish a JSON message; attributes become String message attributes."""
        self._client.publish(
            TopicArn=self._topic_arn,
            Subject=sns_subject(subject),
            Message=sns_message(message),
            MessageAttributes={k: {"DataType": "String", "StringValue": v} for k, v in attributes.items()},
        )
