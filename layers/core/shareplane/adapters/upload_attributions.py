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

from ..domain.submit.attribution import PrincipalCheck, StoredAttribution, UploaderPrincipal
from .dynamodb_items import marshal, put_new, unmarshal
from .dynamodb_store import PAYLOAD_SK, job_pk

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

ATTRIBUTION_SK = "ATTRIBUTION"
LINK_PREFIX = "JOB#"


#: ``uploader.principal``'s keys and the UploaderPrincipal member each holds (None members are left out).
_PRINCIPAL_KEYS = (
    ("arn", "arn"),
    ("type", "type"),
    ("principalId", "principal_id"),
    ("accountId", "account_id"),
    ("sessionIssuerArn", "session_issuer_arn"),
    ("eventName", "event_name"),
    ("check", "check"),
)


def upload_pk(request_id: str) -> str:
    """Partition key of one S3 request's join items."""
    return f"UPLOAD#{request_id}"


def principal_item(principal: UploaderPrincipal) -> dict[str, str]:
    """``uploader.principal`` as the items keep it: camelCase keys, absent members left out."""
    values = ((key, getattr(principal, member)) for key, member in _PRINCIPAL_KEYS)
    return {key: str(value) for key, value in values if value is not None}


def principal_from_item(item: Mapping[str, Any]) -> UploaderPrincipal | None:
    """A stored ``uploader.principal`` read back; None when it lacks a member or names no known check."""
    try:
        check = PrincipalCheck(item["check"])
        arn, event_name = str(item["arn"]), str(item["eventName"])
    except (KeyError, ValueError):
        return None

    def optional(key: str) -> str | None:
        value = item.get(key)
        return None if value is None else str(value)

    return UploaderPrincipal(
        arn=arn,
        event_name=event_name,
        check=check,
        type=optional("type"),
        principal_id=optional("principalId"),
        account_id=optional("accountId"),
        session_issuer_arn=optional("sessionIssuerArn"),
    )


class DynamoUploadAttributions:
    """UploadAttributions on the jobs table."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def save_attribution(self, request_id: str, principal: UploaderPrincipal, expires_at: int) -> bool:
        """Store the request's principal once; False when it was stored already (a duplicate event)."""
        item = {
            "pk": upload_pk(request_id),
            "sk": ATTRIBUTION_SK,
            "entity": "upload_attribution",
            "principal": principal_item(principal),
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
        stored = item.get("principal")
        return StoredAttribution(
            principal=principal_from_item(stored) if isinstance(stored, Mapping) else None,
            alerted=bool(item.get("alerted")),
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

    def set_principal(self, job_arn: str, principal: UploaderPrincipal) -> bool:
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
                ExpressionAttributeValues={
                    ":p": marshal({"v": principal_item(principal)})["v"],
                    ":map": {"S": "M"},
                },
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True
