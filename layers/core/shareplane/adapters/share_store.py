"""The rebalancer's state and audit trail in the jobs table, and the job queries it reads.

Layout (same table as the jobs, partition ``SHARES``):

- ``SHARES`` / ``LEDGER``: ledger balances, decayed usage, the last tick and applied plan, the
  latest targets and actuals; ``version`` guards racing runs.
- ``SHARES`` / ``AUDIT#<ts>#<planId>``: one record per applied (advisory, or dry-run) plan and per
  rollback: before, after, why, and the whole plan.

A plan is written ahead of the Batch call: the audit record (condition: not there yet) and the
state item (condition: the version read) in ONE transaction, so a re-delivered tick or a racing run
cannot apply a plan twice; the record turns ``APPLIED`` once Batch took the change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..domain.errors import ConcurrentUpdateError
from ..domain.jobs.lifecycle import JobState
from ..domain.shares.state import PlanAudit, SharesState
from .dynamodb_items import marshal, put_new_action, transact_new_and_versioned, unmarshal, versioned_put
from .dynamodb_store import job_state_from_item
from .share_items import audit_from_item, audit_item, state_from_item, state_item

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import PutTypeDef

SHARES_PK = "SHARES"
STATE_SK = "LEDGER"
AUDIT_PREFIX = "AUDIT#"


def audit_sk(created_at: float, plan_id: str) -> str:
    """Sort key of an audit record: time order first, the plan id keeps keys unique."""
    return f"{AUDIT_PREFIX}{int(created_at):010d}#{plan_id}"


class DynamoShareStore:
    """ShareStore on the jobs table, with conditional (transactional) writes."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    # -- state --------------------------------------------------------------------------------
    def load_state(self) -> SharesState | None:
        """The ``SHARES``/``LEDGER`` item's state (strongly consistent), None before the first run."""
        response = self._client.get_item(TableName=self._table, Key=self._key(STATE_SK), ConsistentRead=True)
        item = response.get("Item")
        return state_from_item(unmarshal(item)) if item else None

    def save_state(self, state: SharesState, previous_version: int | None) -> None:
        """Write the state item at the version read; ConcurrentUpdateError when it moved."""
        try:
            self._client.put_item(**self._versioned_put(state, previous_version))
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise ConcurrentUpdateError("the shares state changed since it was read") from exc
            raise

    # -- audit --------------------------------------------------------------------------------
    def begin_plan(self, audit: PlanAudit, state: SharesState | None, previous_version: int | None) -> bool:
        """Write a new audit record and the state in one transaction; False if the record exists."""
        record = {**audit_item(audit), "pk": SHARES_PK, "sk": audit_sk(audit.plan.created_at, audit.plan_id)}
        actions = [put_new_action(self._table, record)]
        if state is not None:
            actions.append({"Put": self._versioned_put(state, previous_version)})
        return transact_new_and_versioned(self._client, actions, "the shares state changed since it was read")

    def mark_applied(self, audit: PlanAudit, applied_at: float) -> bool:
        """Turn a PENDING record APPLIED; False when it was not pending (already marked)."""
        try:
            self._client.update_item(
                TableName=self._table,
                Key=self._key(audit_sk(audit.plan.created_at, audit.plan_id)),
                UpdateExpression="SET #s = :applied, appliedAt = :at",
                ConditionExpression="#s = :pending",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues=marshal(
                    {":applied": "APPLIED", ":pending": "PENDING", ":at": applied_at}
                ),
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def audit_at(self, created_at: float, plan_id: str) -> PlanAudit | None:
        """The audit record at its key (strongly consistent)."""
        response = self._client.get_item(
            TableName=self._table, Key=self._key(audit_sk(created_at, plan_id)), ConsistentRead=True
        )
        item = response.get("Item")
        return audit_from_item(unmarshal(item)) if item else None

    def audits(self, limit: int | None = None) -> list[PlanAudit]:
        """Audit records, newest first (what `shareplane shares --history` lists)."""
        return [audit_from_item(i) for i in self._audit_items(limit)]

    def _audit_items(self, limit: int | None = None) -> list[dict[str, Any]]:
        params: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :p AND begins_with(sk, :s)",
            "ExpressionAttributeValues": {":p": {"S": SHARES_PK}, ":s": {"S": AUDIT_PREFIX}},
            "ScanIndexForward": False,
            "ConsistentRead": True,
        }
        if limit is not None:
            params["Limit"] = limit  # the newest few (`shares --plan` reads one), not the whole trail
        records: list[dict[str, Any]] = []
        while True:
            response = self._client.query(**params)
            records += [unmarshal(i) for i in response.get("Items", [])]
            if limit is not None and len(records) >= limit:
                return records[:limit]
            if "LastEvaluatedKey" not in response:
                return records
            params["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def audit(self, plan_id: str) -> PlanAudit | None:
        """The audit record of one plan id (or a unique prefix of it), None when there is none."""
        matches = [r for r in self._audit_items() if str(r.get("planId", "")).startswith(plan_id)]
        exact = [r for r in matches if r.get("planId") == plan_id]
        if exact:
            return audit_from_item(exact[0])
        return audit_from_item(matches[0]) if len(matches) == 1 else None

    # -- jobs ---------------------------------------------------------------------------------
    def jobs_in_status(self, status: str, created_after_ms: int | None = None) -> list[JobState]:
        """Jobs in one status from the ByStatus index, optionally only those created after a time."""
        return self._by_status(status, created_after_ms)

    def newest_in_status(self, status: str, created_after_ms: int, limit: int) -> list[JobState]:
        """The ``limit`` jobs in one status created last, after a time; newest first (read from the
        index's end, no more than ``limit`` items)."""
        return self._by_status(status, created_after_ms, limit=limit) if limit > 0 else []

    def _by_status(
        self, status: str, created_after_ms: int | None, limit: int | None = None
    ) -> list[JobState]:
        condition = "gsi1pk = :p"
        values: dict[str, Any] = {":p": {"S": f"STATUS#{status}"}}
        if created_after_ms is not None:
            # gsi1sk is "<createdAt ms, 13 digits>#<jobArn>": a string range is a time range.
            condition += " AND gsi1sk >= :after"
            values[":after"] = {"S": f"{max(0, created_after_ms):013d}"}
        params: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": "ByStatus",
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
        }
        if limit is not None:
            params["ScanIndexForward"] = False
        jobs: list[JobState] = []
        while True:
            if limit is not None:
                params["Limit"] = limit - len(jobs)
            response = self._client.query(**params)
            jobs += [job_state_from_item(unmarshal(i)) for i in response.get("Items", [])]
            if "LastEvaluatedKey" not in response or (limit is not None and len(jobs) >= limit):
                return jobs
            params["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def oldest_created_ms(self, status: str) -> int | None:
        """The ByStatus index's first key in one status: its createdAt (one item read)."""
        response = self._client.query(
            TableName=self._table,
            IndexName="ByStatus",
            KeyConditionExpression="gsi1pk = :p",
            ExpressionAttributeValues={":p": {"S": f"STATUS#{status}"}},
            ScanIndexForward=True,
            Limit=1,
        )
        items = response.get("Items", [])
        # gsi1sk is "<createdAt ms, 13 digits>#<jobArn>".
        return int(items[0]["gsi1sk"]["S"][:13]) if items else None

    # -- plumbing -----------------------------------------------------------------------------
    def _key(self, sk: str) -> dict[str, Any]:
        return {"pk": {"S": SHARES_PK}, "sk": {"S": sk}}

    def _versioned_put(self, state: SharesState, previous_version: int | None) -> PutTypeDef:
        item = {**state_item(state), "pk": SHARES_PK, "sk": STATE_SK, "entity": "shares_state"}
        return versioned_put(self._table, item, previous_version)
