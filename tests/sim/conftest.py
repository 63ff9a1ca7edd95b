"""Shared builders for the simulator tests: a model with its API and an event log."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from gpusim import BatchApi, BatchModel, ModelOptions, SageMakerApi, Timings

P5 = "ml.p5.48xlarge"
G5 = "ml.g5.xlarge"


def payload(name: str = "train", count: int = 1, instance_type: str = P5, **extra: Any) -> str:
    """A minimal valid CreateTrainingJob request as SubmitServiceJob takes it."""
    body = {
        "TrainingJobName": name,
        "AlgorithmSpecification": {
            "TrainingImage": "123456789012.dkr.ecr.us-east-1.amazonaws.com/t:1",
            "TrainingInputMode": "File",
        },
        "RoleArn": "arn:aws:iam::123456789012:role/SMTrainingRole",
        "OutputDataConfig": {"S3OutputPath": "s3://artifacts/"},
        "ResourceConfig": {"InstanceType": instance_type, "InstanceCount": count, "VolumeSizeInGB": 100},
        "StoppingCondition": {"MaxRuntimeInSeconds": 864000},
        **extra,
    }
    return json.dumps(body)


@dataclass
class Sim:
    """A model, its Batch and SageMaker facades, and every event it delivered."""

    model: BatchModel
    batch: BatchApi
    sagemaker: SageMakerApi
    events: list[dict[str, Any]] = field(default_factory=list)

    def env(self, name: str = "se", limits: dict[str, int] | None = None) -> str:
        """Create a service environment (NUM_INSTANCES 4 unless told)."""
        limits = limits or {"NUM_INSTANCES": 4}
        self.batch.create_service_environment(
            serviceEnvironmentName=name,
            serviceEnvironmentType="SAGEMAKER_TRAINING",
            capacityLimits=[{"maxCapacity": m, "capacityUnit": u} for u, m in limits.items()],
        )
        return name

    def queue(self, name: str = "q", env: str = "se", priority: int = 1, **extra: Any) -> str:
        """Create a SAGEMAKER_TRAINING queue over one environment."""
        self.batch.create_job_queue(
            jobQueueName=name,
            jobQueueType="SAGEMAKER_TRAINING",
            priority=priority,
            serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": env}],
            **extra,
        )
        return name

    def fair_queue(
        self, name: str = "q", env: str = "se", weights: dict[str, float] | None = None, **policy: Any
    ) -> str:
        """A fair-share policy and a queue using it."""
        body = {"shareDecaySeconds": 3600, **policy}
        body["shareDistribution"] = [
            {"shareIdentifier": s, "weightFactor": w} for s, w in (weights or {}).items()
        ]
        arn = self.batch.create_scheduling_policy(name=f"{name}-sp", fairsharePolicy=body)["arn"]
        return self.queue(name, env, schedulingPolicyArn=arn)

    def submit(
        self, name: str, queue: str = "q", count: int = 1, duration: float = 1000, **extra: Any
    ) -> str:
        """Submit a job whose training lasts ``duration`` seconds; returns its id."""
        instance_type = extra.pop("instance_type", P5)
        tags = {"gpusim:duration-seconds": str(duration), **extra.pop("tags", {})}
        return self.batch.submit_service_job(
            jobName=name,
            jobQueue=queue,
            serviceJobType="SAGEMAKER_TRAINING",
            serviceRequestPayload=payload(name, count, instance_type),
            tags=tags,
            **extra,
        )["jobId"]

    def job(self, job_id: str) -> dict[str, Any]:
        """DescribeServiceJob."""
        return self.batch.describe_service_job(jobId=job_id)

    def status(self, job_id: str) -> str:
        """The job's status now."""
        return self.job(job_id)["status"]

    def run(self, until: float | None = None) -> None:
        """Advance virtual time."""
        self.model.run(until)

    def batch_trace(self) -> list[tuple[str, str]]:
        """(jobName, status) of every Batch state-change event, in delivery order."""
        return [
            (e["detail"]["jobName"], e["detail"]["status"])
            for e in self.events
            if e["detail-type"] == "Batch Service Job State Change"
        ]


FAST = Timings(scheduled_to_starting=10, starting_to_running=20, capacity_error_after=30, failure_after=40)


@pytest.fixture
def make_sim() -> Callable[..., Sim]:
    """Build a ``Sim`` with fast SageMaker phases unless other options are given."""

    def build(**options: Any) -> Sim:
        options.setdefault("timings", FAST)
        model = BatchModel(options=ModelOptions(**options))
        sim = Sim(model, BatchApi(model), SageMakerApi(model))
        model.subscribe(sim.events.append)
        return sim

    return build
