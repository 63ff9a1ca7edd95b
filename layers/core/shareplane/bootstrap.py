"""Composition root: reads the environment and builds clients once per cold start.

The only module that reads ``os.environ``. Locally the same code runs against the embedded AWS,
reached through the standard ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_<SERVICE>`` variables that
boto3 honours on its own: there is no local-mode branch.

Importing this module costs only what record_state (the busiest handler) needs: the job store, the
metrics sink and the shares config. Every other adapter, and the service types its accessors build,
is imported inside the accessor that uses it, so a handler pays at cold start only for its own.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

from .adapters.dynamodb_store import DynamoJobStore
from .adapters.emf_metrics import EmfMetricsSink
from .domain.config import SharesConfig
from .domain.errors import ConfigError
from .service.permission_denied import PermissionAlerts, guard

if TYPE_CHECKING:
    from mypy_boto3_batch import BatchClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sagemaker import SageMakerClient
    from mypy_boto3_scheduler import EventBridgeSchedulerClient
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sqs import SQSClient

    from .adapters.batch_policy import BatchPolicyAdapter
    from .adapters.batch_service_jobs import BatchServiceJobs
    from .adapters.s3_spec_bucket import S3SpecBucket
    from .adapters.share_store import DynamoShareStore
    from .adapters.sns_alerts import SnsAlerts
    from .adapters.upload_attributions import DynamoUploadAttributions
    from .service.handle_failure import FailurePorts
    from .service.rebalance_shares import RebalanceSettings
    from .service.reclaim_capacity import ReclaimPorts
    from .service.submit_job import QueueNames

#: Standard retry mode: throttling and 5xx are retried with backoff before a record fails back to SQS.
_BOTO_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=20)


@dataclass(frozen=True)
class Dependencies:
    """Everything a handler needs, built once: the shared core now, each use case's adapters on first use."""

    session: boto3.session.Session
    dynamodb: DynamoDBClient = field(repr=False, compare=False)
    store: DynamoJobStore
    metrics: EmfMetricsSink
    config: SharesConfig | None

    # One boto3 client per service for this cold start (clients are thread-safe and costly to build),
    # each typed by its service so mypy checks every call an adapter makes.
    @cached_property
    def batch(self) -> BatchClient:
        return self.session.client("batch", config=_BOTO_CONFIG)

    @cached_property
    def s3(self) -> S3Client:
        return self.session.client("s3", config=_BOTO_CONFIG)

    @cached_property
    def sagemaker(self) -> SageMakerClient:
        return self.session.client("sagemaker", config=_BOTO_CONFIG)

    @cached_property
    def scheduler(self) -> EventBridgeSchedulerClient:
        return self.session.client("scheduler", config=_BOTO_CONFIG)

    @cached_property
    def sns(self) -> SNSClient:
        return self.session.client("sns", config=_BOTO_CONFIG)

    @cached_property
    def sqs(self) -> SQSClient:
        return self.session.client("sqs", config=_BOTO_CONFIG)

    def require_config(self) -> SharesConfig:
        """The shares config; ConfigError when the function was deployed without one."""
        if self.config is None:
            raise ConfigError("SHAREPLANE_CONFIG", "is not set", "pass the shares config to the function")
        return self.config

    # -- shared by the submit and failure paths ------------------------------------------------
    @cached_property
    def batch_jobs(self) -> BatchServiceJobs:
        """AWS Batch service jobs: submit, describe, list, reprioritize, terminate."""
        from .adapters.batch_service_jobs import BatchServiceJobs

        return BatchServiceJobs(self.batch)

    @cached_property
    def alerts(self) -> SnsAlerts:
        """The alerts topic (ALERTS_TOPIC_ARN)."""
        from .adapters.sns_alerts import SnsAlerts

        return SnsAlerts(self.sns, os.environ["ALERTS_TOPIC_ARN"])

    # -- submit path (submit_job) -----------------------------------------------------------------
    @cached_property
    def spec_bucket(self) -> S3SpecBucket:
        """The drop bucket (S3)."""
        from .adapters.s3_spec_bucket import S3SpecBucket

        return S3SpecBucket(self.s3)

    @cached_property
    def upload_attributions(self) -> DynamoUploadAttributions:
        """The join of uploads' principals (CloudTrail) to their jobs, in the jobs table."""
        from .adapters.upload_attributions import DynamoUploadAttributions

        return DynamoUploadAttributions(self.dynamodb, os.environ["TABLE_NAME"])

    @cached_property
    def submit_queues(self) -> QueueNames:
        """The deployed GPU and CPU queues (GPU_JOB_QUEUE, CPU_JOB_QUEUE) that config queue names map to."""
        from .service.submit_job import QueueNames

        return QueueNames(
            gpu=os.environ.get("GPU_JOB_QUEUE") or None, cpu=os.environ.get("CPU_JOB_QUEUE") or None
        )

    # -- share rebalancer (rebalance_shares, `shareplane shares`) --------------------------------
    @cached_property
    def batch_policy(self) -> BatchPolicyAdapter:
        """AWS Batch scheduling policies, quota shares and queue snapshots."""
        from .adapters.batch_policy import BatchPolicyAdapter

        return BatchPolicyAdapter(self.batch)

    @cached_property
    def share_store(self) -> DynamoShareStore:
        """The rebalancer's state and audit items in the jobs table."""
        from .adapters.share_store import DynamoShareStore

        return DynamoShareStore(self.dynamodb, os.environ["TABLE_NAME"])

    @cached_property
    def rebalance_settings(self) -> RebalanceSettings:
        """The GPU queue to rebalance (GPU_JOB_QUEUE, else the config's) and REBALANCE_DRY_RUN."""
        from .service.rebalance_shares import RebalanceSettings

        queue = os.environ.get("GPU_JOB_QUEUE") or (self.config.gpu_queue_name() if self.config else "")
        if not queue:
            raise ConfigError("GPU_JOB_QUEUE", "is empty and no shares config names the queue", "set either")
        return RebalanceSettings(
            job_queue=queue,
            dry_run=os.environ.get("REBALANCE_DRY_RUN", "false").strip().lower() in ("1", "true", "yes"),
        )

    # -- failure path (handle_failure, watch_jobs) -----------------------------------------------
    @cached_property
    def failure_ports(self) -> FailurePorts:
        """The failure path's ports (Batch, SageMaker, SNS, its queue, Scheduler, its ledger)."""
        from .adapters.failure_ledger import DynamoFailureLedger
        from .adapters.requeue_timer import QueueRequeueTimer
        from .adapters.sagemaker_training import SageMakerTrainingJobs
        from .service.handle_failure import FailurePorts

        config = self.require_config()
        return FailurePorts(
            store=self.store,
            ledger=DynamoFailureLedger(self.dynamodb, os.environ["TABLE_NAME"]),
            batch=self.batch_jobs,
            training=SageMakerTrainingJobs(self.sagemaker),
            alerts=self.alerts,
            timer=QueueRequeueTimer(
                self.sqs,
                self.scheduler,
                os.environ["FAILURE_QUEUE_URL"],
                os.environ.get("SCHEDULER_ROLE_ARN"),
            ),
            metrics=self.metrics,
            config=config,
            region=self.session.region_name or "us-east-1",
            clock=time.time,  # only where no event dates a decision (see FailurePorts.clock)
            gpu_queue=(os.environ.get("GPU_JOB_QUEUE") or "").rsplit("/", 1)[-1],
        )

    # -- checkpoint-aware reclaim (reclaim_capacity) --------------------------------------------
    @cached_property
    def reclaim_ports(self) -> ReclaimPorts:
        """Reclaim's ports: Batch, S3 checkpoints, its ledger, SNS, its own queue (delayed re-checks)."""
        from .adapters.reclaim_ledger import DynamoReclaimLedger
        from .adapters.requeue_timer import QueueRequeueTimer
        from .adapters.s3_checkpoints import S3Checkpoints
        from .service.reclaim_capacity import ReclaimPorts, ReclaimSettings

        config = self.require_config()
        return ReclaimPorts(
            batch=self.batch_jobs,
            checkpoints=S3Checkpoints(self.s3),
            ledger=DynamoReclaimLedger(self.dynamodb, os.environ["TABLE_NAME"]),
            alerts=self.alerts,
            # Re-checks wait at most 900 s (SQS's own delay), so no scheduler is needed.
            timer=QueueRequeueTimer(self.sqs, None, os.environ["RECLAIM_QUEUE_URL"], None),
            metrics=self.metrics,
            config=config,
            settings=ReclaimSettings(
                job_queue=os.environ.get("GPU_JOB_QUEUE") or config.gpu_queue_name(),
                enabled=_flag("RECLAIM_ENABLED", True),
                dry_run=_flag("RECLAIM_DRY_RUN", False),
            ),
            clock=time.time,  # only a manual run and the alert claim's lease read it
        )


