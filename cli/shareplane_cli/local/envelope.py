"""The envelope EventBridge wraps every event in, for the events the local stack makes itself."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any


def eventbridge_event(
    detail_type: str,
    source: str,
    *,
    account: str,
    region: str,
    time: str | float,
    resources: Sequence[str],
    detail: Mapping[str, Any],
) -> dict[str, Any]:
    """An event as a rule's targets receive it, with a new id (AWS's eb-events-structure.html)."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": detail_type,
        "source": source,
        "account": account,
        "time": time,
        "region": region,
        "resources": list(resources),
        "detail": dict(detail),
    }
