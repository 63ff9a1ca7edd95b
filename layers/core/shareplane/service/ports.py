"""Ports the use cases talk through, one Protocol per port; adapters implement them, tests fake them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..domain.alerts.alert import Alert
    from ..domain.alerts.sent import SentAlert
    from ..domain.cost.billing import AttemptCost, OpenAttempt
    from ..domain.failures.record import Applied, DecisionRecord, PriorityRaise, RequeueDue, StormFailure
    from ..domain.forecast.arrivals import ArrivalKey
    from ..domain.forecast.prediction import StartPrediction
    from ..domain.idle.policy import GpuSample
    from ..domain.idle.record import IdleRecord
    from ..domain.jobs.described_job import DescribedJob, ListedJob
    from ..domain.jobs.lifecycle import HistoryEntry, JobState, Transition
    from ..domain.jobs.service_job_request import ServiceJobRequest
    from ..domain.jobs.training import (
        TrainingJobFacts,
        TrainingJobObservation,
        TrainingJobState,
        TrainingTransition,
    )
    from ..domain.reclaim.plan import ClaimBudgets
    from ..domain.reclaim.record import ReclaimDue, ReclaimRecord
    from ..domain.shares.batch_shares import (
        QueueUsage,
        QuotaShare,
        QuotaShareUpdate,
        SchedulingPolicy,
        SchedulingPolicyUpdate,
    )
    from ..domain.shares.state import PlanAudit, SharesState
    from ..domain.submit.attribution import StoredAttribution, UploaderPrincipal
    from ..domain.submit.payload import SubmittedPayload


# -- shared by every use case ----------------------------------------------------------------------


class JobStore(Protocol):
    """Current state and history of jobs and their training jobs."""

    def load_job(self, job_arn: str) -> JobState | None:
        """The job's current state, read consistently; None when never recorded."""
        ...

    def save_job(self, transition: Transition) -> bool:
        """Write one transition atomically; False when it was already recorded (a duplicate).

        Raises ConcurrentUpdateError when the state changed since it was loaded.
        """
        ...

    def load_training_job(self, training_job_arn: str) -> TrainingJobState | None:
        """The training job's current state; None when never recorded."""
        ...

    def save_training_job(self, transition: TrainingTransition, observation: TrainingJobObservation) -> bool:
        """Write one training-job transition atomically; False for a duplicate."""
        ...

    def job_history(self, job_arn: str) -> Sequence[HistoryEntry]:
        """The job's history in the order it happened."""
        ...

    def jobs(self, status: str | None = None) -> list[JobState]:
        """Every job's current state, optionally only those in one status."""
        ...

    def job_for_training_job(self, training_job_arn: str) -> str | None:
        """The ARN of the service job that ran a training job; None when not recorded."""
        ...

    def load_payload(self, job_arn: str) -> SubmittedPayload | None:
        """What the submit path stored for the job (its team among it), if it stored anything."""
        ...

    def record_cost(self, cost: AttemptCost) -> bool:
        """Record an attempt's cost and add it to its team's spend in each month its billed interval
        touches (one transaction); False when recorded already."""
        ...

    def month_spend(self, team: str, month: str) -> float:
        """USD the team was billed in ``month`` (``YYYY-MM``, UTC); 0 before its first."""
        ...

    def open_attempts(self) -> list[OpenAttempt]:
        """Every training job whose status in the table is not final, with the Batch job its link
        names (None: no link yet): a bounded read (an index), never a scan."""
        ...


class MetricEvent(Protocol):
    """One measurement (job, failure-path or rebalancer metric) and the dimensions it is published under."""

    # Read-only members, so the frozen dataclasses (JobMetricEvent, FailureMetricEvent,
    # ShareMetricEvent) satisfy the protocol: a plain annotation would ask for a settable attribute.
    @property
    def name(self) -> str: ...

    @property
    def value(self) -> float: ...

    @property
    def unit(self) -> str:
        """A CloudWatch unit name (Count, Seconds, Percent, None)."""
        ...

    @property
    def dimensions(self) -> tuple[str, ...]:
        """The dimension names this metric is published under (low cardinality, never a job id)."""
        ...


