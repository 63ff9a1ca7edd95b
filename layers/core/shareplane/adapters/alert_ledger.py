"""The alert ledger: every alert's dedupe item in the jobs table, each send's item, and their listing.

| pk                              | sk                  | what                                             |
|---------------------------------|---------------------|--------------------------------------------------|
| ``ALERT#<job or share>#<kind>`` | ``ALERT``           | the last of a kind; ``quietUntil`` stops repeats |
| ``ALERT#<job or share>#<kind>`` | ``SENT#<epoch ms>`` | one send of it, kept when the kind repeats       |

One dedupe item per alert whichever path sends it (``service/alerting.AlertSender``), and one sent item
per send, so a repeat after the quiet window keeps the sends before it: `shareplane alerts` lists them
all from the ByStatus index (``gsi1pk = ALERTS``); the layout is ``alert_items``'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from ..domain.alerts.alert import STALE_CLAIM_SECONDS, Alert
from ..domain.alerts.sent import SentAlert
from .alert_items import ALERT_SK, ALERTS_INDEX_PK, alert_item, sent_alerts_of, sent_item
from .dynamodb_items import get_item, index_items_since, marshal

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class DynamoAlertLedger:
    """AlertLedger on the jobs table, with conditional writes."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def claim_alert(
        self, alert: Alert, now: float, quiet_seconds: float, *, claimed_at: float | None = None
    ) -> bool:
        """Reserve the alert's item unless it is quiet (sent within the window, or claimed just now).

        ``now`` (the event's time) dates the alert and its quiet window; ``claimed_at`` (the clock,
        default ``now``) dates the claim itself, which goes stale if its sender dies unconfirmed.
        """
        lease = now if claimed_at is None else claimed_at
        try:
            self._client.put_item(
                TableName=self._table,
                Item=marshal(alert_item(alert, now, quiet_seconds, lease)),
                ConditionExpression=(
                    "attribute_not_exists(pk) OR quietUntil < :now "
                    "OR (attribute_not_exists(sentAt) AND claimedAt < :stale)"
                ),
                ExpressionAttributeValues={
                    ":now": {"N": repr(float(now))},
                    ":stale": {"N": repr(float(lease - STALE_CLAIM_SECONDS))},
                },
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def confirm_alert(self, alert: Alert, now: float) -> None:
        """Record that the claimed alert went out: its dedupe item's ``sentAt``, and this send's own item.

        One transaction, so a send is confirmed exactly when it is kept for the listing; a repeated
        confirm of the same send writes the same two items again.
        """
        self._client.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": {"pk": {"S": alert.dedupe_key}, "sk": {"S": ALERT_SK}},
                        "UpdateExpression": "SET sentAt = :now",
                        "ExpressionAttributeValues": {":now": {"N": repr(float(now))}},
                    }
                },
                {"Put": {"TableName": self._table, "Item": marshal(sent_item(alert, now))}},
            ]
        )

    def release_alert(self, alert: Alert) -> None:
        """Drop an unconfirmed claim so a redelivery can send the alert."""
        try:
            self._client.delete_item(
                TableName=self._table,
                Key={"pk": {"S": alert.dedupe_key}, "sk": {"S": ALERT_SK}},
                ConditionExpression="attribute_not_exists(sentAt)",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise

    def alert_sent_at(self, dedupe_key: str) -> float | None:
        """When that alert was last sent; None when never (or only claimed)."""
        item = get_item(self._client, self._table, dedupe_key, ALERT_SK)
        return float(item["sentAt"]) if item and "sentAt" in item else None

    def alerts(self, since: float) -> list[SentAlert]:
        """Alerts sent after ``since`` (epoch seconds), each send once, oldest first."""
        return sent_alerts_of(index_items_since(self._client, self._table, ALERTS_INDEX_PK, since))
