"""The stored layout of an alert's dedupe item and of each of its sends, and the sent alerts read back.

Plain Python values (the DynamoDB marshalling is ``dynamodb_items``'): the alert ledger on the table
and its in-memory fake both store these items, so an alert listed is the alert claimed, in either.

An alert item (``ALERT#<job or share>#<kind>`` / ``ALERT``), the claim a repeat overwrites::

    entity(alert) kind severity team tier share queue job subject body(JSON) claimedAt quietUntil sentAt
    expiresAt gsi1pk(ALERTS) gsi1sk(<epoch ms>#<dedupe key>)

A sent item (``ALERT#<job or share>#<kind>`` / ``SENT#<sent at, epoch ms>``), one per send, never changed::

    entity(alert_sent) kind severity team tier share queue job subject body(JSON) sentAt
    expiresAt gsi1pk(ALERTS) gsi1sk(<sent at, epoch ms>#<dedupe key>)

Both are in the ByStatus index under ``gsi1pk = ALERTS``, sorted by time, which is how
`shareplane alerts` lists what was sent without a scan. A confirmed alert item and its own send's item
are one send (same key and ``sentAt``): ``sent_alerts_of`` lists it once, and still lists an alert item
confirmed before sends had items of their own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..domain.alerts.alert import STALE_CLAIM_SECONDS, Alert
from ..domain.alerts.sent import SentAlert

ALERT_SK = "ALERT"
#: Each send's sort key starts so: ``SENT#<sent at, epoch ms>`` under the alert's own key.
SENT_SK_PREFIX = "SENT#"
ALERTS_INDEX_PK = "ALERTS"
#: Alert items stay listable this long (the quiet window is separate: ``quietUntil``).
ALERT_RETENTION_SECONDS = 30 * 24 * 3600

__all__ = [
    "ALERTS_INDEX_PK",
    "ALERT_RETENTION_SECONDS",
    "ALERT_SK",
    "SENT_SK_PREFIX",
    "alert_item",
    "claim_is_quiet",
    "sent_alert_of",
    "sent_alerts_of",
    "sent_item",
]


def alert_item(alert: Alert, now: float, quiet_seconds: float, claimed_at: float) -> dict[str, Any]:
    """A claimed alert's item: ``now`` dates the alert and its window, ``claimed_at`` the claim's lease."""
    return {
        "pk": alert.dedupe_key,
        "sk": ALERT_SK,
        "entity": "alert",
        **_listed_attributes(alert),
        "claimedAt": claimed_at,
        "quietUntil": now + quiet_seconds,
        **_listing_attributes(alert, now),
    }


def sent_item(alert: Alert, sent_at: float) -> dict[str, Any]:
    """One send's item: what the listing shows of ``alert`` sent at ``sent_at``, kept when it repeats.

    Keyed by the send's time, so a repeated confirm of the same send writes the same item again."""
    return {
        "pk": alert.dedupe_key,
        "sk": f"{SENT_SK_PREFIX}{int(sent_at * 1000):013d}",
        "entity": "alert_sent",
        **_listed_attributes(alert),
        "sentAt": sent_at,
        **_listing_attributes(alert, sent_at),
    }


def _listed_attributes(alert: Alert) -> dict[str, Any]:
    """What `shareplane alerts` shows of an alert (``sent_alert_of`` reads it back)."""
    return {
        "kind": alert.kind.value,
        "severity": alert.severity.value,
        "team": alert.team or "none",
        "tier": alert.tier or "none",
        "share": alert.share,
        "queue": alert.queue,
        "job": alert.job_arn,
        "subject": alert.subject,
        "body": json.dumps(dict(alert.body), default=str, sort_keys=True),
    }


def _listing_attributes(alert: Alert, at: float) -> dict[str, Any]:
    """Where an item dated ``at`` sits in the alerts' index, and how long it is kept."""
    return {
        "expiresAt": int(at) + ALERT_RETENTION_SECONDS,
        "gsi1pk": ALERTS_INDEX_PK,
        "gsi1sk": f"{int(at * 1000):013d}#{alert.dedupe_key}",
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
    """A confirmed alert item, or a sent item, as its value."""
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


def sent_alerts_of(items: Iterable[Mapping[str, Any]]) -> list[SentAlert]:
    """The sends among alert and sent items, each once, oldest first.

    A confirmed alert item and its send's item share key and ``sentAt``: the send's item is listed. An
    alert item confirmed before sends had items of their own has none, so it is listed itself."""
    sends: dict[tuple[str, float], Mapping[str, Any]] = {}
    for item in items:
        if "sentAt" not in item:
            continue  # claimed, never sent
        send = (str(item["pk"]), float(item["sentAt"]))
        if send not in sends or item["sk"] != ALERT_SK:
            sends[send] = item
    return sorted((sent_alert_of(i) for i in sends.values()), key=lambda a: a.sent_at)
