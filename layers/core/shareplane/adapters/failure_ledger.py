"""The failure path's items in the jobs table: decisions, alerts and the storm guard's failures.

| pk                              | sk            | what                                                  |
|---------------------------------|---------------|-------------------------------------------------------|
| ``DECISION#<jobArn>#<attempt>`` | ``DECISION``  | one failure's decision; written once, then ``applied``|
| ``ALERT#<job or share>#<kind>`` | ``ALERT``     | the last alert of a kind; ``quietUntil`` stops repeats|
| ``SHARE#<share>``               | ``FAIL#<ms>#<jobArn>`` | a failure the storm guard counts (TTL)       |
| ``JOB#<jobArn>``                | ``H#...``     | FAILURE_DECISION / PRIORITY_ESCALATED history items   |

Alert items are also in the ByStatus index under ``gsi1pk = ALERTS``, sorted by time, which is how
`shareplane alerts` lists what was sent without a scan.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..domain.alerts.alert import STALE_CLAIM_SECONDS, Alert
from ..domain.alerts.sent import SentAlert
from ..domain.failures.record import Applied, DecisionRecord, PriorityRaise, StormFailure
from ..domain.jobs.lifecycle import HistoryEntry
from .dynamodb_items import (
    advance_tick_watermark,
    get_item,
    index_items_since,
    marshal,
    put_new,
    put_new_action,
    tick_watermark,
    unmarshal,
)
from .dynamodb_store import HISTORY_RETENTION_SECONDS, history_item
from .failure_items import (
    applied_attributes,
    decision_from_item,
    decision_item,
    history_attributes,
    priority_raise_attributes,
    storm_failure_from_item,
    storm_failure_item,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

DECISION_SK = "DECISION"
ALERT_SK = "ALERT"
ALERTS_INDEX_PK = "ALERTS"
#: Alert items stay listable this long (the quiet window is separate: ``quietUntil``).
ALERT_RETENTION_SECONDS = 30 * 24 * 3600
#: Storm-guard failures are only read inside the guard's window; keep them a day.
SHARE_FAILURE_RETENTION_SECONDS = 24 * 3600


class DynamoFailureLedger:
    """FailureLedger on the jobs table, with conditional writes."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    # -- decisions ------------------------------------------------------------------------
    def claim_decision(
        self, key: str, record: DecisionRecord, history: HistoryEntry, share_failure: StormFailure | None
    ) -> DecisionRecord | None:
        """One transaction: the decision (new only), its history item and the storm-guard failure."""
        now = record.decided_at
        decision = {
            "pk": key,
            "sk": DECISION_SK,
            "entity": "decision",
            "applied": False,
            **decision_item(record),
            "expiresAt": int(now) + HISTORY_RETENTION_SECONDS,
        }
        actions = [
            self._put_new(decision),
            self._put_new({**history_item(record.job_arn, history), **history_attributes(record)}),
        ]
        if share_failure is not None:
            at_ms = int(share_failure.at * 1000)
            actions.append(
                self._put_new(
                    {
                        "pk": f"SHARE#{share_failure.scope}",
                        "sk": f"FAIL#{at_ms:013d}#{share_failure.job_arn}",
                        "entity": "share_failure",
                        **storm_failure_item(share_failure),
                        "expiresAt": int(now) + SHARE_FAILURE_RETENTION_SECONDS,
                    }
                )
            )
        try:
            self._client.transact_write_items(TransactItems=actions)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            existing = self.load_decision(key)
            if existing is None:
                raise
            return existing
        return None

    def load_decision(self, key: str) -> DecisionRecord | None:
        """A stored decision (strongly consistent)."""
        item = self._get(key, DECISION_SK)
        return decision_from_item(item) if item else None

    def mark_applied(self, key: str, result: Applied) -> bool:
        """Set ``applied`` (and what applying did) once; False when it already was applied."""
        names = {"#a": "applied"}
        values: dict[str, Any] = {":t": {"BOOL": True}}
        sets = ["#a = :t"]
        for i, (name, value) in enumerate(applied_attributes(result).items()):
            names[f"#r{i}"] = name
            values[f":r{i}"] = marshal({"v": value})["v"]
            sets.append(f"#r{i} = :r{i}")
        try:
            self._client.update_item(
                TableName=self._table,
                Key={"pk": {"S": key}, "sk": {"S": DECISION_SK}},
                UpdateExpression="SET " + ", ".join(sets),
                ConditionExpression="attribute_exists(pk) AND #a <> :t",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def mark_scheduled(self, key: str) -> None:
        """Note that the decision's requeue-due message is on its way."""
        self._client.update_item(
            TableName=self._table,
            Key={"pk": {"S": key}, "sk": {"S": DECISION_SK}},
            UpdateExpression="SET scheduled = :t",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues={":t": {"BOOL": True}},
        )

    def add_history(self, job_arn: str, entry: HistoryEntry, raised: PriorityRaise | None = None) -> bool:
        """Put a history item once (with the escalation it records); False when it was there already."""
        item = {**history_item(job_arn, entry), **priority_raise_attributes(raised)}
        return put_new(self._client, self._table, item)

    # -- alerts ---------------------------------------------------------------------------
    def claim_alert(
        self, alert: Alert, now: float, quiet_seconds: float, *, claimed_at: float | None = None
    ) -> bool:
        """Reserve the alert's item unless it is quiet (sent within the window, or claimed just now).

        ``now`` (the event's time) dates the alert and its quiet window; ``claimed_at`` (the clock,
        default ``now``) dates the claim itself, which goes stale if its sender dies unconfirmed.
        """
        at_ms = int(now * 1000)
        lease = now if claimed_at is None else claimed_at
        item = {
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
            "claimedAt": lease,
            "quietUntil": now + quiet_seconds,
            "expiresAt": int(now) + ALERT_RETENTION_SECONDS,
            "gsi1pk": ALERTS_INDEX_PK,
            "gsi1sk": f"{at_ms:013d}#{alert.dedupe_key}",
        }
        try:
            self._client.put_item(
                TableName=self._table,
                Item=marshal(item),
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
        """Record that the claimed alert went out."""
        self._client.update_item(
            TableName=self._table,
            Key={"pk": {"S": alert.dedupe_key}, "sk": {"S": ALERT_SK}},
            UpdateExpression="SET sentAt = :now",
            ExpressionAttributeValues={":now": {"N": repr(float(now))}},
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
        item = self._get(dedupe_key, ALERT_SK)
        return float(item["sentAt"]) if item and "sentAt" in item else None

    def alerts(self, since: float) -> list[SentAlert]:
        """Alerts sent after ``since`` (epoch seconds), oldest first."""
        items = index_items_since(self._client, self._table, ALERTS_INDEX_PK, since)
        sent = [_sent_alert(i) for i in items if "sentAt" in i]
        return sorted(sent, key=lambda a: a.sent_at)

    # -- storm guard ----------------------------------------------------------------------
    def share_failures(self, share: str, since: float) -> list[StormFailure]:
        """The share's counted failures after ``since`` (epoch seconds), oldest first."""
        paginator = self._client.get_paginator("query")
        items: list[dict[str, Any]] = []
        for page in paginator.paginate(
            TableName=self._table,
            KeyConditionExpression="pk = :p AND sk BETWEEN :a AND :b",
            ExpressionAttributeValues={
                ":p": {"S": f"SHARE#{share}"},
                ":a": {"S": f"FAIL#{int(since * 1000):013d}"},
                ":b": {"S": "FAIL#~"},
            },
            ConsistentRead=True,
        ):
            items += [unmarshal(i) for i in page.get("Items", [])]
        return [storm_failure_from_item(i) for i in items]

    # -- plumbing -------------------------------------------------------------------------
    def _put_new(self, item: Mapping[str, Any]) -> TransactWriteItemTypeDef:
        return put_new_action(self._table, item)

    def last_tick(self, runner: str) -> str | None:
        """The newest schedule tick ``runner`` handled."""
        return tick_watermark(self._client, self._table, runner)

    def advance_tick(self, runner: str, tick: str) -> None:
        """Move ``runner``'s tick watermark forward to ``tick``."""
        advance_tick_watermark(self._client, self._table, runner, tick)

    def _get(self, pk: str, sk: str) -> dict[str, Any] | None:
        return get_item(self._client, self._table, pk, sk)


def _sent_alert(item: Mapping[str, Any]) -> SentAlert:
    """An alert item (``claim_alert``'s layout, confirmed) as its value."""
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


class FailureAlertClaims:
    """The failure ledger's alert claims, for another path's ledger: one dedupe item per alert, so the
    quiet windows are shared across paths. A subclass sets ``_alerts`` to a ``DynamoFailureLedger``."""

    _alerts: DynamoFailureLedger

    def claim_alert(
        self, alert: Alert, now: float, quiet_seconds: float, *, claimed_at: float | None = None
    ) -> bool:
        """Reserve an alert's dedupe item (the failure path's, so quiet windows are shared)."""
        return self._alerts.claim_alert(alert, now, quiet_seconds, claimed_at=claimed_at)

    def confirm_alert(self, alert: Alert, now: float) -> None:
        """Record that a claimed alert went out."""
        self._alerts.confirm_alert(alert, now)

    def release_alert(self, alert: Alert) -> None:
        """Give a claim back after publishing failed."""
        self._alerts.release_alert(alert)
