"""The failure path's world: its fakes wired into FailureWatchPorts, and the FAILED jobs and events its tests use."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from shareplane.domain.config.shares import SharesConfig
from shareplane.service.handle_failure import FailureWatchPorts

from tests.conftest import REPO
from tests.fakes.alert_ledger import FakeAlertLedger, FakeTickWatermarks, sender_of
from tests.fakes.alerts import FakeAlerts
from tests.fakes.clock import Clock, delivery_clock
from tests.fakes.failure_ledger import FakeFailureLedger
from tests.fakes.job_store import FakeJobStore
from tests.fakes.metrics import FakeMetrics
from tests.fakes.service_jobs import FakeServiceJobs
from tests.fakes.timer import FakeTimer
from tests.fakes.training import FakeTraining

QUEUE_ARN = "arn:aws:batch:us-east-1:123456789012:job-queue/search-p4d-queue"
TJ_PREFIX = "arn:aws:sagemaker:us-east-1:123456789012:training-job/AWSBatch"

PAYLOAD = {
    "TrainingJobName": "bert-large",
    "AlgorithmSpecification": {"TrainingImage": "img:1", "TrainingInputMode": "File"},
    "RoleArn": "arn:aws:iam::111122223333:role/shareplane-search-ProdExp1-training",
    "OutputDataConfig": {"S3OutputPath": "s3://search-ml-training/prodexp1/bert/"},
    "ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2, "VolumeSizeInGB": 100},
    "StoppingCondition": {"MaxRuntimeInSeconds": 86400, "MaxWaitTimeInSeconds": 172800},
    "EnableManagedSpotTraining": True,
    "CheckpointConfig": {
        "S3Uri": "s3://search-ml-training/prodexp1/bert/ckpt/",
        "LocalPath": "/opt/ml/checkpoints",
    },
}


def shares_config(**failures: Any) -> SharesConfig:
    """config/shares.yaml, with ``failures`` overrides."""
    data = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())
    data["failures"] = {**data.get("failures", {}), **failures}
    return SharesConfig.model_validate(data)


def failed_job(
    job_id: str = "job-1",
    *,
    reason: str = "Received status from SageMaker: InternalServerError: We encountered an internal error.",
    share: str = "ProdExp1",
    priority: int = 50,
    attempts: int = 1,
    tags: Mapping[str, str] | None = None,
    payload: Mapping[str, Any] = PAYLOAD,
    preempted: int = 0,
    terminated: bool = False,
) -> dict[str, Any]:
    """DescribeServiceJob of a FAILED job."""
    tj = f"{TJ_PREFIX}{job_id}{attempts:032d}"
    return {
        "jobArn": f"arn:aws:batch:us-east-1:123456789012:service-job/{job_id}",
        "jobId": job_id,
        "jobName": f"name-{job_id}",
        "jobQueue": QUEUE_ARN,
        "status": "FAILED",
        "statusReason": reason,
        "shareIdentifier": share,
        "schedulingPriority": priority,
        "serviceJobType": "SAGEMAKER_TRAINING",
        "createdAt": 1773720000000,
        "startedAt": 1773720100000,
        "stoppedAt": 1773720900000,
        "isTerminated": terminated,
        "attempts": [
            {"serviceResourceId": {"name": "TrainingJobArn", "value": tj}, "statusReason": reason}
            for _ in range(attempts)
        ],
        "latestAttempt": {"serviceResourceId": {"name": "TrainingJobArn", "value": tj}},
        "retryStrategy": {"attempts": attempts},
        "timeoutConfig": {"attemptDurationSeconds": 172800},
        "preemptionSummary": {"preemptedAttemptCount": preempted, "recentPreemptedAttempts": []},
        "serviceRequestPayload": json.dumps(payload),
        "tags": dict(tags or {"team": "ProdExp1"}),
    }


def failed_event(described: Mapping[str, Any]) -> dict[str, Any]:
    """The Batch Service Job State Change event of a described job (no payload, no tags)."""
    detail = {k: v for k, v in described.items() if k not in ("serviceRequestPayload", "tags")}
    return {
        "version": "0",
        "id": "e-1",
        "detail-type": "Batch Service Job State Change",
        "source": "aws.batch",
        "time": "2026-03-17T05:02:44Z",
        "region": "us-east-1",
        "resources": [described["jobArn"]],
        "detail": detail,
    }


@dataclass
class World:
    """Every fake, and the ports over them."""

    config: SharesConfig = field(default_factory=shares_config)
    batch: FakeServiceJobs = field(default_factory=FakeServiceJobs)
    training: FakeTraining = field(default_factory=FakeTraining)
    store: FakeJobStore = field(default_factory=FakeJobStore)
    ledger: FakeFailureLedger = field(default_factory=FakeFailureLedger)
    alerts: FakeAlerts = field(default_factory=FakeAlerts)
    alert_ledger: FakeAlertLedger = field(default_factory=FakeAlertLedger)
    ticks: FakeTickWatermarks = field(default_factory=FakeTickWatermarks)
    timer: FakeTimer = field(default_factory=FakeTimer)
    metrics: FakeMetrics = field(default_factory=FakeMetrics)
    clock: Clock = field(default_factory=delivery_clock)

    @property
    def ports(self) -> FailureWatchPorts:
        return FailureWatchPorts(
            store=self.store,
            ledger=self.ledger,
            batch=self.batch,
            training=self.training,
            sender=sender_of(self),
            timer=self.timer,
            metrics=self.metrics,
            config=self.config,
            region="us-east-1",
            clock=self.clock,
            ticks=self.ticks,
        )
