"""AlertPublisher (adapters/sns_alerts.py) in memory: what was published, and a sender that dies."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shareplane.adapters.sns_alerts import sns_message, sns_subject


class SenderDied(BaseException):
    """A Lambda invocation killed mid-call: like a timeout, nothing in the handler can catch it."""


@dataclass
class FakeAlerts:
    """The alerts topic: what was published, as a subscriber receives it (SnsAlerts' subject and JSON text)."""

    sent: list[tuple[str, dict[str, Any], dict[str, str]]] = field(default_factory=list)
    fail: bool = False
    #: The sender dies mid-publish (the Lambda times out): no except clause of the sender runs.
    die: bool = False

    def publish(self, subject: str, message: Mapping[str, object], attributes: Mapping[str, str]) -> None:
        if self.die:
            raise SenderDied("the invocation timed out while publishing")
        if self.fail:
            raise ConnectionError("SNS is down")
        self.sent.append((sns_subject(subject), json.loads(sns_message(message)), dict(attributes)))
