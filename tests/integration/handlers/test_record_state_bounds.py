"""record_state refuses out-of-range times and counts at the schema: that record alone goes to the DLQ."""

from __future__ import annotations

import copy
from typing import Any

from tests.conftest import load_event, load_scenario
from tests.integration.handlers.test_record_state import handler, stored_store  # noqa: F401 (the fixture)
from tests.sqs import sqs_batch


def test_an_out_of_range_time_fails_alone_and_nothing_of_it_is_stored(
    handler: Any,  # noqa: F811 (the imported fixture)
    lambda_context: Any,
) -> None:
    # GIVEN a job's good events and, between them, an event of another job dated createdAt 10^15 ms
    good = load_scenario("job_whole_life")
    poison = copy.deepcopy(load_event("batch_service_job_state_change_succeeded"))
    poison["detail"].update({"jobArn": poison["detail"]["jobArn"] + "-poison", "createdAt": 10**15})
    # WHEN the handler gets the batch
    response = handler.lambda_handler(sqs_batch([good[0], poison, *good[1:]]), lambda_context)
    # THEN only the poison record is failed (retried, then dead-lettered) and the good job is stored
    assert response["batchItemFailures"] == [{"itemIdentifier": "m1"}]
    assert [j.status.value for j in stored_store().jobs()] == ["SUCCEEDED"]
