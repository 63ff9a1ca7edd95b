"""SQS message delays on the emulator's virtual clock, in the embedded AWS this process runs.

The control plane delays its own messages to act later: reclaim_capacity re-checks a waiting job when
it becomes due (``DelaySeconds``, up to 900 s), handle_failure backs a requeue off. On AWS the delay is
the cluster's time. moto counts it on the wall clock: a 300-second re-check came 300 wall seconds
later, hours of the cluster's time at 400x, so a reclaim waited for the next 5-minute tick. Here
each delayed message is hidden until the virtual clock reaches its send time plus its delay, then
made visible (``SendMessage``'s DelaySeconds:
https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass
class VirtualDelays:
    """Delayed messages of one account and region's queues, re-timed onto the virtual clock."""

    account: str
    region: str
    #: Message id -> (moto's message, the virtual time it becomes visible).
    pending: dict[str, tuple[Any, float]] = field(default_factory=dict)

    def capture(self, virtual_now: float) -> None:
        """Re-time the messages sent since the last call with a delay; call it at their send's time.

        moto stamps a delayed message ``delayed_until = sent + delay`` in wall milliseconds (whole
        seconds of delay, measured a moment after the send); the delay is read back from the two and
        counted from ``virtual_now`` instead. A message already received is past its delay: a late
        capture must not delay it again.
        """
        for message in self._messages():
            if message.id in self.pending or not message.sent_timestamp or message.approximate_receive_count:
                continue
            delay_ms = message.delayed_until - message.sent_timestamp
            if delay_ms <= 0:
                continue
            self.pending[message.id] = (message, virtual_now + math.floor(delay_ms / 1000))
            message.delayed_until = math.inf

    def release(self, virtual_now: float) -> None:
        """Make every message whose virtual delay has passed visible to ReceiveMessage."""
        for message_id, (message, due) in list(self.pending.items()):
            if due <= virtual_now:
                message.delayed_until = 0.0
                del self.pending[message_id]

    def next_due(self) -> float | None:
        """The virtual time the next delayed message becomes visible (None: none is delayed)."""
        return min((due for _, due in self.pending.values()), default=None)

    def _messages(self) -> list[Any]:
        from moto.sqs.models import sqs_backends

        queues = list(sqs_backends[self.account][self.region].queues.values())
        return [message for queue in queues for message in list(queue._messages)]
