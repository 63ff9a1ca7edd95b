"""The failure path's items in the jobs table: decisions, their history notes and the storm guard's failures.

| pk                              | sk            | what                                                  |
|---------------------------------|---------------|-------------------------------------------------------|
| ``DECISION#<jobArn>#<attempt>`` | ``DECISION``  | one failure's decision; written once, then ``applied``|
| ``SHARE#<share>``               | ``FAIL#<ms>#<jobArn>`` | a failure the storm guard counts (TTL)       |
| ``JOB#<jobArn>``                | ``H#...``     | FAILURE_DECISION / PRIORITY_ESCALATED history items   |

Alerts are the alert ledger's (adapters/alert_ledger.py), tick watermarks the tick ledger's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..domain.failures.record import Applied, DecisionRecord, PriorityRaise, StormFailure
from ..domain.jobs.lifecycle import HistoryEntry
from .dynamodb_items import (
    get_item,
    marshal,
    put_new,
    put_new_action,
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

    def _get(self, pk: str, sk: str) -> dict[str, Any] | None:
        return get_item(self._client, self._table, pk, sk)
