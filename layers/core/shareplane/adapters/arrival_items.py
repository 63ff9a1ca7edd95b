"""The stored layout of the arrival counts (``domain.arrival_counts``), and the counts back.

One item per queue and hour (``ARRIVALS#<queue name>`` / ``HOUR#<hour start, epoch ms, 13 digits>``),
a number attribute per kind of job counted in it, named ``<share>|<instances>|<priority>``::

    pk sk entity expiresAt  "ProdExp1|1|50": 12  "ResearchA|2|10": 3 ...

The name is read from its right, so a share name holding ``|`` reads back too. A count is added to
(ADD), so writes of different jobs never overwrite each other; a count a late event moved away from
may stay at 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..domain.forecast.arrivals import ArrivalKey

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

ARRIVALS_PREFIX = "ARRIVALS#"
HOUR_PREFIX = "HOUR#"


def arrivals_pk(queue: str) -> str:
    """The partition of one queue's counts."""
    return f"{ARRIVALS_PREFIX}{queue}"


def hour_sk(hour_ms: int) -> str:
    """One hour's sort key: a string range over these is a time range."""
    return f"{HOUR_PREFIX}{hour_ms:013d}"


def kind_name(key: ArrivalKey) -> str:
    """The attribute a kind of job is counted in."""
    return f"{key.share}|{key.instances}|{key.priority}"


def count_update(
    table: str, queue: str, hour_ms: int, deltas: Mapping[ArrivalKey, int], expires_at: int
) -> TransactWriteItemTypeDef:
    """One transaction action adding ``deltas`` (all of this queue and hour) to the hour's item,
    which expires (TTL) at ``expires_at`` (epoch seconds)."""
    names = {f"#k{n}": kind_name(key) for n, key in enumerate(deltas)}
    values: dict[str, Any] = {f":d{n}": {"N": str(delta)} for n, delta in enumerate(deltas.values())}
    values[":e"] = {"S": "arrivals"}
    values[":x"] = {"N": str(expires_at)}
    adds = ", ".join(f"#k{n} :d{n}" for n in range(len(deltas)))
    return {
        "Update": {
            "TableName": table,
            "Key": {"pk": {"S": arrivals_pk(queue)}, "sk": {"S": hour_sk(hour_ms)}},
            "UpdateExpression": f"ADD {adds} SET entity = :e, expiresAt = :x",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
    }


def counts_from_item(queue: str, item: Mapping[str, Any]) -> list[tuple[ArrivalKey, int]]:
    """An hour item's counts above zero (plain Python values, as ``unmarshal`` gives them)."""
    hour_ms = int(str(item["sk"])[len(HOUR_PREFIX) :])
    counts = []
    for name, value in item.items():
        if "|" not in name or int(value) <= 0:
            continue
        share, instances, priority = name.rsplit("|", 2)
        counts.append((ArrivalKey(queue, hour_ms, share, int(instances), int(priority)), int(value)))
    return counts
