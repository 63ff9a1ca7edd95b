"""Composition root: reads the environment and builds clients once per cold start.

The only module that reads ``os.environ``. Locally the same code runs against the embedded AWS,
reached through the standard ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_<SERVICE>`` variables that
boto3 honours on its own: there is no local-mode branch.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache, cached_property, partial

import boto3
from botocore.config import Config

from .adapters.batch_policy import BatchPolicyAdapter
from .adapters.batch_service_jobs import BatchServiceJobs
from .adapters.dynamodb_store import DynamoJobStore
from .adapters.emf_metrics import EmfMetricsSink
from .adapters.s3_spec_bucket import S3SpecBucket
from .adapters.share_store import DynamoShareStore
from .adapters.sns_alerts import SnsAlerts
from .domain.config import SharesConfig
from .domain.errors import ConfigError
from .service.handle_failure import FailurePorts
from .service.rebalance_shares import RebalanceSettings
from .service.submit_job import QueueNames

#: Standard retry mode: throttling and 5xx are retried with backoff before a record fails back to SQS.
_BOTO_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=20)


@dataclass(frozen=True)
class Dependencies:
    """Everything a handler needs, built once."""

    store: DynamoJobStore
    metrics: EmfMetricsSink
    config: SharesConfig | None

    # The submit path's adapters: built on first use, so other handlers never create their clients.
    @cached_property
    def _session(self) -> boto3.session.Session:
        return boto3.session.Session()

    @cached_property
    def spec_bucket(self) -> S3SpecBucket:
        """The drop bucket (S3)."""
        return S3SpecBucket(self._session.client("s3", config=_BOTO_CONFIG))

    @cached_property
    def batch_jobs(self) -> BatchServiceJobs:
        """AWS Batch service jobs."""
        return BatchServiceJobs(self._session.client("batch", config=_BOTO_CONFIG))

    @cached_property
    def alerts(self) -> SnsAlerts:
        """The alerts topic (ALERTS_TOPIC_ARN)."""
        return SnsAlerts(self._session.client("sns", config=_BOTO_CONFIG), os.environ["ALERTS_TOPIC_ARN"])

    @cached_property
    def submit_queues(self) -> QueueNames:
        """The deployed GPU and CPU queues (GPU_JOB_QUEUE, CPU_JOB_QUEUE) that config queue names map to."""
        return QueueNames(
            gpu=os.environ.get("GPU_JOB_QUEUE") or None, cpu=os.environ.get("CPU_JOB_QUEUE") or None
        )


    # The share rebalancer's adapters and settings (rebalance_shares, `shareplane shares`).
    @cached_property
    def batch_policy(self) -> BatchPolicyAdapter:
        """AWS Batch scheduling policies, quota shares and queue snapshots."""
        return BatchPolicyAdapter(self._session.client("batch", config=_BOTO_CONFIG))

    @cached_property
    def share_store(self) -> DynamoShareStore:
        """The rebalancer's state and audit items in the jobs table."""
        client = self._session.client("dynamodb", config=_BOTO_CONFIG)
        return DynamoShareStore(client, os.environ["TABLE_NAME"])

    @cached_property
    def rebalance_settings(self) -> RebalanceSettings:
        """The GPU queue to rebalance (GPU_JOB_QUEUE, else the config's) and REBALANCE_DRY_RUN."""
        queue = os.environ.get("GPU_JOB_QUEUE") or (self.config.gpu_queue_name() if self.config else "")
        if not queue:
            raise ConfigError("GPU_JOB_QUEUE", "is empty and no shares config names the queue", "set either")
        return RebalanceSettings(
            job_queue=queue,
            dry_run=os.environ.get("REBALANCE_DRY_RUN", "false").strip().lower() in ("1", "true", "yes"),
        )


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
        store=DynamoJobStore(dynamodb, os.environ["TABLE_NAME"]),
        metrics=EmfMetricsSink(os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "shareplane")),
        config=load_config_from_env(),
    )


@cache
def failure_ports() -> FailurePorts:
    """The failure path's ports (Batch, SageMaker, SNS, its queue, Scheduler), built on first use."""
    import time

    from .adapters.batch_jobs import BatchServiceJobsAdapter, SageMakerTrainingJobsAdapter
    from .adapters.failure_ledger import DynamoFailureLedger
    from .adapters.requeue_timer import QueueRequeueTimer

    base = dependencies()
    if base.config is None:
        raise ConfigError("SHAREPLANE_CONFIG", "is not set", "pass the shares config to the function")
    session = boto3.session.Session()
    client = partial(session.client, config=_BOTO_CONFIG)
    dynamodb = client("dynamodb")
    return FailurePorts(
        store=base.store,
        ledger=DynamoFailureLedger(dynamodb, os.environ["TABLE_NAME"]),
        batch=BatchServiceJobsAdapter(client("batch")),
        training=SageMakerTrainingJobsAdapter(client("sagemaker")),
        alerts=base.alerts,
        timer=QueueRequeueTimer(
            client("sqs"),
            client("scheduler"),
            os.environ["FAILURE_QUEUE_URL"],
            os.environ.get("SCHEDULER_ROLE_ARN"),
        ),
        metrics=base.metrics,
        config=base.config,
        region=session.region_name or "us-east-1",
        clock=time.time,
        gpu_queue=(os.environ.get("GPU_JOB_QUEUE") or "").rsplit("/", 1)[-1],
    )
