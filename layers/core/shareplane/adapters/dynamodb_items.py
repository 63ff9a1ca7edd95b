"""DynamoDB helpers every table adapter shares: plain items to and from attribute values, and the
conditional writes (put once, put at a version, tick watermarks) the adapters build on.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from ..domain.errors import ConcurrentUpdateError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import PutTypeDef, TransactWriteItemTypeDef

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def to_ddb(value: Any) -> Any:
    """A plain value as boto3's serializer takes it: floats as Decimal, None members dropped."""
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, Mapping):
        return {k: to_ddb(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [to_ddb(v) for v in value]
    return value


def from_ddb(value: Any) -> Any:
    """A deserialized value as plain Python: whole Decimals as int, the rest as float."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: from_ddb(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_ddb(v) for v in value]
    return value


def marshal(item: Mapping[str, Any]) -> dict[str, Any]:
    """A plain item in DynamoDB's attribute-value form (None members are not stored)."""
    return {k: _serializer.serialize(v) for k, v in to_ddb(item).items()}


def unmarshal(item: Mapping[str, Any]) -> dict[str, Any]:
    """A DynamoDB item as plain Python values."""
    return {k: from_ddb(_deserializer.deserialize(v)) for k, v in item.items()}


#: The condition of a put that must not overwrite: an item with this key does not exist yet.
_NEW_KEY = "attribute_not_exists(pk)"


def index_items_since(
    client: DynamoDBClient, table: str, index_pk: str, since: float
) -> list[dict[str, Any]]:
    """Items of one ByStatus index partition whose sort key (epoch ms, 13 digits) is at ``since`` or later."""
    items: list[dict[str, Any]] = []
    for page in client.get_paginator("query").paginate(
        TableName=table,
        IndexName="ByStatus",
        KeyConditionExpression="gsi1pk = :p AND gsi1sk >= :s",
        ExpressionAttributeValues={":p": {"S": index_pk}, ":s": {"S": f"{int(since * 1000):013d}"}},
    ):
        items += [unmarshal(i) for i in page.get("Items", [])]
    return items


def put_new_action(table: str, item: Mapping[str, Any]) -> TransactWriteItemTypeDef:
    """A TransactWriteItems action that puts an item only if its key is new."""
    return {"Put": {"TableName": table, "Item": marshal(item), "ConditionExpression": _NEW_KEY}}


def versioned_put(table: str, item: Mapping[str, Any], previous_version: int | None) -> PutTypeDef:
    """Put parameters that replace an item only at the version it was read at (or create it, new)."""
    put: PutTypeDef = {"TableName": table, "Item": marshal(item)}
    if previous_version is None:
        put["ConditionExpression"] = _NEW_KEY
    else:
        put["ConditionExpression"] = "#v = :v"
        put["ExpressionAttributeNames"] = {"#v": "version"}
        put["ExpressionAttributeValues"] = {":v": {"N": str(previous_version)}}
    return put


def get_item(client: DynamoDBClient, table: str, pk: str, sk: str) -> dict[str, Any] | None:
    """One item by its key, read consistently, as plain Python; None when there is none."""
    response = client.get_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True)
    item = response.get("Item")
    return unmarshal(item) if item else None


def put_new(client: DynamoDBClient, table: str, item: Mapping[str, Any]) -> bool:
    """Put an item only if its key is new; False when it exists (what makes a repeat a no-op)."""
    try:
        client.put_item(TableName=table, Item=marshal(item), ConditionExpression=_NEW_KEY)
    except ClientError as exc:
        if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
            return False
        raise
    return True


def tick_watermark(client: DynamoDBClient, table: str, runner: str) -> str | None:
    """The newest schedule tick ``runner`` handled (``tick_id``'s format), or None before its first."""
    response = client.get_item(
        TableName=table, Key={"pk": {"S": f"TICK#{runner}"}, "sk": {"S": "TICK"}}, ConsistentRead=True
    )
    value = response.get("Item", {}).get("lastTick", {}).get("S")
    return str(value) if value else None


def advance_tick_watermark(client: DynamoDBClient, table: str, runner: str, tick: str) -> None:
    """Move ``runner``'s watermark forward to ``tick``; an older or equal tick leaves it as it is."""
    try:
        client.update_item(
            TableName=table,
            Key={"pk": {"S": f"TICK#{runner}"}, "sk": {"S": "TICK"}},
            UpdateExpression="SET lastTick = :t",
            ConditionExpression="attribute_not_exists(lastTick) OR lastTick < :t",
            ExpressionAttributeValues={":t": {"S": tick}},
        )
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise


#: A transaction that met another one on an item it writes (a shared count: an hour's arrival count,
#: a team's month spend) is sent again up to this many times, after a jittered wait that doubles:
#: DynamoDB cancels a TransactWriteItems that conflicts with a concurrent one (TransactionConflict;
#: API reference, TransactionCanceledException) and botocore does not retry it. A burst of jobs of
#: one hour finishing together (a cancelled sweep) all write that hour's count.
CONFLICT_RETRIES = 6
CONFLICT_WAIT_SECONDS = 0.025


def transact_new_and_versioned(
    client: DynamoDBClient,
    actions: Sequence[TransactWriteItemTypeDef],
    moved: str,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """One TransactWriteItems whose first action puts a new item and whose second is a versioned put.

    False when the first item exists (this write happened already); ConcurrentUpdateError(``moved``)
    when the versioned item changed since it was read, or when another transaction still held one
    of the items after ``CONFLICT_RETRIES`` waits (read again and retry); any other cancellation
    propagates. A cancelled transaction wrote nothing, so sending it again is safe: its conditions
    are checked again.
    """
    attempt = 0
    while True:
        try:
            client.transact_write_items(TransactItems=actions)
            return True
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
            if reasons and reasons[0] == "ConditionalCheckFailed":
                return False
            if len(reasons) > 1 and reasons[1] == "ConditionalCheckFailed":
                raise ConcurrentUpdateError(moved) from exc
            if "TransactionConflict" not in reasons:
                raise
            if attempt == CONFLICT_RETRIES:
                raise ConcurrentUpdateError(f"{moved} (another write held an item)") from exc
            sleep(random.uniform(0.0, CONFLICT_WAIT_SECONDS * 2**attempt))
            attempt += 1
