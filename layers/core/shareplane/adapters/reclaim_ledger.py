"""Reclaim's items in the jobs table: decisions, victims and budget counters.

| pk                        | sk                  | what                                                 |
|---------------------------|---------------------|------------------------------------------------------|
| ``RECLAIM#<waiting job>`` | ``DECISION#<id>``   | one reclaim: who waited, victims, what each loses    |
| ``RECLAIM#<waiting job>`` | ``COUNT``           | victims stopped for that job (its per-job budget)    |
| ``RECLAIM#DAY``           | ``<YYYY-MM-DD>``    | victims stopped that UTC day (the per-day budget)    |
| ``RECLAIM#WINDOW``        | ``<len>s@<start>``  | victims stopped in one rate window (the rate limit)  |
| ``RECLAIM#VICTIMS``       | ``<victim job id>`` | the job a victim is stopped for (once a victim; TTL) |
| ``JOB#<jobArn>``          | ``H#...``           | RECLAIM / RECLAIMED history items                    |

Decisions are also in the ByStatus index under ``gsi1pk = RECLAIMS``, sorted by time, so every reclaim
can be listed without a scan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..domain.jobs.lifecycle import HistoryEntry
from ..domain.reclaim.plan import ClaimBudgets
from ..domain.reclaim.record import ReclaimRecord
from .dynamodb_items import (
    get_item,
    index_items_since,
    marshal,
    put_new,
    put_new_action,
    unmarshal,
)
from .dynamodb_store import HISTORY_RETENTION_SECONDS, history_item
from .reclaim_items import reclaim_item, reclaim_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

DECISION_PREFIX = "DECISION#"
COUNT_SK = "COUNT"
DAY_PK = "RECLAIM#DAY"
WINDOW_PK = "RECLAIM#WINDOW"
VICTIMS_PK = "RECLAIM#VICTIMS"
RECLAIMS_INDEX_PK = "RECLAIMS"
#: A victim item only matters while the victim still runs; two days is plenty, and TTL keeps it small.
VICTIM_RETENTION_SECONDS = 2 * 24 * 3600
#: Day counters are read for their own day only.
DAY_RETENTION_SECONDS = 3 * 24 * 3600


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def reclaim_pk(job_id: str) -> str:
    """Partition of a waiting job's reclaims and its victim counter."""
    return f"RECLAIM#{job_id}"