def _flag(name: str, default: bool) -> bool:
    """A true/false environment variable (unset: ``default``)."""
    raw = os.environ.get(name)
    return default if raw is None or not raw.strip() else raw.strip().lower() in ("1", "true", "yes")


def load_config_from_env() -> SharesConfig | None:
    """The shares config the template passes as JSON in SHAREPLANE_CONFIG (None when unset)."""
    raw = os.environ.get("SHAREPLANE_CONFIG")
    return SharesConfig.model_validate(json.loads(raw)) if raw else None


@cache
def dependencies() -> Dependencies:
    """Build the dependencies on first use (not at import, so importing a handler is cheap and safe)."""
    session = boto3.session.Session()
    dynamodb = session.client("dynamodb", config=_BOTO_CONFIG)
    return Dependencies(
        session=session,
        dynamodb=dynamodb,
        store=DynamoJobStore(dynamodb, os.environ["TABLE_NAME"]),
        metrics=EmfMetricsSink(os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "shareplane")),
        config=load_config_from_env(),
    )


@cache
def reclaim_ports() -> ReclaimPorts:
    """Reclaim's ports, built on first use (see ``Dependencies.reclaim_ports``)."""
    return dependencies().reclaim_ports


@cache
def failure_ports() -> FailurePorts:
    """The failure path's ports, built on first use (see ``Dependencies.failure_ports``)."""
    return dependencies().failure_ports


@cache
def permission_alerts() -> PermissionAlerts:
    """Where a refused AWS call is reported: the alerts topic and the alert ledger of the jobs table."""

    def ledger() -> Any:
        from .adapters.failure_ledger import DynamoFailureLedger

        return DynamoFailureLedger(dependencies().dynamodb, os.environ["TABLE_NAME"])

    return PermissionAlerts(
        function=os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "shareplane"),
        alerts=lambda: dependencies().alerts,
        ledger=ledger,
        clock=time.time,
    )


#: Decorates every handler's record handler: AccessDenied from AWS is a configuration error, alerted once.
guard_permissions = guard(permission_alerts)