class MetricsSink(Protocol):
    """Where measurements go (EMF in Lambda)."""

    def emit(
        self, events: Sequence[MetricEvent], dimensions: Mapping[str, str], properties: Mapping[str, str]
    ) -> None:
        """Publish measurements under the given dimensions, with properties that are not dimensions."""
        ...


class AlertPublisher(Protocol):
    """The alerts topic."""

    def publish(self, subject: str, message: Mapping[str, object], attributes: Mapping[str, str]) -> None:
        """Publish one alert with string message attributes (subscribers filter on them)."""
        ...


class AlertLedger(Protocol):
    """Every alert's dedupe item (``ALERT#<job or share>#<kind>``), and the listing of those sent.

    One item per alert and subject, whichever path sends it, so quiet windows are shared across paths;
    each send is also kept on its own, so `shareplane alerts` lists every send, repeats too, from one
    index (adapters/alert_ledger.py).
    """

    def claim_alert(
        self, alert: Alert, now: float, quiet_seconds: float, *, claimed_at: float | None = None
    ) -> bool:
        """Reserve an alert's dedupe item; False while the same alert is quiet (sent or in flight).

        ``now`` dates the alert and its quiet window; ``claimed_at`` (default ``now``) is the clock time
        of the claim, by which an unconfirmed claim whose sender died goes stale.
        """
        ...

    def confirm_alert(self, alert: Alert, now: float) -> None:
        """Record that a claimed alert was sent at ``now`` (a send `shareplane alerts` shows; recording
        the same send again shows it once)."""
        ...

    def release_alert(self, alert: Alert) -> None:
        """Give a claim back after publishing failed, so a retry can send it."""
        ...

    def alert_sent_at(self, dedupe_key: str) -> float | None:
        """When the alert with this dedupe key was last sent; None when never (or only claimed)."""
        ...

    def alerts(self, since: float) -> list[SentAlert]:
        """Alerts sent after ``since`` (epoch seconds), each send once, oldest first."""
        ...


class TickWatermarks(Protocol):
    """The newest schedule tick each periodic run handled: what bounds how far ahead a tick may be dated."""

    def last_tick(self, runner: str) -> str | None:
        """The newest tick id (``tick_id``'s format) ``runner`` handled; None before its first."""
        ...

    def advance_tick(self, runner: str, tick: str) -> None:
        """Move ``runner``'s watermark forward to ``tick`` (an older tick leaves it unchanged)."""
        ...


class SubmittedRef(Protocol):
    """Batch's answer to SubmitServiceJob (read-only, so a frozen dataclass satisfies it)."""

    @property
    def job_arn(self) -> str: ...

    @property
    def job_id(self) -> str: ...


class ServiceJobs(Protocol):
    """AWS Batch service jobs: submit, describe, list, reprioritize (adapters/batch_service_jobs.py)."""

    def submit(self, request: ServiceJobRequest) -> SubmittedRef:
        """Submit one service job; the request's clientToken makes a repeat return the same job.

        Raises RejectedByServiceError when Batch refuses the request itself (a permanent problem);
        anything else (throttling, 5xx) propagates so the record is retried.
        """
        ...

    def describe(self, job_id: str) -> DescribedJob | None:
        """DescribeServiceJob's result; None when Batch does not know the job (any more)."""
        ...

    def find_submitted(self, job_queue: str, job_name: str, tag: str, value: str) -> SubmittedRef | None:
        """The oldest job of a queue with this name and this tag value (a retried submit's first job)."""
        ...

    def list_jobs(self, job_queue: str, status: str) -> list[ListedJob]:
        """ListServiceJobs summaries of one queue in one status (every page)."""
        ...

    def update_priority(self, job_id: str, scheduling_priority: int) -> None:
        """UpdateServiceJob with a new schedulingPriority; RejectedByServiceError when Batch refuses it."""
        ...


