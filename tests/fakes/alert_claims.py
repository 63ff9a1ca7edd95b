"""The alert dedupe items both ledgers share (adapters/failure_ledger.py claim/confirm/release_alert).

DynamoReclaimLedger delegates its alerts to DynamoFailureLedger, so both fakes keep their alert items
by these rules, with the real ledger's stale-claim limit rather than a copy of it.
"""

from __future__ import annotations

from typing import Any

from shareplane.domain.alerts.alert import STALE_CLAIM_SECONDS, Alert


def claim_alert(
    items: dict[str, dict[str, Any]],
    alert: Alert,
    now: float,
    quiet_seconds: float,
    claimed_at: float | None,
) -> bool:
    """Reserve the alert's item unless it is quiet: sent within the window, or claimed and not yet stale."""
    lease = now if claimed_at is None else claimed_at
    item = items.get(alert.dedupe_key)
    if (
        item
        and item["quietUntil"] >= now
        and ("sentAt" in item or item["claimedAt"] >= lease - STALE_CLAIM_SECONDS)
    ):
        return False
    items[alert.dedupe_key] = {"claimedAt": lease, "quietUntil": now + quiet_seconds, "alert": alert}
    return True


def confirm_alert(items: dict[str, dict[str, Any]], alert: Alert, now: float) -> None:
    """Note that the claimed alert went out."""
    items[alert.dedupe_key]["sentAt"] = now


def release_alert(items: dict[str, dict[str, Any]], alert: Alert) -> None:
    """Drop an unconfirmed claim (a sent alert's item stays)."""
    if "sentAt" not in items.get(alert.dedupe_key, {}):
        items.pop(alert.dedupe_key, None)
