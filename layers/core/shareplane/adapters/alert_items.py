"""The stored layout of an alert's dedupe item, and a sent alert read back from it.

Plain Python values (the DynamoDB marshalling is ``dynamodb_items``'): the alert ledger on the table
and its in-memory fake both store these items, so an alert listed is the alert claimed, in either.

An alert item (``ALERT#<job or share>#<kind>`` / ``ALERT``)::

    entity kind severity team tier share queue job subject body(JSON) claimedAt quietUntil sentAt
    expiresAt gsi1pk(ALERTS) gsi1sk(<epoch ms>#<dedupe key>)

It is also in the ByStatus index under ``gsi1pk = ALERTS``, sorted by time, which is how
`shareplane alerts` lists what was sent without a scan.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..domain.alerts.alert import STALE_CLAIM_SECONDS, Alert
from ..domain.alerts.sent import SentAlert

ALERT_SK = "ALERT"
ALERTS_INDEX_PK = "ALERTS"
#: Alert items stay listable this long (the quiet window is separate: ``quietUntil``).
ALERT_RETENTION_SECONDS = 30 * 24 * 3600

__all__ = [
    "ALERTS_INDEX_PK",
    "ALERT_RETENTION_SECONDS",
    "ALERT_SK",
    "alert_item",
    "claim_is_quiet",
    "sent_alert_of",
]


def alert_item(alert: Alert, now: float, quiet_seconds: float, claimed_at: float) -> dict[str, Any]:
    """A claimed alert's item: ``now`` dates the alert and its window, ``claimed_at`` the claim's lease."""
    at_ms = int(now * 1000)
    return {
        "pk": alert.dedupe_key,
        "sk": ALERT_SK,
        "entity": "alert",
        "kind": alert.kind.value,
        "severity": alert.severity.value,
        "team": alert.team or "none",
        "tier": alert.tier or "none",
        "share": alert.share,
        "queue": alert.queue,
        "job": alert.job_arn,
        "subject": alert.subject,
        "body": json.dumps(dict(alert.body), default=str, sort_keys=True),
        "claimedAt": claimed_at,
        "quietUntil": now + quiet_seconds,
        "expiresAt": int(now) + ALERT_RETENTION_SECONDS,
        "gsi1pk": ALERTS_INDEX_PK,
        "gsi1sk": f"{at_ms:013d}#{alert.dedupe_key}",
    }


def claim_is_quiet(item: Mapping[str, Any] | None, now: float, claimed_at: float) -> bool:
    """Whether a stored item keeps a new claim out at ``now``: sent within its window, or claimed by a
    sender whose lease is not stale yet (the table's condition on ``claim_alert``, as a predicate)."""
    return bool(
        item
        and float(item["quietUntil"]) >= now
        and ("sentAt" in item or float(item["claimedAt"]) >= claimed_at - STALE_CLAIM_SECONDS)
    )


def sent_alert_of(item: Mapping[str, Any]) -> SentAlert:
    """A confirmed alert item as its value."""
    return SentAlert(
        sent_at=float(item["sentAt"]),
        kind=str(item.get("kind") or ""),
        severity=str(item.get("severity") or ""),
        subject=str(item.get("subject") or ""),
        team=str(item.get("team") or "none"),
        tier=str(item.get("tier") or "none"),
        share=item.get("share"),
        queue=item.get("queue"),
        job=item.get("job"),
        body=json.loads(item.get("body") or "{}"),
    )