# -- share rebalancer (rebalance_shares) -----------------------------------------------------------


class SharesBatch(Protocol):
    """The AWS Batch operations the rebalancer reads and writes (adapters/batch_policy.py)."""

    def describe_scheduling_policy(self, arn: str) -> SchedulingPolicy:
        """One scheduling policy, as DescribeSchedulingPolicies describes it."""
        ...

    def update_scheduling_policy(self, update: SchedulingPolicyUpdate) -> None:
        """UpdateSchedulingPolicy: the fair-share policy's settings, whole."""
        ...

    def scheduling_policy_of(self, job_queue: str) -> str | None:
        """The scheduling policy ARN of a queue (None for FIFO)."""
        ...

    def list_quota_shares(self, job_queue: str) -> list[QuotaShare]:
        """Every quota share of a queue with its settings."""
        ...

    def update_quota_share(self, update: QuotaShareUpdate) -> None:
        """UpdateQuotaShare: one quota share's new settings."""
        ...

    def get_job_queue_snapshot(self, job_queue: str) -> QueueUsage:
        """GetJobQueueSnapshot's utilization: what the queue's top shares hold."""
        ...


class ShareStore(Protocol):
    """The rebalancer's state item, audit trail and job queries (adapters/share_store.py)."""

    def load_state(self) -> SharesState | None:
        """The rebalancer's state, None before the first run."""
        ...

    def save_state(self, state: SharesState, previous_version: int | None) -> None:
        """Write the state at the version read; ConcurrentUpdateError when it moved."""
        ...

    def begin_plan(self, audit: PlanAudit, state: SharesState | None, previous_version: int | None) -> bool:
        """Write a new audit record (and the state) atomically; False when the record exists."""
        ...

    def mark_applied(self, audit: PlanAudit, applied_at: float) -> bool:
        """Turn a PENDING audit record APPLIED; False when it was not pending."""
        ...

    def audit_at(self, created_at: float, plan_id: str) -> PlanAudit | None:
        """The audit record at its key."""
        ...

    def audit(self, plan_id: str) -> PlanAudit | None:
        """The audit record of a plan id (or a unique prefix of one)."""
        ...

    def jobs_in_status(self, status: str, created_after_ms: int | None = None) -> list[JobState]:
        """Jobs in one status (ByStatus index), optionally only those created after a time."""
        ...


# -- submit path (submit_job) ----------------------------------------------------------------------


class ObjectHead(Protocol):
    """What HEAD says about one object version (read-only, so a frozen dataclass satisfies it)."""

    @property
    def size(self) -> int: ...

    @property
    def version_id(self) -> str | None: ...

    @property
    def etag(self) -> str | None: ...

    @property
    def last_modified_ms(self) -> int: ...


class SpecBucket(Protocol):
    """The drop bucket: read a spec version, copy it, write answers beside it, delete it."""

    def head(self, bucket: str, key: str, version_id: str | None) -> ObjectHead | None:
        """Size and identity of an object version; None when it (or the version) does not exist."""
        ...

    def read(self, bucket: str, key: str, version_id: str | None) -> bytes | None:
        """The object version's bytes; None when it vanished since HEAD."""
        ...

    def copy(self, bucket: str, key: str, version_id: str | None, dest_key: str) -> None:
        """Copy exactly this version to ``dest_key`` in the same bucket."""
        ...

    def put_json(self, bucket: str, key: str, document: Mapping[str, object]) -> None:
        """Write a JSON document."""
        ...

    def get_json(self, bucket: str, key: str) -> object | None:
        """A JSON document, or None when absent or unreadable."""
        ...

    def delete(self, bucket: str, key: str, version_id: str | None) -> None:
        """Delete exactly this version (the plain key when the bucket is unversioned)."""
        ...


