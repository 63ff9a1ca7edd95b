"""The idle detector's items in the jobs table: one decision item per job, act and tick time.

| pk              | sk                                  | what                                       |
|-----------------|-------------------------------------|--------------------------------------------|
| ``IDLE#<job>``  | ``DECISION#<epoch ms>#<act>``       | one decision that acted (``idle_items``)   |
| ``IDLE#<job>``  | ``COUNTED``                         | idle time counted in IdleGpuHours up to    |

Decisions are also in the ByStatus index under ``gsi1pk = IDLE``, by time. Alerts are the alert
ledger's (adapters/alert_ledger.py), so a re-delivered tick alerts once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from ..domain.idle.record import IdleRecord
from .dynamodb_items import index_items_since, put_new, unmarshal
from .dynamodb_store import HISTORY_RETENTION_SECONDS
from .idle_items import (
    COUNTED_SK,
    DECISION_PREFIX,
    IDLE_INDEX_PK,
    idle_item,
    idle_pk,
    idle_record_of,
    idle_sk,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class DynamoIdleLedger:
    """IdleLedger on the jobs table (conditional puts: a decision is written once)."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def decisions(self, job_id: str) -> list[IdleRecord]:
        """Every decision recorded for one job, oldest first."""
        records: list[IdleRecord] = []
        for page in self._client.get_paginator("query").paginate(
            TableName=self._table,
            KeyConditionExpression="pk = :p AND begins_with(sk, :d)",
            ExpressionAttributeValues={":p": {"S": idle_pk(job_id)}, ":d": {"S": DECISION_PREFIX}},
            ConsistentRead=True,
        ):
            records += [idle_record_of(unmarshal(raw)) for raw in page.get("Items", [])]
        return sorted(records, key=lambda r: (r.decided_at, r.act.value))

    def record(self, record: IdleRecord) -> bool:
        """Write one decision unless it is there already (a re-delivered tick); True when new."""
        at = int(record.decided_at * 1000)
        item = {
            "pk": idle_pk(record.job_id),
            "sk": idle_sk(record),
            "entity": "idle",
            **idle_item(record),
            "gsi1pk": IDLE_INDEX_PK,
            "gsi1sk": f"{at:013d}#{record.job_id}#{record.act.value}",
            "expiresAt": at // 1000 + HISTORY_RETENTION_SECONDS,
        }
        return put_new(self._client, self._table, item)

    def count_idle(self, job_id: str, until: float) -> float | None:
        """Move the counted-idle watermark up to ``until`` (only up); the value it replaced."""
        try:
            response = self._client.update_item(
                TableName=self._table,
                Key={"pk": {"S": idle_pk(job_id)}, "sk": {"S": COUNTED_SK}},
                UpdateExpression="SET countedUntil = :u, expiresAt = :e",
                ConditionExpression="attribute_not_exists(countedUntil) OR countedUntil < :u",
                ExpressionAttributeValues={
                    ":u": {"N": repr(float(until))},
                    ":e": {"N": str(int(until) + HISTORY_RETENTION_SECONDS)},
                },
                ReturnValues="UPDATED_OLD",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return until  # counted up to here already (a re-delivered or older tick)
            raise
        old = response.get("Attributes", {}).get("countedUntil", {}).get("N")
        return float(old) if old is not None else None

    def since(self, since: float) -> list[IdleRecord]:
        """Every decision made at ``since`` or later (epoch seconds), oldest first."""
        items = index_items_since(self._client, self._table, IDLE_INDEX_PK, since)
        return sorted((idle_record_of(i) for i in items), key=lambda r: (r.decided_at, r.job_id, r.act.value))
