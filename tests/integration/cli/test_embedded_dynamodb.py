"""The embedded DynamoDB's shortcuts answer exactly as moto's own code: transactions, queries, item values.

Each property runs the same calls against moto as it ships and against the local stack's version
(``shareplane_cli.local.embedded_dynamodb``) and requires the same answers: the same errors with the
same cancellation reasons and the same items after a transaction, the same pages of a query, the same
JSON for an item.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws
from moto.core.serialize import BaseJSONSerializer, JSONSerializer, XFormedAttributePicker
from moto.dynamodb.models import dynamodb_backends
from shareplane_cli.local import embedded_dynamodb

from tests.aws import table_definition
from tests.properties import examples

ACCOUNT = "123456789012"
PATCHED, PLAIN = "us-east-1", "us-west-2"
TABLE = "jobs"


@pytest.fixture(scope="module")
def moto_regions() -> Iterator[dict[str, Any]]:
    """One moto for the module: the jobs table in a region with the shortcuts and in one without."""
    with mock_aws():
        embedded_dynamodb.install(ACCOUNT, PATCHED)
        clients = {region: boto3.client("dynamodb", region_name=region) for region in (PATCHED, PLAIN)}
        for client in clients.values():
            client.create_table(TableName=TABLE, **table_definition())
        yield clients


def clear(clients: dict[str, Any]) -> None:
    for client in clients.values():
        for item in client.scan(TableName=TABLE)["Items"]:
            client.delete_item(TableName=TABLE, Key={"pk": item["pk"], "sk": item["sk"]})


def outcome(client: Any, call: str, **params: Any) -> Any:
    """A call's answer, or its error code and cancellation reasons."""
    try:
        return getattr(client, call)(**params)
    except ClientError as exc:
        reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
        return ("error", exc.response["Error"]["Code"], reasons)


def items(client: Any) -> list[dict[str, Any]]:
    return sorted(client.scan(TableName=TABLE)["Items"], key=lambda i: (i["pk"]["S"], i["sk"]["S"]))


# ---------------------------------------------------------------------------------------- transactions
KEYS = st.tuples(st.sampled_from(["JOB#a", "JOB#b"]), st.sampled_from(["STATE", "H#1", "H#2"]))


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


@st.composite
def actions(draw: st.DrawFn) -> dict[str, Any]:
    pk, sk = draw(KEYS)
    kind = draw(st.sampled_from(["Put", "Delete", "Update", "ConditionCheck"]))
    condition = draw(st.sampled_from([None, "attribute_exists(pk)", "attribute_not_exists(pk)", "v = :c"]))
    value = draw(st.integers(0, 2))
    action: dict[str, Any] = {"TableName": TABLE}
    values: dict[str, Any] = {}
    if kind == "Put":
        action["Item"] = {**_key(pk, sk), "v": {"N": str(value)}}
    else:
        action["Key"] = _key(pk, sk)
    if kind == "Update":
        action["UpdateExpression"] = "SET v = :v"
        values[":v"] = {"N": str(value)}
    if kind == "ConditionCheck" and condition is None:
        condition = "attribute_exists(pk)"
    if condition is not None:
        action["ConditionExpression"] = condition
        if ":c" in condition:
            values[":c"] = {"N": str(draw(st.integers(0, 2)))}
    if values:
        action["ExpressionAttributeValues"] = values
    return {kind: action}


@settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(transactions=st.lists(st.lists(actions(), min_size=1, max_size=4), min_size=1, max_size=6))
def test_a_transaction_answers_and_leaves_the_items_as_motos_own(
    moto_regions: dict[str, Any], transactions: list[list[dict[str, Any]]]
) -> None:
    clear(moto_regions)
    for transaction in transactions:
        answers = {
            region: outcome(client, "transact_write_items", TransactItems=transaction)
            for region, client in moto_regions.items()
        }
        if isinstance(answers[PLAIN], dict):
            answers = {r: "applied" if isinstance(a, dict) else a for r, a in answers.items()}
        assert answers[PATCHED] == answers[PLAIN], transaction
        assert items(moto_regions[PATCHED]) == items(moto_regions[PLAIN]), transaction


# --------------------------------------------------------------------------------------------- queries
ITEMS = st.lists(
    st.tuples(
        st.sampled_from(["JOB#a", "JOB#b", "JOB#c"]),
        st.sampled_from(["STATE", "H#1", "H#2", "H#3", "PRED"]),
        st.sampled_from([None, "RUNNABLE", "RUNNING"]),
        st.integers(0, 5),
    ),
    max_size=25,
)


