"""An alert as the ledger lists it once sent: when, what, to whom (``shareplane alerts``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SentAlert:
    """One alert that went out, with the routing it was sent with and its body."""

    sent_at: float
    kind: str
    severity: str
    subject: str
    #: ``none`` when the alert had no team (or tier), as routing has it.
    team: str = "none"
    tier: str = "none"
    share: str | None = None
    queue: str | None = None
    job: str | None = None
    body: Mapping[str, Any] = field(default_factory=dict)
