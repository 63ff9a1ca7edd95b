"""rebalance_shares handler: the scheduled-event sample through SQS, moto DynamoDB, the Batch emulator over HTTP."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from shareplane import bootstrap
from shareplane.adapters.share_store import DynamoShareStore
from shareplane.schemas.scheduled import parse_scheduled_event, tick_time

from tests.aws import SHARES_CONFIG_PARAMETER, create_jobs_table, store_shares_config
from tests.conftest import REPO, load_event, load_handler
from tests.fakes.rebalance_world import shares_config
from tests.rebalance_cluster import (
    Cluster,
    borrowed_fairshare_queue,
    start_cluster,
    weights,
)
from tests.sqs import sqs_batch

TABLE = "shareplane-jobs"


@pytest.fixture(params=["apply"])
def world(
    aws_credentials: None, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[tuple[Any, Cluster, str]]:
    """The handler over the blog's queue; the rebalancer applies its plans unless a test asks for
    ``advisory`` (the shipped default) by parametrizing this fixture."""
    import yaml

    config = {
        **yaml.safe_load((REPO / "config" / "shares.yaml").read_text()),
        "share_layout": "team",
        "rebalance": {"mode": request.param},
    }
    monkeypatch.setenv("TABLE_NAME", TABLE)
    monkeypatch.setenv("SHAREPLANE_CONFIG_PARAMETER", SHARES_CONFIG_PARAMETER)
    monkeypatch.setenv("GPU_JOB_QUEUE", "")  # the stack created the queue the config names
    monkeypatch.setenv("REBALANCE_DRY_RUN", "false")
    with mock_aws():
        store_shares_config(boto3.client("ssm", region_name="us-east-1"), config)
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_jobs_table(dynamodb, TABLE)
        cluster, server, _ = start_cluster(shares_config(), dynamodb, TABLE)
        monkeypatch.setenv("AWS_ENDPOINT_URL_BATCH", server.endpoint)
        try:
            # GIVEN the blog's queue with equal weights; ProdExp1 took 80 before ProdExp2 (entitled 40) came
            arn = borrowed_fairshare_queue(cluster)
            with bootstrap.installed(bootstrap.Root.from_environment()):
                yield load_handler("rebalance_shares"), cluster, arn
        finally:
            server.stop()


def test_a_scheduled_tick_applies_a_plan_and_its_redelivery_applies_nothing(
    world: Any, lambda_context: Any
) -> None:
    handler, cluster, arn = world
    tick = load_event("scheduled_event_rebalance_shares")
    # WHEN the schedule's event arrives through the queue
    assert handler.lambda_handler(sqs_batch([tick]), lambda_context) == {"batchItemFailures": []}
    # THEN ProdExp2's weight moved toward its entitlement and the change is audited under the tick
    assert weights(cluster, arn) == {"ProdExp1": 1.0, "ProdExp2": 1.25}
    (record,) = DynamoShareStore(boto3.client("dynamodb", region_name="us-east-1"), TABLE).audits()
    assert (record.tick_id, record.status) == ("2026-03-16T20:05:00Z", "APPLIED")
    # WHEN an operator puts the weights back and the same tick is delivered again (twice in one batch)
    cluster.batch.update_scheduling_policy(
        arn=arn,
        fairsharePolicy={
            "shareDecaySeconds": 3600,
            "shareDistribution": [
                {"shareIdentifier": "ProdExp1", "weightFactor": 1.0},
                {"shareIdentifier": "ProdExp2", "weightFactor": 1.0},
            ],
        },
    )
    assert handler.lambda_handler(sqs_batch([tick, tick], prefix="r"), lambda_context) == {
        "batchItemFailures": []
    }
    # THEN nothing is applied again
    assert weights(cluster, arn) == {"ProdExp1": 1.0, "ProdExp2": 1.0}
    assert len(DynamoShareStore(boto3.client("dynamodb", region_name="us-east-1"), TABLE).audits()) == 1


@pytest.mark.parametrize("world", ["advisory"], indirect=True)
def test_in_advisory_mode_a_tick_audits_its_plan_and_moves_no_weight(world: Any, lambda_context: Any) -> None:
    handler, cluster, arn = world
    tick = load_event("scheduled_event_rebalance_shares")
    store = DynamoShareStore(boto3.client("dynamodb", region_name="us-east-1"), TABLE)
    # WHEN the schedule's event arrives, and again (redelivered, twice in one batch)
    assert handler.lambda_handler(sqs_batch([tick]), lambda_context) == {"batchItemFailures": []}
    assert handler.lambda_handler(sqs_batch([tick, tick], prefix="r"), lambda_context) == {
        "batchItemFailures": []
    }
    # THEN the weights are as they were, and the plan that would move ProdExp2 is audited once, ADVISORY
    assert weights(cluster, arn) == {"ProdExp1": 1.0, "ProdExp2": 1.0}
    (record,) = store.audits()
    assert (record.tick_id, record.status, record.after) == (
        "2026-03-16T20:05:00Z",
        "ADVISORY",
        {"ProdExp2": 1.25},
    )
    state = store.load_state()
    assert state is not None and state.last_tick == record.tick_id and state.last_applied_at is None


def test_a_body_that_is_not_a_scheduled_event_fails_alone(world: Any, lambda_context: Any) -> None:
    handler, cluster, arn = world
    tick = load_event("scheduled_event_rebalance_shares")
    wrong = {**tick, "source": "shareplane.test"}
    response = handler.lambda_handler(sqs_batch(["{not json", wrong, tick]), lambda_context)
    assert response == {"batchItemFailures": [{"itemIdentifier": "m0"}, {"itemIdentifier": "m1"}]}
    assert weights(cluster, arn)["ProdExp2"] == 1.25


def _forget_rebalancer(table: str) -> None:
    """Delete the rebalancer's state and audit items, as if the tick had never been handled."""
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    items = dynamodb.query(
        TableName=table,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "SHARES"}},
    )["Items"]
    for item in items:
        dynamodb.delete_item(TableName=table, Key={"pk": item["pk"], "sk": item["sk"]})


