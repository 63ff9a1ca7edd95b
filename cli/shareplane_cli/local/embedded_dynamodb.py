"""The embedded DynamoDB made to cost what DynamoDB's own calls cost: by item and by partition, not by table.

moto keeps a table's items in memory and answers two calls by walking all of them, which on the jobs
table (every job's history) grows with the run until those calls are most of the handlers' time
(docs/design/embedded-dynamodb.md has what each cost). ``install`` gives the embedded DynamoDB of one
account and region:

- a TransactWriteItems that copies only the items the transaction names (at most 100, each named
  once) and puts exactly those back when one action fails, where moto deep-copies every table named;
- a Query that hands moto's own query the one partition it asks for (the base table), or only the
  items whose index key matches (an index), where moto sorts every item of the table first;
- items written out as moto writes them, without its model walk for every attribute value: moto's
  JSON serializer looks each of an AttributeValue's ten members up through its alias providers, a
  cost on every response; a value of the plain kinds (S, N, BOOL, NULL, SS, NS, M, L) is
  written directly, in the same form, and any other (B, BS, an unexpected shape) by moto's walk.

The actions, conditions, ordering, paging and errors stay moto's own (its ``put_item``,
``delete_item``, ``update_item``, condition parser and ``Table.query``): what DynamoDB documents
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html,
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Query.html,
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_AttributeValue.html) is what moto
models, and ``tests/integration/cli/test_embedded_dynamodb.py`` checks that each answers as moto's own.
"""

from __future__ import annotations

import copy
from functools import partial
from typing import Any

#: The actions a TransactWriteItems element may hold.
_ACTIONS = {"ConditionCheck", "Put", "Delete", "Update"}
#: Actions one call may carry.
MAX_ACTIONS = 100


class ItemRollbackTransactions:
    """``transact_write_items`` for one moto DynamoDB backend, with a rollback of the named items."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.original = backend.transact_write_items

    def transact_write_items(self, transact_items: list[dict[str, Any]]) -> None:
        """Apply every action or none, as moto's own method does."""
        from moto.dynamodb.comparisons import get_filter_expression
        from moto.dynamodb.exceptions import (
            ConditionalCheckFailed,
            MockValidationException,
            MultipleTransactionsException,
            TooManyTransactionsException,
            TransactionCanceledException,
            TransactWriteSingleOpException,
        )

        backend = self.backend
        if len(transact_items) > MAX_ACTIONS:
            raise TooManyTransactionsException()
        saved: dict[tuple[str, str], tuple[str, dict[str, Any], Any]] = {}
        errors: list[tuple[str | None, str | None, dict[str, Any] | None]] = []
        for element in transact_items:
            original_item: dict[str, Any] | None = None
            if len(element) > 1:
                raise TransactWriteSingleOpException
            try:
                op_type, op = next(iter(element.items()))
                if op_type not in _ACTIONS:
                    raise ValueError("Unsupported transaction operation")
                table_name = op["TableName"]
                key = _key_of(backend, op_type, op)
                identity = (str(table_name), str(dict(sorted(key.items()))))
                if identity in saved:
                    raise MultipleTransactionsException()
                current = backend.get_item(table_name, key)
                saved[identity] = (table_name, key, copy.deepcopy(current))
                names, values = op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
                condition = op.get("ConditionExpression")
                if condition is not None:
                    if not get_filter_expression(condition, names, values).expr(current):
                        if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                            original_item = current.to_json()["Attributes"]
                        raise ConditionalCheckFailed(item=original_item)
                conditions = {
                    "condition_expression": condition,
                    "expression_attribute_names": names,
                    "expression_attribute_values": values,
                }
                if op_type == "Put":
                    backend.put_item(table_name, op["Item"], **conditions)
                elif op_type == "Delete":
                    backend.delete_item(table_name, key, **conditions)
                elif op_type == "Update":
                    backend.update_item(
                        table_name, key, update_expression=op["UpdateExpression"], **conditions
                    )
                errors.append((None, None, None))
            except (MultipleTransactionsException, MockValidationException):
                self._put_back(saved)
                raise
            except ConditionalCheckFailed as exc:
                errors.append(("ConditionalCheckFailed", str(exc.message), original_item))
            except Exception as exc:  # noqa: BLE001 - as moto: any other failure cancels the transaction
                errors.append((type(exc).__name__, str(exc), original_item))
        if any(code is not None for code, _, _ in errors):
            self._put_back(saved)
            raise TransactionCanceledException(errors)

    def _put_back(self, saved: dict[tuple[str, str], tuple[str, dict[str, Any], Any]]) -> None:
        """Every named item as it was before the transaction: restored, or deleted if it did not exist."""
        backend = self.backend
        for table_name, key, before in saved.values():
            if before is None:
                if backend.get_item(table_name, key) is not None:
                    backend.delete_item(table_name, key)
            else:
                backend.put_item(table_name, before.to_json()["Attributes"])


