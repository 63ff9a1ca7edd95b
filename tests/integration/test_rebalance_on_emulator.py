"""The rebalancer end to end on the Batch emulator over HTTP (a real boto3 client) and moto DynamoDB.

Jobs run in gpusim; their events are recorded into the jobs table by the real record_state path; the
rebalancer reads the queue snapshot and the table, decides, and applies through BatchPolicyAdapter;
the audit record then rolls back through the same adapter.
"""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws
from shareplane.adapters.batch_policy import BatchPolicyAdapter
from shareplane.service.rebalance_shares import RebalanceSettings, rollback

from tests.aws import create_jobs_table
from tests.fakes.rebalance_world import shares_config
from tests.rebalance_cluster import (
    P4D,
    QUEUE,
    Cluster,
    borrowed_fairshare_queue,
    quota_queue,
    start_cluster,
    weights,
)

TABLE = "shareplane-jobs"


@pytest.fixture
def cluster(aws_credentials: None, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_jobs_table(dynamodb, TABLE)
        # Quota plans set borrowLimit only when asked to (manage_borrow_limit): these tests are about it.
        config = shares_config(mode=request.param, rebalance={"manage_borrow_limit": True})
        cluster, server, _ = start_cluster(config, dynamodb, TABLE)
        try:
            yield cluster
        finally:
            server.stop()


@pytest.mark.parametrize("cluster", ["fairshare"], indirect=True, ids=["fair-share queue"])
def test_a_fairshare_plan_reaches_the_policy_and_rolls_back_from_its_audit_record(cluster: Cluster) -> None:
    # GIVEN equal weights; ProdExp1 took 80 of 100 instances before ProdExp2 (entitled to 40) arrived
    arn = borrowed_fairshare_queue(cluster)
    settings = RebalanceSettings(job_queue=QUEUE, scheduling_policy_arn=arn)
    # WHEN the rebalancer runs a tick
    outcome = cluster.rebalance("2026-03-16T00:05:00Z", settings)
    # THEN it saw 80 + 20 running and 30 waiting, and moved ProdExp2's weight toward 60/40 in one step
    (plan_record,) = cluster.shares.audits()
    assert plan_record.actual == {"ProdExp1": 80.0, "ProdExp2": 20.0}
    assert plan_record.waiting == {"ProdExp1": 0.0, "ProdExp2": 30.0}
    assert outcome.action == "applied" and weights(cluster, arn) == {"ProdExp1": 1.0, "ProdExp2": 1.25}
    assert plan_record.status == "APPLIED" and plan_record.after == {"ProdExp2": 1.25}
    # ... a redelivered tick changes nothing
    assert cluster.rebalance("2026-03-16T00:05:00Z", settings).action == "duplicate_tick"
    # WHEN the operator rolls the plan back
    undone = rollback(
        outcome.plan_id, cluster.now, settings, BatchPolicyAdapter(cluster.batch), cluster.shares
    )
    # THEN Batch holds the old weight again, and the rollback has its own audit record
    assert undone.action == "applied" and weights(cluster, arn) == {"ProdExp1": 1.0, "ProdExp2": 1.0}
    newest, oldest = cluster.shares.audits()
    assert (newest.kind, newest.rollback_of, newest.status) == (
        "rollback",
        outcome.plan_id,
        "APPLIED",
    )
    assert newest.before == {"ProdExp2": 1.25} and newest.after == {"ProdExp2": 1.0}
    assert oldest.plan_id == outcome.plan_id
    # ... and the next tick is held by the cooldown rather than undoing the restore at once
    assert cluster.rebalance("2026-03-16T00:10:00Z", settings).reason == "cooldown"


@pytest.mark.parametrize("cluster", ["quota"], indirect=True, ids=["quota-share queue"])
def test_a_quota_plan_reaches_the_quota_shares_and_rolls_back(cluster: Cluster) -> None:
    # GIVEN ProdExp1 wanting 80 (entitled 60) and ProdExp2 wanting 25 (entitled 40), borrowing unlimited
    arns = quota_queue(cluster)
    for i in range(8):
        cluster.submit(f"p1-{i}", 10, quotaShareName="ProdExp1")
    for i in range(5):
        cluster.submit(f"p2-{i}", 5, quotaShareName="ProdExp2")
    cluster.advance(120)
    settings = RebalanceSettings(job_queue=QUEUE)
    outcome = cluster.rebalance("2026-03-16T00:05:00Z", settings)
    # THEN each borrowLimit is bounded to what the share's target needs, through UpdateQuotaShare
    adapter = BatchPolicyAdapter(cluster.batch)
    described = {n: adapter.describe_quota_share(a).settings for n, a in arns.items()}
    assert outcome.action == "applied"
    assert {n: s.borrow_limit for n, s in described.items()} == {"ProdExp1": 25, "ProdExp2": 0}
    assert {n: dict(s.capacity_limits) for n, s in described.items()} == {
        "ProdExp1": {P4D: 60},
        "ProdExp2": {P4D: 40},
    }
    (record,) = cluster.shares.audits()
    assert dict(record.plan.targets) == {"ProdExp1": 75.0, "ProdExp2": 25.0}
    # WHEN rolled back, both shares lend and borrow without limit again
    rollback(outcome.plan_id[:8], cluster.now, settings, BatchPolicyAdapter(cluster.batch), cluster.shares)
    restored = [
        cluster.batch.describe_quota_share(quotaShareArn=a)["resourceSharingConfiguration"]
        for a in arns.values()
    ]
    assert restored == [{"strategy": "LEND_AND_BORROW", "borrowLimit": -1}] * 2