class PayloadStore(Protocol):
    """Where submitted payloads are kept for requeue."""

    def save_payload(self, job_arn: str, item: Mapping[str, object]) -> bool:
        """Store a job's submitted payload once; False when it was stored already."""
        ...

    def load_payload(self, job_arn: str) -> SubmittedPayload | None:
        """The job's stored payload (its request may live in S3: see payload_request)."""
        ...


# -- the failure path (handle_failure, watch_jobs) -------------------------------------------------


class TrainingJobs(Protocol):
    """SageMaker training jobs, read only."""

    def describe(self, training_job_name: str) -> TrainingJobFacts | None:
        """DescribeTrainingJob's result; None when SageMaker does not know the job."""
        ...

    def observe(self, training_job_name: str) -> TrainingJobObservation | None:
        """DescribeTrainingJob read as an observation of the job's state (the watch's reconcile)."""
        ...


class RequeueTimer(Protocol):
    """Brings a message back to the failure path after a delay (SQS delay or a one-time schedule)."""

    def after(self, message: RequeueDue | ReclaimDue, delay_seconds: int, now: float) -> None:
        """Deliver ``message`` to the failure path's queue ``delay_seconds`` after ``now``."""
        ...


class FailureLedger(Protocol):
    """The failure path's own items (conditional writes): its decisions, the history notes they and the
    watch's escalations add to a job, and the failures the storm guard counts. Alerts are the
    ``AlertLedger``'s, tick watermarks the ``TickWatermarks``'."""

    def claim_decision(
        self, key: str, record: DecisionRecord, history: HistoryEntry, share_failure: StormFailure | None
    ) -> DecisionRecord | None:
        """Write a decision once, with its history item (and the failure the storm guard counts);
        None when written, else the record stored first."""
        ...

    def load_decision(self, key: str) -> DecisionRecord | None:
        """A stored decision record."""
        ...

    def mark_applied(self, key: str, result: Applied) -> bool:
        """Mark a decision applied (once), with what applying did; False when it already was."""
        ...

    def mark_scheduled(self, key: str) -> None:
        """Note that a decision's delayed requeue message was sent."""
        ...

    def add_history(self, job_arn: str, entry: HistoryEntry, raised: PriorityRaise | None = None) -> bool:
        """Put one history item on a job once (with the priority escalation it records); False when it
        was there."""
        ...

    def share_failures(self, share: str, since: float) -> list[StormFailure]:
        """The share's storm-guard failures after ``since`` (epoch seconds), oldest first."""
        ...


# -- start predictions (watch_jobs; `shareplane why` reads the same twin) -------------------------


class PredictionStore(Protocol):
    """Each waiting job's newest start prediction, beside its state in the jobs table."""

    def save_prediction(self, job_arn: str, prediction: StartPrediction) -> bool:
        """Store the prediction unless one made at the same or a later tick is stored; False then."""
        ...

    def load_prediction(self, job_arn: str) -> StartPrediction | None:
        """The job's newest stored prediction; None before its first."""
        ...

    def prediction_times(self, job_arns: Sequence[str]) -> dict[str, int]:
        """When each of these jobs was last predicted (epoch ms); a job never predicted is absent."""
        ...


class RecentJobs(Protocol):
    """Jobs of one status created after a time (the ByStatus index's range), for the twin's history."""

    def jobs_in_status(self, status: str, created_after_ms: int | None = None) -> list[JobState]:
        """Jobs in one status, optionally only those created after ``created_after_ms``."""
        ...

    def newest_in_status(self, status: str, created_after_ms: int, limit: int) -> list[JobState]:
        """The ``limit`` jobs in one status created last, after ``created_after_ms``; newest first."""
        ...

    def oldest_created_ms(self, status: str) -> int | None:
        """When the oldest job in one status was created (epoch ms; None: no such job)."""
        ...


