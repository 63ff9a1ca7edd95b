"""reclaim_capacity handler: the events/ samples, a Lambda context, moto for the table and the topic."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import boto3
import pytest
from moto import mock_aws
from shareplane import bootstrap
from shareplane.adapters.alert_ledger import DynamoAlertLedger
from shareplane.adapters.dynamodb_store import DynamoJobStore
from shareplane.adapters.reclaim_ledger import DynamoReclaimLedger
from shareplane.adapters.sns_alerts import SnsAlerts

from tests.aws import create_jobs_table, topic_with_inbox
from tests.conftest import load_event, load_handler
from tests.fakes.reclaim_world import AFTER, T0, ReclaimWorld, borrowed_cluster
from tests.sqs import sqs_batch

TABLE = "shareplane-jobs"


@pytest.fixture
def world(aws_credentials: None) -> Any:
    """Fakes for Batch and S3 checkpoints, moto for DynamoDB, SNS and SQS."""
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_jobs_table(dynamodb, TABLE)
        sns, sqs = boto3.client("sns", region_name="us-east-1"), boto3.client("sqs", region_name="us-east-1")
        topic, inbox = topic_with_inbox(
            sns,
            sqs,
            "team-inbox",
            raw_delivery=True,
            filter_policy={"share": ["ProdExp2"], "kind": ["reclaim"]},
        )
        fakes = ReclaimWorld()
        borrowed_cluster(fakes)
        sender = replace(
            fakes.ports.sender, ledger=DynamoAlertLedger(dynamodb, TABLE), topic=SnsAlerts(sns, topic)
        )
        ports = replace(fakes.ports, ledger=DynamoReclaimLedger(dynamodb, TABLE), sender=sender)
        # Nothing from the environment: the handler reaches only these ports.
        with bootstrap.installed(bootstrap.Root({}, reclaim_ports=ports)):
            yield fakes, dynamodb, sqs, inbox


def test_the_runnable_sample_is_re_checked_and_the_tick_reclaims_once(
    world: Any, lambda_context: Any
) -> None:
    fakes, dynamodb, sqs, inbox = world
    # GIVEN the sample HIGHPRI job (created at T0) waits in the cluster in place of the fakes' own
    event = load_event("batch_service_job_state_change_runnable_highpri")
    hi = fakes.batch.jobs.pop("hi")
    job_id = event["detail"]["jobId"]
    fakes.batch.add(
        {**hi, **event["detail"], "serviceRequestPayload": hi["serviceRequestPayload"], "tags": {}}
    )
    assert event["detail"]["createdAt"] == T0 * 1000
    handler = load_handler("reclaim_capacity")
    # WHEN its RUNNABLE event arrives twice next to a broken record
    response = handler.lambda_handler(sqs_batch([event, "{not json", event]), lambda_context)
    # THEN only the broken record is retried, and the job is re-checked at its threshold
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert {(m["dueAt"], d) for m, d in fakes.timer.pending} == {(T0 + AFTER, AFTER)}
    # AND when the due re-check and the schedule's tick (sample, at T0 + 300 s) arrive, one victim is stopped
    tick = load_event("scheduled_event_reclaim_capacity")
    due = fakes.timer.pending[0][0]
    assert handler.lambda_handler(sqs_batch([due, tick, due, tick]), lambda_context) == {
        "batchItemFailures": []
    }
    assert [j for j, _ in fakes.batch.terminated] == ["p2-5"]
    # AND the audit, both histories and the victim team's alert are in the table and the topic
    ledger = DynamoReclaimLedger(dynamodb, TABLE)
    (audit,) = ledger.reclaims(0)
    assert audit.job_id == job_id and audit.applied and audit.victims[0].job_id == "p2-5"
    store = DynamoJobStore(dynamodb, TABLE)
    kinds = [h.kind.value for h in store.job_history(event["detail"]["jobArn"])]
    assert kinds == ["RECLAIM"]
    assert [h.kind.value for h in store.job_history(fakes.batch.jobs["p2-5"]["jobArn"])] == ["RECLAIMED"]
    (message,) = sqs.receive_message(QueueUrl=inbox, MaxNumberOfMessages=10)["Messages"]
    body = json.loads(message["Body"])
    assert body["team"] == "ProdExp2" and body["beneficiary"] == event["detail"]["jobArn"]
