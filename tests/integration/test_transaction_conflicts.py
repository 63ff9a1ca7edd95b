"""A transaction cancelled because another one was writing one of its items is sent again, then is
a concurrent update.

Moto never conflicts, so the cancellation DynamoDB answers is stubbed (botocore Stubber): a
conflict is retried in place after a jittered wait that doubles; past the retries the record path
re-reads and retries on ConcurrentUpdateError, where any other cancellation fails the event.
"""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from shareplane.adapters.dynamodb_items import (
    CONFLICT_RETRIES,
    CONFLICT_WAIT_SECONDS,
    transact_new_and_versioned,
)
from shareplane.domain.errors import ConcurrentUpdateError

ONE_PUT = [{"Put": {"TableName": "jobs", "Item": {"pk": {"S": "JOB#j1"}, "sk": {"S": "STATE"}}}}]


def cancel(stub: Stubber, *codes: str) -> None:
    stub.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        modeled_fields={"CancellationReasons": [{"Code": c} for c in codes]},
    )


def test_a_conflict_is_sent_again_after_a_doubling_jittered_wait(aws_credentials: None) -> None:
    # GIVEN a transaction that meets another on its third item twice, then goes through
    client = boto3.client("dynamodb", region_name="us-east-1")
    waits: list[float] = []
    with Stubber(client) as stub:
        cancel(stub, "None", "None", "TransactionConflict")
        cancel(stub, "None", "None", "TransactionConflict")
        stub.add_response("transact_write_items", {})
        # THEN it is written, after two waits within 25 ms and 50 ms
        assert transact_new_and_versioned(client, ONE_PUT, "moved", sleep=waits.append) is True
        stub.assert_no_pending_responses()
    assert len(waits) == 2
    assert 0 <= waits[0] <= CONFLICT_WAIT_SECONDS and 0 <= waits[1] <= 2 * CONFLICT_WAIT_SECONDS


def test_a_conflict_that_outlasts_the_retries_is_a_concurrent_update(aws_credentials: None) -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    waits: list[float] = []
    with Stubber(client) as stub:
        for _ in range(CONFLICT_RETRIES + 1):
            cancel(stub, "None", "None", "TransactionConflict")
        with pytest.raises(ConcurrentUpdateError):
            transact_new_and_versioned(client, ONE_PUT, "moved", sleep=waits.append)
        stub.assert_no_pending_responses()
    assert len(waits) == CONFLICT_RETRIES


@pytest.mark.parametrize(
    ("codes", "raised"),
    [
        (["None", "ConditionalCheckFailed"], ConcurrentUpdateError),  # the state moved: re-read
        (["None", "None", "ValidationError"], ClientError),  # anything else fails the event
    ],
)
def test_other_cancellations_are_not_sent_again(
    aws_credentials: None, codes: list[str], raised: type[Exception]
) -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    with Stubber(client) as stub:
        cancel(stub, *codes)
        with pytest.raises(raised):
            transact_new_and_versioned(client, ONE_PUT, "moved", sleep=pytest.fail)