class ArrivalCounts(Protocol):
    """Finished jobs counted by queue, creation hour, share, instances and priority (``arrival_counts``)."""

    def arrival_counts(self, queue: str, since_ms: int) -> list[tuple[ArrivalKey, int]]:
        """The queue's counts above zero, from the hour ``since_ms`` falls in, sorted by key."""
        ...


class QueueReader(Protocol):
    """What the live twin reads of a job queue from Batch: its policy or quota shares, its capacity."""

    def scheduling_policy_of(self, job_queue: str) -> str | None:
        """The scheduling policy ARN of a queue (None for FIFO)."""
        ...

    def describe_scheduling_policy(self, arn: str) -> SchedulingPolicy:
        """One scheduling policy, as DescribeSchedulingPolicies describes it."""
        ...

    def list_quota_shares(self, job_queue: str) -> list[QuotaShare]:
        """Every quota share of a queue with its settings."""
        ...

    def queue_capacity(self, job_queue: str) -> int:
        """Instances the queue's service environments may run; 0 when Batch names none."""
        ...


# -- checkpoint-aware reclaim (reclaim_capacity) ---------------------------------------------------


class ReclaimBatch(Protocol):
    """The AWS Batch calls reclaim makes: list and describe the GPU queue's jobs, terminate victims."""

    def list_jobs(self, job_queue: str, status: str) -> list[ListedJob]:
        """ListServiceJobs summaries of one queue in one status (every page)."""
        ...

    def describe(self, job_id: str) -> DescribedJob | None:
        """DescribeServiceJob's result; None when Batch does not know the job (any more)."""
        ...

    def terminate(self, job_id: str, reason: str) -> None:
        """TerminateServiceJob; RejectedByServiceError when Batch refuses it (the job is gone)."""
        ...


class CheckpointReader(Protocol):
    """Where trainers write checkpoints (S3): when the newest one under a prefix was written."""

    def newest(self, s3_uri: str, at_or_before: float | None = None) -> float | None:
        """Epoch seconds of the newest LastModified under ``s3_uri`` not after ``at_or_before`` (or None)."""
        ...


class ReclaimLedger(Protocol):
    """Reclaim decisions, victims and budget counters in the jobs table (conditional writes)."""

    def victims_for(self, beneficiary_id: str) -> int:
        """Victims already stopped for one waiting job (its per-job budget)."""
        ...

    def victims_on(self, day: str) -> int:
        """Victims stopped on one UTC day (the per-day budget)."""
        ...

    def victims_in(self, window: str) -> int:
        """Victims stopped in one rate window (``domain.reclaim.rate_window``; the rate limit)."""
        ...

    def stopping(self) -> dict[str, str]:
        """Victim job id -> the job id it is being (or was) stopped for, for recent reclaims."""
        ...

    def decision_of(self, victim_id: str) -> str | None:
        """The decision id that claimed a victim (after ``stopping`` read it); None when none did."""
        ...

    def claim(
        self, record: ReclaimRecord, histories: Sequence[tuple[str, HistoryEntry]], budgets: ClaimBudgets
    ) -> str:
        """Write a reclaim once with its victims, history items and counters, in one transaction.

        ``claimed``: written now; ``exists``: this decision was written before (a redelivery);
        ``refused``: a victim is already someone else's or a budget would be overrun (a racing run).
        """
        ...

    def release(
        self,
        record: ReclaimRecord,
        histories: Sequence[tuple[str, HistoryEntry]],
        budgets: ClaimBudgets,
        unstopped: int,
    ) -> bool:
        """Undo a claim not yet applied, in one transaction: the decision, its victim items and history
        items go, and the counters give back ``unstopped`` victims. False when it was applied or gone."""
        ...

    def load(self, beneficiary_id: str, decision_id: str) -> ReclaimRecord | None:
        """A stored reclaim decision."""
        ...

    def record_dry_run(self, record: ReclaimRecord) -> bool:
        """Write a dry-run decision once (no victims, no counters); False when it was there."""
        ...

    def mark_applied(self, beneficiary_id: str, decision_id: str, applied_at: float) -> bool:
        """Mark a reclaim applied (victims terminated) at ``applied_at``, once; False when it already was."""
        ...


