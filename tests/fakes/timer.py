"""RequeueTimer (adapters/requeue_timer.py) in memory: what would arrive later."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FakeTimer:
    """The delayed re-enqueue: each message with its delay."""

    pending: list[tuple[dict[str, Any], int]] = field(default_factory=list)

    def after(self, message: Mapping[str, Any], delay_seconds: int, now: float) -> None:
        self.pending.append((dict(message), delay_seconds))
