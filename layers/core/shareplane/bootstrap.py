"""Composition root: builds every adapter and each use case's ports from one environment.

The only module that reads ``os.environ``. ``Root`` takes the environment as a mapping and any part
by name as an override, so a test hands it fakes, the local runner hands it a function's template
environment, and the CLI hands it the account its options name (profile, region, endpoint, table).
Locally the same code runs against the embedded AWS, reached through the standard ``AWS_ENDPOINT_URL``
/ ``AWS_ENDPOINT_URL_<SERVICE>`` variables that boto3 honours on its own: there is no local-mode branch.

Importing this module costs only what record_state (the busiest handler) needs: the job store, the
metrics sink and the shares config (read from its SSM parameter on first use). Every other adapter,
and the service types its parts build, is imported inside the part that uses it, so a handler pays
at cold start only for its own path.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.utils import parse_timestamp

from .adapters.aws_errors import permission_denied
from .adapters.dynamodb_store import DynamoJobStore
from .adapters.emf_metrics import EmfMetricsSink
from .adapters.ssm_shares_config import PARAMETER_SETTING, read_shares_config
from .domain.config.shares import SharesConfig
from .domain.errors import ConfigError
from .domain.jobs.arns import arn_tail
from .service.permission_denied import PermissionAlerts, guard

if TYPE_CHECKING:
    from mypy_boto3_batch import BatchClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sagemaker import SageMakerClient
    from mypy_boto3_scheduler import EventBridgeSchedulerClient
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_ssm import SSMClient

    from .adapters.alert_ledger import DynamoAlertLedger
    from .adapters.batch_policy import BatchPolicyAdapter
    from .adapters.batch_service_jobs import BatchServiceJobs
    from .adapters.cloudwatch_gpu_metrics import CloudWatchGpuMetrics
    from .adapters.failure_ledger import DynamoFailureLedger
    from .adapters.idle_ledger import DynamoIdleLedger
    from .adapters.reclaim_ledger import DynamoReclaimLedger
    from .adapters.s3_spec_bucket import S3SpecBucket
    from .adapters.share_store import DynamoShareStore
    from .adapters.sns_alerts import SnsAlerts
    from .adapters.tick_ledger import DynamoTickWatermarks
    from .adapters.upload_attributions import DynamoUploadAttributions
    from .service.alerting import AlertSender
    from .service.detect_idle import DetectIdlePorts
    from .service.handle_failure import FailureWatchPorts
    from .service.rebalance_shares import RebalancePorts, RebalanceSettings
    from .service.receipt_prediction import ReceiptForecast
    from .service.reclaim_capacity import ReclaimPorts
    from .service.record_state import RecordStatePorts
    from .service.record_uploader import UploaderPorts
    from .service.start_predictions import ForecastPorts
    from .service.submit_job import QueueNames, SubmitPorts


def utc_timestamp(value: Any) -> datetime:
    """A response's timestamp as botocore parses it, but dated in UTC instead of the local zone.

    botocore dates each one in dateutil's ``tzlocal``, whose conversion costs tens of microseconds a
    stamp: a detect-idle run reads two metrics a minute for an hour of every GPU host, and spent half
    its time there. The instant is the same; only the zone it is written in differs.
    """
    if isinstance(value, int | float):  # the JSON protocols' epoch seconds
        return datetime.fromtimestamp(value, UTC)
    return parse_timestamp(value)  # ISO 8601 and RFC 822 strings, as botocore reads them


#: Standard retry mode: throttling and 5xx are retried with backoff before a record fails back to SQS.
_BOTO_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=20)


class Root:
    """Everything the handlers and the CLI need, each part built on first use and kept.

    ``environ`` holds the deployment's settings (TABLE_NAME, SHAREPLANE_CONFIG_PARAMETER, queue URLs,
    switches).
    Any part below may be passed by name instead of built (``Root(env, failure_ports=fakes)``,
    ``Root(env, session=boto3.session.Session(profile_name=...), table_name="jobs")``); an unknown
    name is a TypeError naming the parts there are. ``endpoint_url`` reaches every service at one
    endpoint unless its own ``AWS_ENDPOINT_URL_<SERVICE>`` says otherwise, as the aws CLI's
    ``--endpoint-url`` does; without it boto3 resolves endpoints itself.
    """

    def __init__(
        self, environ: Mapping[str, str], *, endpoint_url: str | None = None, **parts: object
    ) -> None:
        unknown = sorted(set(parts) - _PARTS)
        if unknown:
            raise TypeError(f"Root has no part {unknown}: pass one of {sorted(_PARTS)}")
        self.environ = environ
        self.endpoint_url = endpoint_url
        # A cached_property finds its value in the instance dict and builds nothing: an override is
        # the part itself, from the start.
        self.__dict__.update(parts)

    @classmethod
    def from_environment(cls, *, endpoint_url: str | None = None, **parts: object) -> Root:
        """The root of this process's environment (a Lambda function's, or the shell's for the CLI)."""
        return cls(os.environ, endpoint_url=endpoint_url, **parts)

    # -- settings read from the environment --------------------------------------------------------
    def flag(self, name: str, default: bool) -> bool:
        """A true/false setting (unset: ``default``)."""
        raw = self.environ.get(name)
        return default if raw is None or not raw.strip() else raw.strip().lower() in ("1", "true", "yes")

    def number(self, name: str, default: int) -> int:
        """A whole-number setting (unset or empty: ``default``); ConfigError naming it when not a number."""
        raw = (self.environ.get(name) or "").strip()
        if not raw:
            return default
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(name, f"is {raw!r}", "set a whole number") from None

    @cached_property
    def table_name(self) -> str:
        """The jobs table (TABLE_NAME): jobs, their history, the ledgers and the rebalancer's items."""
        return self.environ["TABLE_NAME"]

    @cached_property
    def config(self) -> SharesConfig | None:
        """The shares config, read on first use from the SSM parameter SHAREPLANE_CONFIG_PARAMETER names
        (the template's SharesConfigParameter; None when the setting is unset)."""
        name = self.environ.get(PARAMETER_SETTING)
        return read_shares_config(self.ssm, name) if name else None

    def require_config(self) -> SharesConfig:
        """The shares config; ConfigError when the function was deployed without one."""
        if self.config is None:
            raise ConfigError(
                PARAMETER_SETTING, "is not set", "deploy the stack: its SharesConfigParameter holds it"
            )
        return self.config

    @cached_property
    def clock(self) -> Callable[[], float]:
        """The cluster's clock (epoch s): AWS's, the wall clock here, unless the runner passes its own
        (the local stack's emulator). Read where no event dates a decision (FailureWatchPorts.clock) and
        where a handler dates what it writes (submit_job's receipts, record_uploader's join items)."""
        return time.time

    @cached_property
    def function_name(self) -> str:
        """Which function this is (named in permission alerts)."""
        return self.environ.get("AWS_LAMBDA_FUNCTION_NAME", "shareplane")

    # -- boto3: one session, one client per service ------------------------------------------------
    @cached_property
    def session(self) -> boto3.session.Session:
        """The boto3 session (credentials and region as boto3 finds them; the CLI passes its own)."""
        return boto3.session.Session()

    def endpoint_for(self, service: str) -> str | None:
        """The endpoint of a service when ``endpoint_url`` was given (see the class); else boto3's own."""
        if self.endpoint_url is None:
            return None
        return self.environ.get(f"AWS_ENDPOINT_URL_{service.upper()}") or self.endpoint_url

    @property
    def _clients(self) -> boto3.session.Session:
        """The session, its clients' response timestamps parsed in UTC (``utc_timestamp``)."""
        # The parser defaults belong to the session's factory, which each client asks per response.
        botocore_session: Any = self.session._session
        parsers = botocore_session.get_component("response_parser_factory")
        parsers.set_parser_defaults(timestamp_parser=utc_timestamp)
        return self.session

    def client(self, service: str) -> Any:
        """A new client of any service by name (the CLI's CloudFormation, say), untyped."""
        session: Any = self._clients  # the stubs type clients per literal service name only
        return session.client(service, endpoint_url=self.endpoint_for(service), config=_BOTO_CONFIG)

    # One client per service for this root (clients are thread-safe and costly to build), each typed
    # by its service so mypy checks every call an adapter makes.
    @cached_property
    def dynamodb(self) -> DynamoDBClient:
        return self._clients.client(
            "dynamodb", endpoint_url=self.endpoint_for("dynamodb"), config=_BOTO_CONFIG
        )

    @cached_property
    def batch(self) -> BatchClient:
        return self._clients.client("batch", endpoint_url=self.endpoint_for("batch"), config=_BOTO_CONFIG)

    @cached_property
    def s3(self) -> S3Client:
        return self._clients.client("s3", endpoint_url=self.endpoint_for("s3"), config=_BOTO_CONFIG)

    @cached_property
    def sagemaker(self) -> SageMakerClient:
        return self._clients.client(
            "sagemaker", endpoint_url=self.endpoint_for("sagemaker"), config=_BOTO_CONFIG
        )

    @cached_property
    def scheduler(self) -> EventBridgeSchedulerClient:
        return self._clients.client(
            "scheduler", endpoint_url=self.endpoint_for("scheduler"), config=_BOTO_CONFIG
        )

    @cached_property
    def cloudwatch(self) -> CloudWatchClient:
        return self._clients.client(
            "cloudwatch", endpoint_url=self.endpoint_for("cloudwatch"), config=_BOTO_CONFIG
        )

    @cached_property
    def ssm(self) -> SSMClient:
        return self._clients.client("ssm", endpoint_url=self.endpoint_for("ssm"), config=_BOTO_CONFIG)

    @cached_property
    def sns(self) -> SNSClient:
        return self._clients.client("sns", endpoint_url=self.endpoint_for("sns"), config=_BOTO_CONFIG)

    @cached_property
    def sqs(self) -> SQSClient:
        return self._clients.client("sqs", endpoint_url=self.endpoint_for("sqs"), config=_BOTO_CONFIG)

    # -- adapters shared by several paths --------------------------------------------------------
    @cached_property
    def store(self) -> DynamoJobStore:
        """Jobs, their history and submitted payloads, in the jobs table."""
        return DynamoJobStore(self.dynamodb, self.table_name)

    @cached_property
    def metrics(self) -> EmfMetricsSink:
        """EMF metrics (POWERTOOLS_METRICS_NAMESPACE)."""
        return EmfMetricsSink(self.environ.get("POWERTOOLS_METRICS_NAMESPACE", "shareplane"))

    @cached_property
    def batch_jobs(self) -> BatchServiceJobs:
        """AWS Batch service jobs: submit, describe, list, reprioritize, terminate."""
        from .adapters.batch_service_jobs import BatchServiceJobs

        return BatchServiceJobs(self.batch)

    @cached_property
    def alerts(self) -> SnsAlerts:
        """The alerts topic (ALERTS_TOPIC_ARN)."""
        from .adapters.sns_alerts import SnsAlerts

        return SnsAlerts(self.sns, self.environ["ALERTS_TOPIC_ARN"])

    @cached_property
    def alert_ledger(self) -> DynamoAlertLedger:
        """Every alert's dedupe item and the listing of those sent, in the jobs table."""
        from .adapters.alert_ledger import DynamoAlertLedger

        return DynamoAlertLedger(self.dynamodb, self.table_name)

    @cached_property
    def alert_sender(self) -> AlertSender:
        """The one sender of alerts: the alert ledger, the alerts topic, the Alerts metric."""
        from .service.alerting import AlertSender

        return AlertSender(
            ledger=self.alert_ledger,
            topic=self.alerts,
            metrics=self.metrics,
            config=self.require_config(),
            clock=self.clock,  # only the lease of an unconfirmed claim
        )

    @cached_property
    def tick_watermarks(self) -> DynamoTickWatermarks:
        """The watch's and reclaim's tick watermarks, in the jobs table."""
        from .adapters.tick_ledger import DynamoTickWatermarks

        return DynamoTickWatermarks(self.dynamodb, self.table_name)

    @cached_property
    def failure_ledger(self) -> DynamoFailureLedger:
        """Failure decisions, their history notes and the storm guard's failures, in the jobs table."""
        from .adapters.failure_ledger import DynamoFailureLedger

        return DynamoFailureLedger(self.dynamodb, self.table_name)

    @cached_property
    def reclaim_ledger(self) -> DynamoReclaimLedger:
        """Reclaim decisions, victims and budget counters, in the jobs table."""
        from .adapters.reclaim_ledger import DynamoReclaimLedger

        return DynamoReclaimLedger(self.dynamodb, self.table_name)

    @cached_property
    def permission_alerts(self) -> PermissionAlerts:
        """Where a refused AWS call is reported: the alerts topic and the alert ledger of the jobs table."""
        return PermissionAlerts(
            function=self.function_name,
            # Built only when a refusal is reported: never on a handler's normal path.
            alerts=lambda: self.alerts,
            ledger=lambda: self.alert_ledger,
            clock=self.clock,
        )

    # -- record_state ----------------------------------------------------------------------------
    @cached_property
    def record_state_ports(self) -> RecordStatePorts:
        """What recording a state change talks to: the job store, metrics, the shares config (if any)."""
        from .service.record_state import RecordStatePorts

        return RecordStatePorts(store=self.store, metrics=self.metrics, config=self.config)

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

        return DynamoUploadAttributions(self.dynamodb, self.table_name)

    @cached_property
    def submit_queues(self) -> QueueNames:
        """The deployed GPU and CPU queues (GPU_JOB_QUEUE, CPU_JOB_QUEUE) that config queue names map to."""
        from .service.submit_job import QueueNames

        return QueueNames(
            gpu=self.environ.get("GPU_JOB_QUEUE") or None, cpu=self.environ.get("CPU_JOB_QUEUE") or None
        )

    @cached_property
    def submit_ports(self) -> SubmitPorts:
        """The submit path's ports: drop bucket, Batch, jobs table, metrics, alert sender, config."""
        from .service.submit_job import SubmitPorts

        config = self.require_config()
        return SubmitPorts(
            bucket=self.spec_bucket,
            batch=self.batch_jobs,
            store=self.store,  # job states and the payloads they were submitted with
            metrics=self.metrics,
            sender=self.alert_sender,  # a rejected drop's alert, listed with every other alert
            attributions=self.upload_attributions,
            config=config,
            queues=self.submit_queues,
            forecast=self.receipt_forecast,
        )

    @cached_property
    def receipt_forecast(self) -> ReceiptForecast | None:
        """The receipt's first prediction: the watch's forecast ports, in RECEIPT_FORECAST_SECONDS per
        drop (unset or 0: no forecast at submission; the receipt points to the watch's next tick)."""
        seconds = self.number("RECEIPT_FORECAST_SECONDS", 0)
        if seconds <= 0:
            return None
        from .service.receipt_prediction import ReceiptForecast

        return ReceiptForecast(twin=self.forecast_ports, clock=time.monotonic, budget_seconds=float(seconds))

    # -- uploader attribution (record_uploader) ----------------------------------------------------
    @cached_property
    def uploader_ports(self) -> UploaderPorts:
        """The attribution path's ports: the upload join, the alert sender, the shares config."""
        from .service.record_uploader import UploaderPorts

        config = self.require_config()
        return UploaderPorts(attributions=self.upload_attributions, sender=self.alert_sender, config=config)

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

        return DynamoShareStore(self.dynamodb, self.table_name)

    @cached_property
    def rebalance_settings(self) -> RebalanceSettings:
        """The GPU queue to rebalance (GPU_JOB_QUEUE, else the config's) and REBALANCE_DRY_RUN."""
        from .service.rebalance_shares import RebalanceSettings

        queue = self.environ.get("GPU_JOB_QUEUE") or (self.config.gpu_queue_name() if self.config else "")
        if not queue:
            raise ConfigError("GPU_JOB_QUEUE", "is empty and no shares config names the queue", "set either")
        dry_run = self.environ.get("REBALANCE_DRY_RUN", "false").strip().lower() in ("1", "true", "yes")
        return RebalanceSettings(job_queue=queue, dry_run=dry_run)

    @cached_property
    def rebalance_ports(self) -> RebalancePorts:
        """The rebalancer's ports: Batch's policies, its state and audits, metrics, config, settings."""
        from .service.rebalance_shares import RebalancePorts

        return RebalancePorts(
            config=self.require_config(),
            settings=self.rebalance_settings,
            batch=self.batch_policy,
            store=self.share_store,
            metrics=self.metrics,
        )

    # -- failure path (handle_failure, watch_jobs) -----------------------------------------------
    @cached_property
    def failure_ports(self) -> FailureWatchPorts:
        """The failure path's ports (Batch, SageMaker, SNS, its queue, Scheduler, its ledger)."""
        from .adapters.requeue_timer import QueueRequeueTimer
        from .adapters.sagemaker_training import SageMakerTrainingJobs
        from .service.handle_failure import FailureWatchPorts

        config = self.require_config()
        return FailureWatchPorts(
            store=self.store,
            ledger=self.failure_ledger,
            batch=self.batch_jobs,
            training=SageMakerTrainingJobs(self.sagemaker),
            sender=self.alert_sender,
            timer=QueueRequeueTimer(
                self.sqs,
                self.scheduler,
                self.environ["FAILURE_QUEUE_URL"],
                self.environ.get("SCHEDULER_ROLE_ARN"),
            ),
            metrics=self.metrics,
            config=config,
            region=self.session.region_name or "us-east-1",
            clock=self.clock,  # only where no event dates a decision (see FailureWatchPorts.clock)
            ticks=self.tick_watermarks,
            gpu_queue=arn_tail(self.environ.get("GPU_JOB_QUEUE") or ""),
        )

    @property
    def watch_ports(self) -> FailureWatchPorts:
        """The watch's ports: the failure path's (it escalates, reconciles and alerts through them)."""
        return self.failure_ports

    @cached_property
    def forecast_ports(self) -> ForecastPorts:
        """The watch's prediction step: the jobs table, Batch's queue settings, FORECAST_* limits."""
        from .service.start_predictions import ForecastLimits, ForecastPorts

        config = self.require_config()
        return ForecastPorts(
            store=self.store,
            recent=self.share_store,  # the ByStatus index's time range (finished jobs of the history)
            batch=self.batch_policy,
            config=config,
            queue=arn_tail(self.environ.get("GPU_JOB_QUEUE") or "") or config.gpu_queue_name(),
            limits=ForecastLimits(
                max_jobs=self.number("FORECAST_MAX_JOBS", ForecastLimits.max_jobs),
                samples=self.number("FORECAST_SAMPLES", ForecastLimits.samples),
                history_jobs=self.number("FORECAST_HISTORY_JOBS", ForecastLimits.history_jobs),
            ),
        )

    # -- checkpoint-aware reclaim (reclaim_capacity) --------------------------------------------
    @cached_property
    def reclaim_ports(self) -> ReclaimPorts:
        """Reclaim's ports: Batch, S3 checkpoints, its ledger, SNS, its own queue (delayed re-checks)."""
        from .adapters.requeue_timer import QueueRequeueTimer
        from .adapters.s3_checkpoints import S3Checkpoints
        from .service.reclaim_capacity import ReclaimPorts, ReclaimSettings

        config = self.require_config()
        return ReclaimPorts(
            batch=self.batch_jobs,
            checkpoints=S3Checkpoints(self.s3),
            ledger=self.reclaim_ledger,
            sender=self.alert_sender,
            # Re-checks wait at most 900 s (SQS's own delay), so no scheduler is needed.
            timer=QueueRequeueTimer(self.sqs, None, self.environ["RECLAIM_QUEUE_URL"], None),
            metrics=self.metrics,
            config=config,
            settings=ReclaimSettings(
                job_queue=self.environ.get("GPU_JOB_QUEUE") or config.gpu_queue_name(),
                enabled=self.flag("RECLAIM_ENABLED", True),
                dry_run=self.flag("RECLAIM_DRY_RUN", False),
            ),
            clock=self.clock,  # only a manual run reads it
            ticks=self.tick_watermarks,
        )

    # -- idle detector (detect_idle, `shareplane idle`) ------------------------------------------
    @cached_property
    def gpu_metrics(self) -> CloudWatchGpuMetrics:
        """Training jobs' per-host GPU metrics (CloudWatch GetMetricData)."""
        from .adapters.cloudwatch_gpu_metrics import CloudWatchGpuMetrics

        return CloudWatchGpuMetrics(self.cloudwatch)

    @cached_property
    def idle_ledger(self) -> DynamoIdleLedger:
        """The idle detector's decisions and idle-time watermarks, in the jobs table."""
        from .adapters.idle_ledger import DynamoIdleLedger

        return DynamoIdleLedger(self.dynamodb, self.table_name)

    @cached_property
    def idle_ports(self) -> DetectIdlePorts:
        """The idle detector's ports: the jobs table, CloudWatch, Batch, S3 checkpoints, its ledger, SNS."""
        from .adapters.s3_checkpoints import S3Checkpoints
        from .service.detect_idle import DetectIdlePorts, IdleSettings

        return DetectIdlePorts(
            store=self.store,
            gpu_metrics=self.gpu_metrics,
            batch=self.batch_jobs,
            checkpoints=S3Checkpoints(self.s3),
            ledger=self.idle_ledger,
            sender=self.alert_sender,
            metrics=self.metrics,
            config=self.require_config(),
            settings=IdleSettings(
                enabled=self.flag("IDLE_ENABLED", True), region=self.session.region_name or "us-east-1"
            ),
            clock=self.clock,  # only a manual run reads it
        )


#: The parts a Root builds, and so the names it takes as overrides.
_PARTS = frozenset(name for name, value in vars(Root).items() if isinstance(value, cached_property))

_root: Root | None = None


def root() -> Root:
    """The root the handlers use: this process's environment's, built on first use (a cold start).

    Not built at import, so importing a handler is cheap and safe.
    """
    global _root
    if _root is None:
        _root = Root.from_environment()
    return _root


@contextmanager
def installed(chosen: Root) -> Iterator[Root]:
    """Within the block the handlers use ``chosen``: a test's fakes, a local function's environment."""
    global _root
    saved, _root = _root, chosen
    try:
        yield chosen
    finally:
        _root = saved


#: Decorates every handler's record handler: AccessDenied from AWS is a configuration error, alerted once.
guard_permissions = guard(permission_denied, lambda: root().permission_alerts)