class DynamoReclaimLedger:
    """ReclaimLedger on the jobs table (its alerts are the alert ledger's)."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name
        self._decisions: dict[str, str] = {}

    def _get(self, pk: str, sk: str) -> dict[str, Any] | None:
        return get_item(self._client, self._table, pk, sk)

    # -- reads ----------------------------------------------------------------------------
    def victims_for(self, beneficiary_id: str) -> int:
        """Victims already stopped for one waiting job."""
        item = self._get(reclaim_pk(beneficiary_id), COUNT_SK)
        return int(item.get("victims") or 0) if item else 0

    def victims_on(self, day: str) -> int:
        """Victims stopped on one UTC day."""
        item = self._get(DAY_PK, day)
        return int(item.get("victims") or 0) if item else 0

    def victims_in(self, window: str) -> int:
        """Victims stopped in one rate window."""
        item = self._get(WINDOW_PK, window)
        return int(item.get("victims") or 0) if item else 0

    def stopping(self) -> dict[str, str]:
        """Victim job id -> the job it is stopped for (the victim items TTL has not removed)."""
        paginator = self._client.get_paginator("query")
        found: dict[str, str] = {}
        for page in paginator.paginate(
            TableName=self._table,
            KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": {"S": VICTIMS_PK}},
            ConsistentRead=True,
        ):
            for raw in page.get("Items", []):
                item = unmarshal(raw)
                found[str(item["sk"])] = str(item["for"])
                self._decisions[str(item["sk"])] = str(item["decisionId"])
        return found

    def decision_of(self, victim_id: str) -> str | None:
        """The decision that claimed a victim, as ``stopping`` last read it."""
        return self._decisions.get(victim_id)

    def load(self, beneficiary_id: str, decision_id: str) -> ReclaimRecord | None:
        """A stored reclaim decision (strongly consistent)."""
        item = self._get(reclaim_pk(beneficiary_id), DECISION_PREFIX + decision_id)
        return reclaim_of(item) if item else None

    def reclaims(self, since: float) -> list[ReclaimRecord]:
        """Reclaim decisions made after ``since`` (epoch seconds), oldest first."""
        items = index_items_since(self._client, self._table, RECLAIMS_INDEX_PK, since)
        return sorted((reclaim_of(i) for i in items), key=lambda r: (r.decided_at, r.decision_id))

    # -- writes ---------------------------------------------------------------------------
    def _decision_item(self, record: ReclaimRecord) -> dict[str, Any]:
        now = record.decided_at
        return {
            "pk": reclaim_pk(record.job_id),
            "sk": DECISION_PREFIX + record.decision_id,
            "entity": "reclaim",
            **reclaim_item(record),
            "gsi1pk": RECLAIMS_INDEX_PK,
            "gsi1sk": f"{int(now * 1000):013d}#{record.decision_id}",
            "expiresAt": int(now) + HISTORY_RETENTION_SECONDS,
        }

    def claim(
        self, record: ReclaimRecord, histories: Sequence[tuple[str, HistoryEntry]], budgets: ClaimBudgets
    ) -> str:
        """One transaction: decision, victims, counters (within budget) and history items; see the port."""
        now = record.decided_at
        n = len(record.victims)
        actions: list[TransactWriteItemTypeDef] = [put_new_action(self._table, self._decision_item(record))]
        actions += [
            put_new_action(
                self._table,
                {
                    "pk": VICTIMS_PK,
                    "sk": v.job_id,
                    "entity": "reclaim_victim",
                    "for": record.job_id,
                    "decisionId": record.decision_id,
                    "at": now,
                    "expiresAt": int(now) + VICTIM_RETENTION_SECONDS,
                },
            )
            for v in record.victims
        ]
        # The waiting job's counter must still hold what the plan read: two racing runs that planned
        # different victims for one job cannot both stop theirs.
        seen = record.victims_before
        actions.append(self._add(reclaim_pk(record.job_id), COUNT_SK, n, budgets.max_per_job, now, seen=seen))
        actions.append(self._add(DAY_PK, budgets.day, n, budgets.max_per_day, now, DAY_RETENTION_SECONDS))
        actions.append(
            self._add(WINDOW_PK, budgets.window, n, budgets.max_per_window, now, DAY_RETENTION_SECONDS)
        )
        actions += [put_new_action(self._table, history_item(arn, entry)) for arn, entry in histories]
        try:
            self._client.transact_write_items(TransactItems=actions)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            stored = self.load(record.job_id, record.decision_id)
            return "exists" if stored is not None else "refused"
        return "claimed"

    def _add(
        self,
        pk: str,
        sk: str,
        n: int,
        limit: int,
        now: float,
        retention: int = HISTORY_RETENTION_SECONDS,
        seen: int | None = None,
    ) -> TransactWriteItemTypeDef:
        """Add ``n`` to a counter while it stays within ``limit`` (and still holds ``seen``, if given)."""
        values = {
            ":n": {"N": str(n)},
            ":cap": {"N": str(limit - n)},
            ":e": {"S": "reclaim_count"},
            ":x": {"N": str(int(now) + retention)},
        }
        condition = "victims <= :cap"
        if seen is not None:
            values[":seen"] = {"N": str(int(seen))}
            condition = "victims = :seen AND victims <= :cap"
        # A counter not there yet holds 0: it may be created only when ``n`` alone fits the limit
        # (else one claim of more victims than the budget would overrun it on a fresh day).
        if n <= limit and (seen is None or int(seen) == 0):
            condition = f"attribute_not_exists(victims) OR ({condition})"
        return {
            "Update": {
                "TableName": self._table,
                "Key": {"pk": {"S": pk}, "sk": {"S": sk}},
                "UpdateExpression": "ADD victims :n SET entity = :e, expiresAt = :x",
                "ConditionExpression": condition,
                "ExpressionAttributeValues": values,
            }
        }

    def release(
        self,
        record: ReclaimRecord,
        histories: Sequence[tuple[str, HistoryEntry]],
        budgets: ClaimBudgets,
        unstopped: int,
    ) -> bool:
        """One transaction: the unapplied decision, its victim items and history items go; the counters
        give back ``unstopped``."""
        table = self._table
        decision = _key(reclaim_pk(record.job_id), DECISION_PREFIX + record.decision_id)
        actions: list[TransactWriteItemTypeDef] = [
            {
                "Delete": {
                    "TableName": table,
                    "Key": decision,
                    "ConditionExpression": "attribute_exists(pk) AND NOT applied = :t",
                    "ExpressionAttributeValues": {":t": {"BOOL": True}},
                }
            }
        ]
        actions += [
            {
                "Delete": {
                    "TableName": table,
                    "Key": _key(VICTIMS_PK, v.job_id),
                    "ConditionExpression": "#for = :b",
                    "ExpressionAttributeNames": {"#for": "for"},
                    "ExpressionAttributeValues": {":b": {"S": record.job_id}},
                }
            }
            for v in record.victims
        ]
        counters = [(reclaim_pk(record.job_id), COUNT_SK), (DAY_PK, budgets.day), (WINDOW_PK, budgets.window)]
        give_back = {":n": {"N": str(-unstopped)}, ":u": {"N": str(unstopped)}}
        actions += [
            {
                "Update": {
                    "TableName": table,
                    "Key": _key(pk, sk),
                    "UpdateExpression": "ADD victims :n",
                    "ConditionExpression": "victims >= :u",
                    "ExpressionAttributeValues": give_back,
                }
            }
            for pk, sk in counters
            if unstopped
        ]
        for arn, entry in histories:
            item = history_item(arn, entry)
            actions.append({"Delete": {"TableName": table, "Key": _key(item["pk"], item["sk"])}})
        try:
            self._client.transact_write_items(TransactItems=actions)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            return False
        return True

    def record_dry_run(self, record: ReclaimRecord) -> bool:
        """Write a dry-run decision once."""
        return put_new(self._client, self._table, self._decision_item(record))

    def mark_applied(self, beneficiary_id: str, decision_id: str, applied_at: float) -> bool:
        """Set ``applied`` (and when) on a reclaim decision once; False when it already was."""
        values: dict[str, Any] = {":t": {"BOOL": True}, ":at": marshal({"v": applied_at})["v"]}
        try:
            self._client.update_item(
                TableName=self._table,
                Key={"pk": {"S": reclaim_pk(beneficiary_id)}, "sk": {"S": DECISION_PREFIX + decision_id}},
                UpdateExpression="SET applied = :t, appliedAt = :at",
                ConditionExpression="attribute_exists(pk) AND applied <> :t",
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True