def test_the_same_tick_delivered_at_two_wall_clocks_plans_and_audits_identically(
    world: Any, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    handler, cluster, arn = world
    tick = load_event("scheduled_event_rebalance_shares")
    store = DynamoShareStore(boto3.client("dynamodb", region_name="us-east-1"), TABLE)
    wall_clock = time.time
    runs = []
    # GIVEN one tick, delivered once now and once six hours of wall clock later (past any cooldown),
    # each time into the same cluster with nothing of the rebalancer's recorded yet
    for offset in (0.0, 6 * 3600.0):
        monkeypatch.setattr(time, "time", lambda offset=offset: wall_clock() + offset)
        _forget_rebalancer(TABLE)
        cluster.batch.update_scheduling_policy(
            arn=arn,
            fairsharePolicy={
                "shareDecaySeconds": 3600,
                "shareDistribution": [
                    {"shareIdentifier": "ProdExp1", "weightFactor": 1.0},
                    {"shareIdentifier": "ProdExp2", "weightFactor": 1.0},
                ],
            },
        )
        # WHEN the tick is handled
        assert handler.lambda_handler(sqs_batch([tick]), lambda_context) == {"batchItemFailures": []}
        runs.append((store.audits(), store.load_state(), weights(cluster, arn)))
    # THEN both deliveries made the same plan, wrote the same audit record (its times are the tick's)
    # and left the same state and weights
    (first_audits, first_state, first_weights), (second_audits, second_state, second_weights) = runs
    assert len(first_audits) == 1
    assert first_audits[0].plan.created_at == tick_time(parse_scheduled_event(tick))
    assert first_audits == second_audits
    assert first_state == second_state
    assert first_weights == second_weights == {"ProdExp1": 1.0, "ProdExp2": 1.25}
