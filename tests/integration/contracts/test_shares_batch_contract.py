"""SharesBatch: the fake and BatchPolicyAdapter agree on a fair-share queue (policy, update, capacity).

moto has no service environments for SageMaker training, so the adapter runs against gpusim served over
HTTP to a real boto3 client (as tests/rebalance_cluster.py serves it), with the template's GPU queue:
100 p4d instances and a fair-share policy. The fake holds the same policy in DescribeSchedulingPolicies'
shape. Quota shares and GetJobQueueSnapshot are left to the rebalancer's tests on the emulator.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from gpusim import BatchModel, ModelOptions, RealtimeEngine
from gpusim.server import GpuSimServer
from shareplane.adapters.batch_policy import BatchPolicyAdapter
from shareplane.domain.shares.batch_shares import SchedulingPolicyUpdate, ShareWeight

from tests.fakes.shares_batch import FakeSharesBatch
from tests.rebalance_cluster import FAST, QUEUE, Cluster, fairshare_queue

WEIGHTS = {"ProdExp1": 1.0, "ProdExp2": 1.5}


@dataclass
class SharesBatchUnderTest:
    batch: Any
    policy_arn: str


@pytest.fixture(params=["fake", "on gpusim"])
def under_test(request: pytest.FixtureRequest, aws_credentials: None) -> Iterator[SharesBatchUnderTest]:
    if request.param == "fake":
        arn = "arn:aws:batch:us-east-1:123456789012:scheduling-policy/search-gpu-fss-policy"
        policy = {
            "arn": arn,
            "name": "search-gpu-fss-policy",
            "fairsharePolicy": {
                "shareDecaySeconds": 3600,
                "computeReservation": 0,
                "shareDistribution": [{"shareIdentifier": s, "weightFactor": w} for s, w in WEIGHTS.items()],
            },
        }
        yield SharesBatchUnderTest(FakeSharesBatch(policy=policy, capacity=100), arn)
        return
    clock = [0.0]
    model = BatchModel(engine=RealtimeEngine(wall_clock=lambda: clock[0]), options=ModelOptions(timings=FAST))
    server = GpuSimServer(model).start()
    try:
        client = boto3.client("batch", region_name="us-east-1", endpoint_url=server.endpoint)
        arn = fairshare_queue(Cluster(model, clock, client, None, None), WEIGHTS)
        yield SharesBatchUnderTest(BatchPolicyAdapter(client), arn)
    finally:
        server.stop()


def test_the_queue_names_its_policy_and_the_policy_reads_as_batch_describes_it(
    under_test: SharesBatchUnderTest,
) -> None:
    batch = under_test.batch
    assert batch.scheduling_policy_of(QUEUE) == under_test.policy_arn
    policy = batch.describe_scheduling_policy(under_test.policy_arn)
    assert policy.arn == under_test.policy_arn and policy.name == "search-gpu-fss-policy"
    assert (policy.share_decay_seconds, policy.compute_reservation) == (3600, 0)
    assert policy.weights == (ShareWeight("ProdExp1", 1.0), ShareWeight("ProdExp2", 1.5))


def test_an_update_is_read_back_with_the_new_weights_in_order(under_test: SharesBatchUnderTest) -> None:
    batch = under_test.batch
    batch.update_scheduling_policy(
        SchedulingPolicyUpdate(
            arn=under_test.policy_arn,
            share_decay_seconds=1800,
            compute_reservation=10,
            weights=(ShareWeight("ProdExp2", 0.5), ShareWeight("ProdExp1", 2.0)),
        )
    )
    policy = batch.describe_scheduling_policy(under_test.policy_arn)
    assert (policy.share_decay_seconds, policy.compute_reservation) == (1800, 10)
    assert policy.weights == (ShareWeight("ProdExp2", 0.5), ShareWeight("ProdExp1", 2.0))


def test_the_capacity_is_what_the_queues_service_environments_may_run(
    under_test: SharesBatchUnderTest,
) -> None:
    assert under_test.batch.queue_capacity(QUEUE) == 100
