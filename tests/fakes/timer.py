"""RequeueTimer (adapters/requeue_timer.py QueueRequeueTimer) in memory: what would arrive later."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from shareplane.adapters.due_messages import due_body
from shareplane.adapters.requeue_timer import SQS_MAX_DELAY
from shareplane.domain.failures.record import RequeueDue
from shareplane.domain.reclaim.record import ReclaimDue


@dataclass
class FakeTimer:
    """The delayed re-enqueue: each message (as its JSON body gives it back) with its delay.

    As on AWS: a negative delay is none; a wait within SQS's DelaySeconds is a message, sent as often as
    asked; a longer wait is a one-time schedule named by the message, so asking again while it is
    pending is a no-op (a test takes an entry off ``pending`` when it delivers it, as the schedule
    deletes itself once it ran).
    """

    pending: list[tuple[dict[str, Any], int]] = field(default_factory=list)

    def after(self, message: RequeueDue | ReclaimDue, delay_seconds: int, now: float) -> None:
        delivered = json.loads(json.dumps(due_body(message), sort_keys=True))
        delay = max(0, int(delay_seconds))
        scheduled = delay > SQS_MAX_DELAY
        if scheduled and any(m == delivered and d > SQS_MAX_DELAY for m, d in self.pending):
            return
        self.pending.append((delivered, delay))
