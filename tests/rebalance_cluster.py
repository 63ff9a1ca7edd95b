"""A gpusim cluster behind HTTP on a hand-driven clock, with its events recorded into moto DynamoDB."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import boto3
from gpusim import BatchModel, ModelOptions, RealtimeEngine, Timings
from gpusim.server import GpuSimServer
from shareplane.adapters.batch_policy import BatchPolicyAdapter
from shareplane.adapters.dynamodb_store import DynamoJobStore
from shareplane.adapters.share_store import DynamoShareStore
from shareplane.domain.config.shares import SharesConfig
from shareplane.schemas import parse_state_event
from shareplane.service.rebalance_shares import RebalanceSettings, rebalance_shares
from shareplane.service.record_state import record_observation

from tests.fakes.metrics import FakeMetrics

P4D = "ml.p4d.24xlarge"
QUEUE = "search-p4d-queue"
FAST = Timings(scheduled_to_starting=10, starting_to_running=20, capacity_error_after=30, failure_after=40)


class NullSink:
    """Job metrics are not what these tests look at."""

    def emit(self, *_: Any) -> None:
        return None


@dataclass
class Cluster:
    """gpusim on a hand-driven clock behind HTTP, a boto3 Batch client, and the tables on moto."""

    model: BatchModel
    clock: list[float]
    batch: Any
    shares: DynamoShareStore
    config: SharesConfig

    def advance(self, seconds: float) -> None:
        self.clock[0] += seconds
        self.model.sync()

    @property
    def now(self) -> float:
        return self.model.ms() / 1000

    def submit(self, name: str, count: int, priority: int = 50, **share: str) -> None:
        payload = {
            "TrainingJobName": name,
            "AlgorithmSpecification": {
                "TrainingImage": "111122223333.dkr.ecr.us-east-1.amazonaws.com/prodexp1/t:1",
                "TrainingInputMode": "File",
            },
            "RoleArn": "arn:aws:iam::111122223333:role/shareplane-search-ProdExp1-training",
            "OutputDataConfig": {"S3OutputPath": "s3://search-ml-training/prodexp1/"},
            "ResourceConfig": {"InstanceType": P4D, "InstanceCount": count, "VolumeSizeInGB": 100},
            "StoppingCondition": {"MaxRuntimeInSeconds": 864000},
        }
        self.batch.submit_service_job(
            jobName=name,
            jobQueue=QUEUE,
            serviceJobType="SAGEMAKER_TRAINING",
            serviceRequestPayload=json.dumps(payload),
            schedulingPriority=priority,
            tags={"gpusim:duration-seconds": "86400"},
            **share,
        )

    def rebalance(self, tick: str, settings: RebalanceSettings) -> Any:
        return rebalance_shares(
            tick, self.now, self.config, settings, BatchPolicyAdapter(self.batch), self.shares, FakeMetrics()
        )


def fairshare_queue(cluster: Cluster, weights: dict[str, float]) -> str:
    """The template's GPU queue: 100 p4d instances counted as NUM_INSTANCES, a fair-share policy."""
    cluster.batch.create_service_environment(
        serviceEnvironmentName="search-p4d-fss",
        serviceEnvironmentType="SAGEMAKER_TRAINING",
        capacityLimits=[{"maxCapacity": 100, "capacityUnit": "NUM_INSTANCES"}],
    )
    arn = cluster.batch.create_scheduling_policy(
        name="search-gpu-fss-policy",
        fairsharePolicy={
            "shareDecaySeconds": 3600,
            "computeReservation": 0,
            "shareDistribution": [{"shareIdentifier": s, "weightFactor": w} for s, w in weights.items()],
        },
    )["arn"]
    cluster.batch.create_job_queue(
        jobQueueName=QUEUE,
        jobQueueType="SAGEMAKER_TRAINING",
        priority=1,
        schedulingPolicyArn=arn,
        serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": "search-p4d-fss"}],
    )
    return arn


def borrowed_fairshare_queue(cluster: Cluster) -> str:
    """The blog's fair-share queue with equal weights, where ProdExp1 took 80 of 100 instances before
    ProdExp2 (entitled to 40) arrived with 50 instances of HIGHPRI work; returns the policy ARN."""
    arn = fairshare_queue(cluster, {"ProdExp1": 1.0, "ProdExp2": 1.0})
    for i in range(8):
        cluster.submit(f"p1-{i}", 10, shareIdentifier="ProdExp1")
    cluster.advance(120)
    for i in range(5):
        cluster.submit(f"p2-{i}", 10, priority=90, shareIdentifier="ProdExp2")
    cluster.advance(120)
    return arn


def quota_queue(cluster: Cluster) -> dict[str, str]:
    """A quota-share queue over 100 p4d instances: ProdExp1 60 and ProdExp2 40, borrowing unlimited."""
    cluster.batch.create_service_environment(
        serviceEnvironmentName="search-p4d-quota",
        serviceEnvironmentType="SAGEMAKER_TRAINING",
        capacityLimits=[{"maxCapacity": 100, "capacityUnit": P4D}],
    )
    arn = cluster.batch.create_scheduling_policy(
        name="search-gpu-quota-policy", quotaSharePolicy={"idleResourceAssignmentStrategy": "FIFO"}
    )["arn"]
    cluster.batch.create_job_queue(
        jobQueueName=QUEUE,
        jobQueueType="SAGEMAKER_TRAINING",
        priority=1,
        schedulingPolicyArn=arn,
        serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": "search-p4d-quota"}],
    )
    arns = {}
    for name, limit in (("ProdExp1", 60), ("ProdExp2", 40)):
        arns[name] = cluster.batch.create_quota_share(
            quotaShareName=name,
            jobQueue=QUEUE,
            capacityLimits=[{"maxCapacity": limit, "capacityUnit": P4D}],
            resourceSharingConfiguration={"strategy": "LEND_AND_BORROW", "borrowLimit": -1},
            preemptionConfiguration={"inSharePreemption": "DISABLED"},
        )["quotaShareArn"]
    return arns


def weights(cluster: Cluster, arn: str) -> dict[str, float]:
    policy = cluster.batch.describe_scheduling_policies(arns=[arn])["schedulingPolicies"][0]
    return {e["shareIdentifier"]: e["weightFactor"] for e in policy["fairsharePolicy"]["shareDistribution"]}


def start_cluster(
    config: SharesConfig, dynamodb: Any, table: str
) -> tuple[Cluster, GpuSimServer, list[float]]:
    """gpusim on a clock that moves only with ``Cluster.advance``, served over HTTP, recorded to ``table``."""
    clock = [0.0]
    model = BatchModel(engine=RealtimeEngine(wall_clock=lambda: clock[0]), options=ModelOptions(timings=FAST))
    jobs = DynamoJobStore(dynamodb, table)
    # Every Batch and SageMaker event the emulator emits is recorded as record_state would.
    model.subscribe(lambda event: record_observation(parse_state_event(event), jobs, NullSink(), config))
    server = GpuSimServer(model).start()
    batch = boto3.client("batch", region_name="us-east-1", endpoint_url=server.endpoint)
    return Cluster(model, clock, batch, DynamoShareStore(dynamodb, table), config), server, clock
