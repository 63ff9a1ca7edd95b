"""The join of an upload's principal (CloudTrail) to its jobs (the submit path), in the jobs table.

| pk                      | sk              | what                                                    |
|-------------------------|-----------------|---------------------------------------------------------|
| ``UPLOAD#<request id>`` | ``ATTRIBUTION`` | the principal CloudTrail named for that S3 request      |
| ``UPLOAD#<request id>`` | ``JOB#<arn>``   | a job the submit path recorded from that request's drop |
| ``JOB#<arn>``           | ``PAYLOAD``     | ``uploader.principal``: where the job keeps it          |

The join items expire (TTL, ``expiresAt``); the principal stays on the job's PAYLOAD item.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..domain.submit.attribution import StoredAttribution
from .dynamodb_items import marshal, put_new, unmarshal
from .dynamodb_store import PAYLOAD_SK, job_pk

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

ATTRIBUTION_SK = "ATTRIBUTION"
LINK_PREFIX = "JOB#"


def upload_pk(request_id: str) -> str:
    """Partition key of one S3 request's join items."""
    return f"UPLOAD#{request_id}"


class DynamoUploadAttributions:
    """UploadAttributions on the jobs table."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def save_attribution(self, request_id: str, record: Mapping[str, Any], expires_at: int) -> bool:
        """Store the request's principal once; False when it was stored already (a duplicate event)."""
        item = {
            "pk": upload_pk(request_id),
            "sk": ATTRIBUTION_SK,
            "entity": "upload_attribution",
            "principal": dict(record),
            "expiresAt": expires_at,
        }
        return put_new(self._client, self._table, item)

    def load_attribution(self, request_id: str) -> StoredAttribution | None:
        """The request's attribution (principal, alerted), read consistently; None if absent."""
        response = self._client.get_item(
            TableName=self._table,
            Key={"pk": {"S": upload_pk(request_id)}, "sk": {"S": ATTRIBUTION_SK}},
            ConsistentRead=True,
        )
        item = unmarshal(response["Item"]) if "Item" in response else None
        if item is None:
            return None
        return StoredAttribution(
            principal=dict(item.get("principal") or {}), alerted=bool(item.get("alerted"))
        )

    def mark_alerted(self, request_id: str) -> None:
        """Remember that the team was told about this upload (the alert's own item is the alert ledger's).

        ``alertClaimedAt`` is removed for the items an older release claimed its alert on.
        """
        self._client.update_item(
            TableName=self._table,
            Key={"pk": {"S": upload_pk(request_id)}, "sk": {"S": ATTRIBUTION_SK}},
            UpdateExpression="SET alerted = :t REMOVE alertClaimedAt",
            ExpressionAttributeValues={":t": {"BOOL": True}},
        )

    def link_job(self, request_id: str, job_arn: str, expires_at: int) -> None:
        """Record that ``job_arn`` came from this request's drop (the same item every time)."""
        item = {
            "pk": upload_pk(request_id),
            "sk": f"{LINK_PREFIX}{job_arn}",
            "entity": "upload_link",
            "jobArn": job_arn,
            "expiresAt": expires_at,
        }
        self._client.put_item(TableName=self._table, Item=marshal(item))

    def linked_jobs(self, request_id: str) -> list[str]:
        """The jobs the submit path linked to this request, read consistently."""
        arns: list[str] = []
        for page in self._client.get_paginator("query").paginate(
            TableName=self._table,
            KeyConditionExpression="pk = :p AND begins_with(sk, :s)",
            ExpressionAttributeValues={":p": {"S": upload_pk(request_id)}, ":s": {"S": LINK_PREFIX}},
            ProjectionExpression="jobArn",
            ConsistentRead=True,
        ):
            arns += [item["jobArn"]["S"] for item in page.get("Items", [])]
        return arns

    def set_principal(self, job_arn: str, record: Mapping[str, Any]) -> bool:
        """Write ``uploader.principal`` on the job's PAYLOAD item; False when the job has no payload item.

        A plain overwrite with the same value, so a repeat changes nothing.
        """
        try:
            self._client.update_item(
                TableName=self._table,
                Key={"pk": {"S": job_pk(job_arn)}, "sk": {"S": PAYLOAD_SK}},
                UpdateExpression="SET #u.#p = :p",
                ConditionExpression="attribute_exists(pk) AND attribute_type(#u, :map)",
                ExpressionAttributeNames={"#u": "uploader", "#p": "principal"},
                ExpressionAttributeValues={":p": marshal({"v": dict(record)})["v"], ":map": {"S": "M"}},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True
