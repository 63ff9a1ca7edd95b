"""EventBridge envelopes for the model's state changes, and delivery the way AWS does it.

Delivery can duplicate (a fresh id, the same content) and reorder (a seeded window) events, as
SageMaker, EventBridge and Lambda retries do. That chaos draws from its own seeded stream, so turning
it on never changes the schedule the model computes.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

Listener = Callable[[dict[str, Any]], None]

BATCH_STATE = "Batch Service Job State Change"
BATCH_PREEMPTION_STARTED = "Batch Service Job Preemption Started"
BATCH_PREEMPTION_COMPLETED = "Batch Service Job Preemption Completed"
BATCH_QUEUE_BLOCKED = "Batch Service Job Queue Blocked"
SAGEMAKER_STATE = "SageMaker Training Job State Change"


def iso_seconds(epoch_ms: int) -> str:
    """RFC 3339 with 1-second precision, as the envelope ``time`` carries it."""
    return datetime.fromtimestamp(epoch_ms // 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventBus:
    """Builds envelopes and hands them to listeners, optionally duplicated and reordered."""

    def __init__(
        self,
        account: str,
        region: str,
        seed: int = 0,
        duplicate_rate: float = 0.0,
        reorder_window: int = 0,
    ) -> None:
        self.account = account
        self.region = region
        self.duplicate_rate = duplicate_rate
        self.reorder_window = reorder_window
        self._rng = random.Random(f"events:{seed}")
        self._listeners: list[Listener] = []
        self._held: list[dict[str, Any]] = []

    @property
    def active(self) -> bool:
        """Whether anyone listens: the model builds no event dicts otherwise."""
        return bool(self._listeners)

    def subscribe(self, listener: Listener) -> None:
        """Register a callable that receives every delivered envelope."""
        self._listeners.append(listener)

    def unsubscribe(self, listener: Listener) -> None:
        """Stop delivering to ``listener``."""
        self._listeners.remove(listener)

    def _new_id(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def publish(
        self, detail_type: str, source: str, resources: list[str], detail: dict[str, Any], when_ms: int
    ) -> None:
        """Wrap ``detail`` in an envelope and deliver it (and maybe a duplicate)."""
        envelope = {
            "version": "0",
            "id": self._new_id(),
            "detail-type": detail_type,
            "source": source,
            "account": self.account,
            "time": iso_seconds(when_ms),
            "region": self.region,
            "resources": resources,
            "detail": detail,
        }
        self._offer(envelope)
        if self.duplicate_rate and self._rng.random() < self.duplicate_rate:
            self._offer({**envelope, "id": self._new_id()})

    def _offer(self, envelope: dict[str, Any]) -> None:
        if self.reorder_window <= 0:
            self._deliver(envelope)
            return
        self._held.append(envelope)
        if len(self._held) > self.reorder_window:
            self._deliver(self._held.pop(self._rng.randrange(len(self._held))))

    def flush(self) -> None:
        """Deliver everything held back by the reorder window, in a seeded shuffled order."""
        held, self._held = self._held, []
        self._rng.shuffle(held)
        for envelope in held:
            self._deliver(envelope)

    def _deliver(self, envelope: dict[str, Any]) -> None:
        for listener in list(self._listeners):
            listener(envelope)