@st.composite
def queries(draw: st.DrawFn) -> dict[str, Any]:
    forward, limit = draw(st.booleans()), draw(st.sampled_from([None, 1, 2, 5]))
    params: dict[str, Any] = {"TableName": TABLE, "ScanIndexForward": forward}
    if limit:
        params["Limit"] = limit
    if draw(st.booleans()):
        params["IndexName"] = "ByStatus"
        params["KeyConditionExpression"] = "gsi1pk = :p"
        params["ExpressionAttributeValues"] = {":p": {"S": draw(st.sampled_from(["RUNNABLE", "RUNNING"]))}}
        return params
    pk = draw(st.sampled_from(["JOB#a", "JOB#b", "JOB#c", "JOB#none"]))
    condition = draw(st.sampled_from(["", " AND begins_with(sk, :s)", " AND sk > :s"]))
    params["KeyConditionExpression"] = "pk = :p" + condition
    params["ExpressionAttributeValues"] = {":p": {"S": pk}, **({":s": {"S": "H#"}} if condition else {})}
    return params


def pages(client: Any, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Every page of a query, following LastEvaluatedKey."""
    answers, start = [], None
    while True:
        page = client.query(**params, **({"ExclusiveStartKey": start} if start else {}))
        answers.append({k: page.get(k) for k in ("Items", "Count", "ScannedCount", "LastEvaluatedKey")})
        start = page.get("LastEvaluatedKey")
        if not start:
            return answers


@settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(stored=ITEMS, asked=st.lists(queries(), min_size=1, max_size=5))
def test_a_query_answers_page_for_page_as_motos_own(
    moto_regions: dict[str, Any], stored: list[tuple[str, str, str | None, int]], asked: list[dict[str, Any]]
) -> None:
    clear(moto_regions)
    for pk, sk, status, value in stored:
        item = {**_key(pk, sk), "v": {"N": str(value)}}
        if status:
            item |= {"gsi1pk": {"S": status}, "gsi1sk": {"S": f"{value:03d}#{pk}"}}
        for client in moto_regions.values():
            client.put_item(TableName=TABLE, Item=item)
    for params in asked:
        assert pages(moto_regions[PATCHED], params) == pages(moto_regions[PLAIN], params), params


def test_the_patched_region_really_takes_the_shortcuts(moto_regions: dict[str, Any]) -> None:
    backends = dynamodb_backends[ACCOUNT]
    assert "query" in vars(backends[PATCHED].get_table(TABLE))  # the partition-scoped query
    assert "query" not in vars(backends[PLAIN].get_table(TABLE))
    assert "transact_write_items" in vars(backends[PATCHED]) and "transact_write_items" not in vars(
        backends[PLAIN]
    )


# --------------------------------------------------------------------------------------------- values
VALUES = st.recursive(
    st.one_of(
        st.builds(lambda s: {"S": s}, st.text(max_size=5)),
        st.builds(lambda n: {"N": str(n)}, st.decimals(allow_nan=False, allow_infinity=False, places=2)),
        st.builds(lambda b: {"BOOL": b}, st.booleans()),
        st.just({"NULL": True}),
        st.builds(lambda s: {"SS": sorted(s)}, st.sets(st.text(max_size=3), min_size=1, max_size=3)),
        st.builds(
            lambda s: {"NS": sorted(str(n) for n in s)}, st.sets(st.integers(), min_size=1, max_size=3)
        ),
        st.builds(lambda b: {"B": b}, st.binary(max_size=4)),
    ),
    lambda inner: st.one_of(
        # DynamoDB names are never empty (an empty map key is a ValidationException).
        st.builds(lambda m: {"M": m}, st.dictionaries(st.text(min_size=1, max_size=3), inner, max_size=3)),
        st.builds(lambda items: {"L": items}, st.lists(inner, max_size=3)),
    ),
    max_leaves=12,
)


def serialized(item: dict[str, Any], *, plain: bool) -> Any:
    """A GetItem answer holding ``item`` as moto's JSON serializer writes it, with or without the shortcut."""
    from moto.core.responses import get_service_model

    embedded_dynamodb._install_plain_attribute_values()
    installed = BaseJSONSerializer._serialize_type_structure
    walk = installed if plain else installed.moto_walk  # type: ignore[attr-defined]
    operation = get_service_model("dynamodb").operation_model("GetItem")
    BaseJSONSerializer._serialize_type_structure = walk  # type: ignore[method-assign]
    try:
        body = JSONSerializer(operation, value_picker=XFormedAttributePicker()).serialize({"Item": item})[
            "body"
        ]
    finally:
        BaseJSONSerializer._serialize_type_structure = installed  # type: ignore[method-assign]
    return json.loads(body, parse_float=Decimal)


@settings(max_examples=examples(200), deadline=None)
@given(item=st.dictionaries(st.text(min_size=1, max_size=4), VALUES, max_size=5))
def test_an_item_is_written_as_motos_own_serializer_writes_it(item: dict[str, Any]) -> None:
    assert serialized(item, plain=True) == serialized(item, plain=False)


def test_binary_values_are_left_to_motos_own_walk() -> None:
    assert embedded_dynamodb.plain_attribute_value({"B": b"\x00"}) is None
    assert embedded_dynamodb.plain_attribute_value({"M": {"x": {"BS": [b"\x01"]}}}) is None
    assert embedded_dynamodb.plain_attribute_value({"M": {"x": {"S": "y"}}}) == {"M": {"x": {"S": "y"}}}