# -- the uploader's principal (record_uploader, and the submit path's half of the join) ------------


class UploadAttributions(Protocol):
    """The join of an S3 request's principal (CloudTrail) to the jobs of its drop."""

    def save_attribution(self, request_id: str, principal: UploaderPrincipal, expires_at: int) -> bool:
        """Store the request's principal once; False when it was stored already."""
        ...

    def load_attribution(self, request_id: str) -> StoredAttribution | None:
        """The request's attribution (principal, alerted); None when not stored."""
        ...

    def mark_alerted(self, request_id: str) -> None:
        """Record on the attribution that its alert went out (the alert itself is the alert ledger's)."""
        ...

    def link_job(self, request_id: str, job_arn: str, expires_at: int) -> None:
        """Record that a job came from this request's drop (idempotent)."""
        ...

    def linked_jobs(self, request_id: str) -> list[str]:
        """The jobs linked to this request."""
        ...

    def set_principal(self, job_arn: str, principal: UploaderPrincipal) -> bool:
        """Write the principal on the job's payload item; False when the job has none."""
        ...


class CostReader(Protocol):
    """What the chargeback report reads: recorded costs, attempts still running, uploaders."""

    def costs(self) -> list[AttemptCost]:
        """Every recorded attempt's cost, with its Batch job when known."""
        ...

    def open_attempts(self) -> list[OpenAttempt]:
        """Every training job not final in the table, with the Batch job its link names."""
        ...

    def month_spend(self, team: str, month: str) -> float:
        """USD the team was billed in ``month``."""
        ...

    def load_payload(self, job_arn: str) -> SubmittedPayload | None:
        """The job's stored payload (its uploader's principal among it), if the submit path stored one."""
        ...


# -- idle detector (detect_idle) -----------------------------------------------------------------


class GpuMetricsReader(Protocol):
    """Training jobs' per-host GPU metrics (CloudWatch, ``/aws/sagemaker/TrainingJobs``)."""

    def gpu_samples(self, dimensions: Sequence[str], start: float, end: float) -> dict[str, list[GpuSample]]:
        """One-minute GPUUtilization (and GPUMemoryUtilization) samples of each ``<job>/algo-N`` dimension."""
        ...


class IdleLedger(Protocol):
    """The idle detector's decisions and its idle-time watermarks."""

    def decisions(self, job_id: str) -> list[IdleRecord]:
        """Every decision recorded for one job, oldest first."""
        ...

    def record(self, record: IdleRecord) -> bool:
        """Write one decision unless it is there already; True when new."""
        ...

    def since(self, since: float) -> list[IdleRecord]:
        """Every decision made at ``since`` or later, oldest first."""
        ...

    def count_idle(self, job_id: str, until: float) -> float | None:
        """Move the job's counted-idle watermark up to ``until``; the one it replaced (None: first).

        Raises nothing when it is already at or past ``until``: returns ``until`` then, so nothing new
        is counted.
        """
        ...


# -- a team's jobs (the CLI's cleanup) -------------------------------------------------------------
class TeamJobsBatch(Protocol):
    """The AWS Batch reads that find a team's queued and running jobs: by share, and by tag."""

    def active_jobs(self, queue: str, share: str, quota: bool = False) -> Iterable[ListedJob]:
        """A share's (or quota share's) jobs in a queue, in every active state."""
        ...

    def list_jobs(self, job_queue: str, status: str) -> list[ListedJob]:
        """ListServiceJobs summaries of one queue in one status (every page)."""
        ...

    def describe(self, job_id: str) -> DescribedJob | None:
        """DescribeServiceJob's result; None when Batch does not know the job (any more)."""
        ...