def _key_of(backend: Any, op_type: str, op: dict[str, Any]) -> dict[str, Any]:
    """The primary key an action names: its Key, or a Put's item's key attributes."""
    if op_type != "Put":
        return dict(op["Key"])
    table = backend.get_table(op["TableName"])
    attrs = op["Item"]
    key = {table.hash_key_attr: attrs[table.hash_key_attr]}
    if table.range_key_attr is not None:
        key[table.range_key_attr] = attrs[table.range_key_attr]
    return key


def partition_query(
    table: Any,
    hash_key: Any,
    range_comparison: Any,
    range_objs: Any,
    limit: Any,
    exclusive_start_key: Any,
    scan_index_forward: Any,
    projection_expressions: Any,
    index_name: str | None = None,
    *args: Any,
    **kwargs: Any,
) -> Any:
    """moto's ``Table.query`` on a view of ``table`` holding only the items the query can match.

    moto's base-table query keeps the items whose hash key is the one asked for, and its index query
    the items whose index key attributes all equal the ones asked for; the view holds exactly those
    items, in the table's own layout, so moto's sort, paging, filters and projections run unchanged.
    """
    from moto.dynamodb.models.table import Table

    view = copy.copy(table)
    conditions = kwargs.get("hash_key_conditions") or []
    if index_name is None and hash_key is not None:
        partition = table.items.get(hash_key)
        view.items = {hash_key: partition} if partition is not None else {}
    elif index_name is not None and conditions:

        def matches(item: Any) -> bool:
            return all(item.attrs.get(name) and item.attrs.get(name) == value for name, value in conditions)

        if table.range_key_attr:
            view.items = {}
            for key, partition in table.items.items():
                kept = {r: item for r, item in partition.items() if matches(item)}
                if kept:
                    view.items[key] = kept
        else:
            view.items = {key: item for key, item in table.items.items() if matches(item)}
    return Table.query(
        view,
        hash_key,
        range_comparison,
        range_objs,
        limit,
        exclusive_start_key,
        scan_index_forward,
        projection_expressions,
        index_name,
        *args,
        **kwargs,
    )


#: The AttributeValue members written directly: strings, numbers (strings on the wire), booleans.
_SCALARS = {"S", "N", "BOOL", "NULL"}
_SETS = {"SS", "NS"}


def plain_attribute_value(value: Any) -> dict[str, Any] | None:
    """An AttributeValue as moto's JSON serializer writes it, or None when it holds a kind this does
    not write (binary, or not the wire form moto stores), which then takes moto's own walk."""
    if type(value) is not dict:
        return None
    out: dict[str, Any] = {}
    for kind, member in value.items():
        if member is None:
            continue
        if kind in _SCALARS:
            # moto writes a string member with str() (None, {} and [] as they are), a boolean as is.
            out[kind] = member if kind in ("BOOL", "NULL") or member in ({}, []) else str(member)
        elif kind in _SETS and type(member) is list:
            out[kind] = [m if m is None or m in ({}, []) else str(m) for m in member]
        elif kind == "M" and type(member) is dict:
            entries = {name: plain_attribute_value(entry) for name, entry in member.items()}
            if any(entry is None for entry in entries.values()):
                return None
            out[kind] = entries
        elif kind == "L" and type(member) is list:
            items = [plain_attribute_value(entry) for entry in member]
            if any(entry is None for entry in items):
                return None
            out[kind] = items
        else:
            return None
    return out


def _install_plain_attribute_values() -> None:
    """Write DynamoDB's plain AttributeValues directly in moto's JSON serializer (once per process)."""
    from moto.core.serialize import BaseJSONSerializer

    walk = BaseJSONSerializer._serialize_type_structure
    if getattr(walk, "plain_attribute_values", False):
        return

    def serialize_structure(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        if (
            key
            and shape.name == "AttributeValue"
            and self.operation_model.service_model.service_name
            in (
                "dynamodb",
                "dynamodbstreams",
            )
        ):
            plain = plain_attribute_value(value)
            if plain is not None:
                self._default_serialize(serialized, plain, shape, key)
                return
        walk(self, serialized, value, shape, key)

    serialize_structure.plain_attribute_values = True  # type: ignore[attr-defined]
    serialize_structure.moto_walk = walk  # type: ignore[attr-defined]
    BaseJSONSerializer._serialize_type_structure = serialize_structure  # type: ignore[method-assign]


def install(account: str, region: str) -> ItemRollbackTransactions:
    """Give the in-process embedded DynamoDB of ``account``/``region`` the item-level rollback, and the
    partition-scoped Query to each table created from now on."""
    from moto.dynamodb.models import dynamodb_backends

    backend = dynamodb_backends[account][region]
    transactions = ItemRollbackTransactions(backend)
    # moto's backend is patched in place (as its serializer is above): that is what this module is for.
    backend.transact_write_items = transactions.transact_write_items  # type: ignore[method-assign]
    create_table = backend.create_table

    def create_partitioned_table(*args: Any, **kwargs: Any) -> Any:
        table = create_table(*args, **kwargs)
        table.query = partial(partition_query, table)  # type: ignore[method-assign]  # (patched, as above)
        return table

    backend.create_table = create_partitioned_table  # type: ignore[method-assign]  # (patched, as above)
    _install_plain_attribute_values()
    return transactions
