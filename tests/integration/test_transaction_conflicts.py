"""A transaction cancelled because another one was writing the same item is a concurrent update.

Moto never conflicts, so the cancellation DynamoDB answers is stubbed (botocore Stubber): the record
path re-reads and retries on ConcurrentUpdateError, where any other cancellation would fail the event.
"""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from shareplane.adapters.dynamodb_items import transact_new_and_versioned
from shareplane.domain.errors import ConcurrentUpdateError

ONE_PUT = [{"Put": {"TableName": "jobs", "Item": {"pk": {"S": "JOB#j1"}, "sk": {"S": "STATE"}}}}]


@pytest.mark.parametrize(
    ("codes", "raised"),
    [
        # another writer's transaction held the shared hour count: read again and retry
        (["None", "None", "TransactionConflict"], ConcurrentUpdateError),
        (["None", "ConditionalCheckFailed"], ConcurrentUpdateError),
        (["None", "None", "ValidationError"], ClientError),
    ],
)
def test_a_conflict_on_any_item_is_a_concurrent_update(
    aws_credentials: None, codes: list[str], raised: type[Exception]
) -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_client_error(
            "transact_write_items",
            service_error_code="TransactionCanceledException",
            modeled_fields={"CancellationReasons": [{"Code": c} for c in codes]},
        )
        with pytest.raises(raised):
            transact_new_and_versioned(client, ONE_PUT, "moved")


def test_a_transaction_whose_new_item_exists_wrote_nothing(aws_credentials: None) -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_client_error(
            "transact_write_items",
            service_error_code="TransactionCanceledException",
            modeled_fields={"CancellationReasons": [{"Code": "ConditionalCheckFailed"}, {"Code": "None"}]},
        )
        assert transact_new_and_versioned(client, ONE_PUT, "moved") is False
