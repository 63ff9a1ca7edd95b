"""The model: service environments, job queues (FIFO, fair-share, quota-share) and SageMaker jobs.

One ``BatchModel`` owns the registries and the job lifecycle; the engine owns the clock; the resources
it keeps (environments, policies, queues, shares, jobs) are the records of ``resources.py``; each
queue's scheduler (``schedulers.py``: FIFO, fair-share, quota-share) picks what starts next; ``wire.py``
gives the AWS shapes the API answers with and the events carry.

Choices where AWS documents nothing (each is a switch on ``ModelOptions`` or ``Timings``):

- ``head_of_line_blocking`` (on): when the job the scheduler picks next does not fit, nothing behind
  it in that queue (fair-share: in that pass; quota-share: in that share) is dispatched. Off, the
  scheduler skips it and tries the next share or job.
- ``usage_by_instances`` (on): fair-share usage accrues ``InstanceCount x weightFactor`` per second;
  off, every job counts as one instance whatever its InstanceCount.
- ``fairshare_ties_by_weight`` (on): shares whose standing ties (in practice: shares with no usage
  yet, such as a team's first job or a tier's own identifier) are served lowest weightFactor first,
  the share entitled to the most being furthest below its entitlement; then the oldest head job.
  Off, the oldest head job alone breaks the tie.
- When a fair-share share counts as active, and how quota shares lend, borrow and preempt: see
  ``schedulers.py``.
- A job the scheduler reaches that no service environment can ever hold is blocked with
  ``MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE``, and in quota mode a job larger than its
  share's limit plus what it may borrow with ``MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED``;
  https://docs.aws.amazon.com/batch/latest/userguide/sm_job_stuck_in_runnable_misconfiguration.html
- The capacity time limit compares the time the job spent in SCHEDULED, summed over its capacity
  failures, with ``maxTimeSeconds``;
  https://docs.aws.amazon.com/batch/latest/userguide/sm_job_stuck_in_runnable_capacity.html
- The payload is SageMaker's to judge: Batch queues it as given, and CreateTrainingJob at dispatch
  rejects a bad one (``payload.create_training_job_error``), which ends the job FAILED with no
  attempt, as a ResourceLimitExceeded does. Training-job names and ARNs keep the casing Batch gives
  them (``AWSBatch...``, as in the service-job-events.html sample).
- ``lowercase_training_job_arns`` (off): SageMaker's ListTrainingJobs and DescribeTrainingJob answer
  with the ``TrainingJobArn`` lower-cased, while Batch's answers and every event keep ``AWSBatch...``.
  Other AWS users report SageMaker returning lower-cased training-job ARNs from some calls (the
  documents say nothing either way); names stay as created, and a name is found whatever its case.
  The local stack turns it on, so the control plane is proven against both spellings.
- ``time_limit_on_blocked_only`` (on): a jobStateTimeLimitAction acts on the head job only when its
  blocked reason (``CAPACITY:...`` after a capacity error, ``MISCONFIGURATION:...`` when no
  environment can ever hold it) matches the action's reason; off, any head job waiting too long.
- Attempt times: ``startedAt`` is when the attempt reached STARTING (capacity acquired).
- A spot interruption is SageMaker-internal (Interrupted, then Starting again); the Batch job stays
  RUNNING and its training takes ``Timings.spot_restart`` longer.
- A trainer with a CheckpointConfig writes a checkpoint every ``Timings.checkpoint_interval`` of
  training; the model keeps the progress per checkpoint URI (``BatchModel.checkpoints``) and hands
  each checkpoint to ``BatchModel.checkpoint_writer`` (the local stack writes an S3 object). A job
  started with a URI that holds progress resumes from it: its training is that much shorter, as a
  trainer that loads its newest checkpoint would be, whether it was preempted, terminated and
  resubmitted, or submitted anew.
- StopTrainingJob and MaxRuntimeInSeconds end the attempt as a failed attempt that goes through the
  retry strategy, like any other SageMaker failure.
- GPU metrics (``gpu_metrics.py``): every ``Timings.metrics_interval`` the model hands
  ``BatchModel.metrics_writer`` the GPUUtilization, GPUMemoryUtilization and CPUUtilization of each
  host of each RUNNING job (the local stack puts them in its CloudWatch). A job's tags script it idle
  (``gpusim:idle-after-seconds``) or hung (``gpusim:hung-after-seconds``: GPUs busy, no more
  checkpoints, training never completes).
- Billable time (DescribeTrainingJob's BillableTimeInSeconds and TrainingTimeInSeconds,
  https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeTrainingJob.html): a training
  job is billed from TrainingStartTime (here: when its attempt reaches STARTING, after the
  provisioning of SCHEDULED) to TrainingEndTime, so provisioning is never billed. AWS documents that
  with managed spot training the billable time is less than the training time by the saving, not by
  how much: ``spot_billable_fraction`` (0.3, a 70% saving) is that ratio. Both fields appear once the
  job has ended, and only if its training started.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import events as ev
from . import gpu_metrics, texts, wire
from . import payload as payload_rules
from .engine import LATE, Engine, RealtimeEngine
from .resources import (
    NUM_INSTANCES,
    FairShare,
    Job,
    JobQueue,
    QuotaShare,
    SchedulingPolicy,
    ServiceEnvironment,
    TrainingJob,
)
from .schedulers import FairShareScheduler, scheduler_for
from .states import (
    DISPATCHED,
    FAILED,
    FINAL,
    RUNNABLE,
    RUNNING,
    SCHEDULED,
    STARTING,
    SUBMITTED,
    SUCCEEDED,
)

# The resources live in ``resources.py``; callers keep importing them from here.
__all__ = [
    "NUM_INSTANCES",
    "OUTCOMES",
    "BatchModel",
    "FairShare",
    "Faults",
    "Job",
    "JobQueue",
    "ModelOptions",
    "QuotaShare",
    "SchedulingPolicy",
    "ServiceEnvironment",
    "Timings",
    "TrainingJob",
    "retry_action",
    "rule_matches",
]

OUTCOMES = ("ok", "capacity", "internal", "cuda_oom", "host_oom", "spot", "resource_limit")


@dataclass(frozen=True)
class Timings:
    """How long each SageMaker phase takes, in virtual seconds."""

    submitted_to_runnable: float = 0.0
    scheduled_to_starting: float = 60.0
    starting_to_running: float = 120.0
    uploading: float = 0.0
    capacity_error_after: float = 300.0
    failure_after: float = 120.0
    spot_restart: float = 300.0
    default_duration: float = 3600.0
    #: A job whose payload has a CheckpointConfig saves its progress this often; a preempted attempt
    #: loses only the work since its last checkpoint (0: checkpoints are never taken into account).
    checkpoint_interval: float = 900.0
    #: How often a RUNNING job's hosts publish their instance metrics (gpu_metrics.py).
    metrics_interval: float = 60.0


@dataclass(frozen=True)
class Faults:
    """Per-dispatch failure probabilities, and scripted outcomes per job name (one per dispatch)."""

    capacity: float = 0.0
    internal: float = 0.0
    cuda_oom: float = 0.0
    host_oom: float = 0.0
    spot: float = 0.0
    resource_limit: float = 0.0
    scripted: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, outcomes in self.scripted.items():
            bad = [o for o in outcomes if o not in OUTCOMES]
            if bad:
                raise ValueError(f"scripted outcome {bad} for {name!r}; use one of {OUTCOMES}")

    @property
    def any_rate(self) -> bool:
        """Whether any random failure is enabled (no draw is made otherwise)."""
        return any(
            (self.capacity, self.internal, self.cuda_oom, self.host_oom, self.spot, self.resource_limit)
        )


@dataclass(frozen=True)
class ModelOptions:
    """Everything that shapes one run; see the module docstring for the undocumented switches."""

    seed: int = 0
    account: str = "123456789012"
    region: str = "us-east-1"
    epoch_ms: int = 1773619200000  # 2026-03-16T00:00:00Z: virtual time 0
    head_of_line_blocking: bool = True
    usage_by_instances: bool = True
    fairshare_ties_by_weight: bool = True
    time_limit_on_blocked_only: bool = True
    recent_preemptions: int = 5
    account_instance_limits: Mapping[str, int] = field(default_factory=dict)
    timings: Timings = Timings()
    faults: Faults = Faults()
    duplicate_rate: float = 0.0
    reorder_window: int = 0
    #: BillableTimeInSeconds / TrainingTimeInSeconds of a managed spot training job (undocumented).
    spot_billable_fraction: float = 0.3
    #: SageMaker's List and Describe calls return training-job ARNs lower-cased (see the module docstring).
    lowercase_training_job_arns: bool = False


def rule_matches(pattern: str, reason: str) -> bool:
    """evaluateOnExit glob: a trailing ``*`` matches any suffix, otherwise the text must be equal."""
    if pattern.endswith("*"):
        return reason.startswith(pattern[:-1])
    return reason == pattern


def retry_action(rules: list[dict[str, Any]], reason: str) -> str | None:
    """The action of the first evaluateOnExit rule that matches ``reason``, or None."""
    for rule in rules:
        if rule_matches(rule.get("onStatusReason", "*"), reason):
            return str(rule["action"]).upper()
    return None


class BatchModel:
    """AWS Batch (service jobs) and the SageMaker training jobs it creates, on one engine."""

    def __init__(self, engine: Engine | None = None, options: ModelOptions | None = None) -> None:
        self.engine = engine or Engine()
        self.options = options or ModelOptions()
        self.rng = random.Random(self.options.seed)
        self.bus = ev.EventBus(
            self.options.account,
            self.options.region,
            self.options.seed,
            self.options.duplicate_rate,
            self.options.reorder_window,
        )
        o = self.options
        self.batch_arn = f"arn:aws:batch:{o.region}:{o.account}"
        self.sagemaker_arn = f"arn:aws:sagemaker:{o.region}:{o.account}"
        self.environments: dict[str, ServiceEnvironment] = {}
        self.policies: dict[str, SchedulingPolicy] = {}
        self.queues: dict[str, JobQueue] = {}
        self.jobs: dict[str, Job] = {}
        self.training_jobs: dict[str, TrainingJob] = {}
        self.client_tokens: dict[str, Job] = {}
        self._queue_order: list[JobQueue] = []
        self._queue_seq = 0
        self._job_seq = 0
        self._pass_pending = False
        self.finished = 0
        self.held_instance_seconds = 0.0
        #: Training seconds each checkpoint URI (CheckpointConfig.S3Uri) holds: what a job resumes from.
        self.checkpoints: dict[str, float] = {}
        #: Called as ``checkpoint_writer(s3_uri, epoch_seconds, progress_seconds)`` at every checkpoint a
        #: trainer writes (the local stack puts an object under the URI); None: checkpoints stay in the model.
        self.checkpoint_writer: Callable[[str, float, float], None] | None = None
        #: Called as ``observer(kind, job)`` on "dispatch", "preempt" (before the release), "release" and
        #: "finish": what-if meters integrate demand and use from these without scanning every job.
        self.observer: Callable[[str, Job], None] | None = None
        #: Called as ``metrics_writer(metric_data)`` every ``Timings.metrics_interval`` with the PutMetricData
        #: entries of every host of every RUNNING job (gpu_metrics.py); None: nothing is published.
        self.metrics_writer: Callable[[list[dict[str, Any]]], None] | None = None
        self._metered: dict[str, Job] = {}
        self._metrics_pending = False

    # ----------------------------------------------------------------------------------- time
    @property
    def now(self) -> float:
        """Virtual seconds since the start of the run."""
        return self.engine.now

    def ms(self, t: float | None = None) -> int:
        """Epoch milliseconds of virtual time ``t`` (default now)."""
        return self.options.epoch_ms + int(round((self.engine.now if t is None else t) * 1000))

    def run(self, until: float | None = None) -> None:
        """Advance the engine, then deliver any events a reorder window still holds."""
        self.engine.run(until)
        self.bus.flush()

    def sync(self) -> float:
        """Emulator mode: run what is due by the scaled wall clock, then deliver held-back events."""
        engine = self.engine
        if not isinstance(engine, RealtimeEngine):
            raise TypeError("sync() needs a RealtimeEngine; use run() on a virtual-time Engine")
        with engine.lock:
            now = engine.advance_to_now()
            self.bus.flush()
        return now

    # ------------------------------------------------------------------------------ resources
    def add_environment(self, env: ServiceEnvironment) -> None:
        """Register a service environment."""
        self.environments[env.name] = env

    def add_queue(self, name: str, policy: SchedulingPolicy | None = None) -> JobQueue:
        """Register an empty queue and its scheduler (FIFO without ``policy``, else after its kind).

        The caller sets its other fields, then calls ``queues_changed``.
        """
        self._queue_seq += 1
        queue = JobQueue(name, f"{self.batch_arn}:job-queue/{name}", self._queue_seq, policy)
        queue.scheduler = scheduler_for(self, queue)
        self.queues[name] = queue
        self.queues_changed()
        return queue

    def queues_changed(self) -> None:
        """Re-sort queues by priority (higher first, then creation) and run a scheduling pass."""
        self._queue_order = sorted(self.queues.values(), key=lambda q: (-q.priority, q.seq))
        self.request_pass()

    def remove_queue(self, queue: JobQueue) -> None:
        """Delete a queue."""
        del self.queues[queue.name]
        self.queues_changed()

    # ----------------------------------------------------------------------------- submission
    def submit(
        self,
        queue: JobQueue,
        name: str,
        payload: dict[str, Any],
        *,
        payload_text: str | None = None,
        share: str | None = None,
        quota_share: QuotaShare | None = None,
        priority: int = 0,
        retry: dict[str, Any] | None = None,
        timeout: dict[str, Any] | None = None,
        preemption: dict[str, Any] | None = None,
        tags: dict[str, str] | None = None,
        duration: float | None = None,
        client_token: str | None = None,
        gpu: gpu_metrics.GpuScript | None = None,
    ) -> Job:
        """Create a service job (validated by the caller) and queue it."""
        self._job_seq += 1
        job_id = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        instance_type, count = payload_rules.resources(payload)
        tag_duration = (tags or {}).get("gpusim:duration-seconds")
        scripted = self.options.faults.scripted.get(name)
        now = self.engine.now
        job = Job(
            id=job_id,
            arn=f"{self.batch_arn}:service-job/{job_id}",
            name=name,
            queue=queue,
            share=share,
            qshare=quota_share,
            priority=priority,
            seq=self._job_seq,
            created=now,
            payload=payload,
            payload_text=payload_text,
            instance_type=instance_type,
            count=count,
            units=count if self.options.usage_by_instances else 1,
            duration=float(
                duration if duration is not None else tag_duration or self.options.timings.default_duration
            ),
            retry=retry,
            timeout=timeout,
            preemption=preemption,
            tags=tags or {},
            client_token=client_token,
            gpu=gpu if gpu is not None else gpu_metrics.script_from_tags(tags),
            gpu_key=gpu_metrics.job_key(name, job_id),
            script=list(scripted) if scripted else None,
            status=SUBMITTED,
            wait_since=now,
        )
        self.jobs[job.id] = job
        if client_token:
            self.client_tokens[client_token] = job
        delay = self.options.timings.submitted_to_runnable
        if delay > 0:
            self.engine.schedule(delay, self._to_runnable, (job, job.epoch))
        else:
            self._to_runnable((job, job.epoch))
        return job

    def _to_runnable(self, arg: tuple[Job, int]) -> None:
        job, epoch = arg
        if job.epoch != epoch or job.status in FINAL:
            return
        job.status = RUNNABLE
        job.queue.scheduler.on_runnable(job)
        self._enqueue(job)
        self._emit(job)

    def _enqueue(self, job: Job) -> None:
        job.qver += 1
        job.queue.scheduler.enqueue(job)
        self.request_pass()

    def reprioritize(self, job: Job, priority: int) -> None:
        """UpdateServiceJob: a new schedulingPriority, effective in the next pass."""
        job.priority = priority
        if job.status == RUNNABLE:
            self._enqueue(job)
        self.request_pass()

    # ------------------------------------------------------------------------------- dispatch
    def request_pass(self) -> None:
        """Run one scheduling pass after every other event at this instant."""
        if not self._pass_pending:
            self._pass_pending = True
            self.engine.schedule(0.0, self._pass, None, LATE)

    def _pass(self, _: Any = None) -> None:
        self._pass_pending = False
        for queue in self._queue_order:
            if queue.state != "ENABLED" or not queue.environments:
                continue
            queue.scheduler.run_pass()
            if queue.time_limits or self.bus.active:
                self._check_heads(queue)

    def room(
        self, queue: JobQueue, job: Job, usable: Callable[[int], int] | None = None
    ) -> ServiceEnvironment | None:
        """The first enabled environment of the queue with room for the job now (``usable`` caps each)."""
        for env in queue.environments:
            if env.state != "ENABLED":
                continue
            unit = NUM_INSTANCES if NUM_INSTANCES in env.limits else job.instance_type
            cap = env.limits.get(unit)
            if cap is None:
                continue
            if usable is not None:
                cap = usable(cap)
            if env.in_use.get(unit, 0) + job.count <= cap:
                return env
        return None

    def _never_fits(self, queue: JobQueue, job: Job) -> bool:
        for env in queue.environments:
            unit = env.unit_for(job.instance_type)
            if job.count <= env.limits.get(unit, 0):
                return False
        return True

    # ------------------------------------------------------------------------------ lifecycle
    def dispatch(self, job: Job, env: ServiceEnvironment) -> None:
        """Start the job its queue's scheduler chose on ``env``: take capacity, create the training job."""
        now = self.engine.now
        job.epoch += 1
        unit = NUM_INSTANCES if NUM_INSTANCES in env.limits else job.instance_type
        job.env = env
        job.unit = unit
        env.in_use[unit] = env.in_use.get(unit, 0) + job.count
        job.queue.scheduler.on_dispatch(job, now)
        job.dispatches += 1
        if job.first_dispatch is None:
            job.first_dispatch = now
        if self.observer is not None:
            self.observer("dispatch", job)
        job.scheduled_at = now
        job.started_at = None
        job.blocked = None
        outcome = self._draw_outcome(job)
        job.outcome = outcome
        if outcome == "resource_limit":
            self._resource_limit(job)
            return
        tj_name = payload_rules.training_job_name(job.payload, job.name, f"{self.rng.getrandbits(128):032x}")
        rejected = job.invalid
        if rejected is None and job.judged:
            rejected = payload_rules.create_training_job_error(job.payload, tj_name)
        if rejected:
            self._release(job)
            self._finish(job, FAILED, texts.sagemaker(texts.INVALID_PAYLOAD.format(detail=rejected)))
            return
        tj = TrainingJob(tj_name, f"{self.sagemaker_arn}:training-job/{tj_name}", job, now)
        self.training_jobs[tj_name] = tj
        job.training = tj
        job.status = SCHEDULED
        job.reason = None
        self._emit(job)
        self._emit_tj(tj)
        timings = self.options.timings
        if outcome == "capacity":
            self.engine.schedule(timings.capacity_error_after, self._capacity_error, (job, job.epoch))
        else:
            self.engine.schedule(timings.scheduled_to_starting, self._starting, (job, job.epoch))

    def _draw_outcome(self, job: Job) -> str:
        if job.script:
            return job.script.pop(0)
        faults = self.options.faults
        if not faults.any_rate:
            return "ok"
        r = self.rng.random()
        for name in ("capacity", "resource_limit", "internal", "cuda_oom", "host_oom", "spot"):
            p = getattr(faults, name)
            if r < p:
                return name
            r -= p
        return "ok"

    def _release(self, job: Job) -> None:
        now = self.engine.now
        env = job.env
        if env is None:
            return
        if self.observer is not None:
            self.observer("release", job)
        env.in_use[job.unit] -= job.count
        held = job.count * (now - (job.scheduled_at or now))
        self.held_instance_seconds += held
        job.queue.scheduler.on_release(job, now, held)
        job.env = None
        self.request_pass()

    def reweigh(self, queue: JobQueue, weights: Mapping[str, float]) -> None:
        """Set fair-share weightFactors mid-run in O(shares) (UpdateSchedulingPolicy rescans every job).

        Decayed usage is brought up to now under the old weights first; from now on running jobs
        accrue at the new weight, as ``BatchApi.update_scheduling_policy`` does.
        """
        scheduler = queue.scheduler
        if not isinstance(scheduler, FairShareScheduler):
            raise TypeError(f"reweigh() needs a fair-share queue; {queue.name} is {queue.kind}")
        scheduler.reweigh(weights)
        self.request_pass()

    def _resource_limit(self, job: Job) -> None:
        limit = self.options.account_instance_limits.get(job.instance_type, 0)
        used = sum(e.in_use.get(job.instance_type, 0) for e in self.environments.values()) - job.count
        reason = texts.RESOURCE_LIMIT.format(
            instance_type=job.instance_type, limit=limit, used=max(used, 0), delta=job.count
        )
        self._release(job)
        self._finish(job, FAILED, texts.sagemaker(reason))

    def _starting(self, arg: tuple[Job, int]) -> None:
        job, epoch = arg
        if job.epoch != epoch:
            return
        now = self.engine.now
        job.status = STARTING
        job.started_at = now
        tj = job.training_job()
        tj.started = now
        self._tj_status(tj, "InProgress", "Downloading", "Downloading input data")
        self._emit(job)
        timings = self.options.timings
        if job.outcome == "internal":
            self.engine.schedule(timings.failure_after / 2, self._attempt_end, (job, epoch, "internal"))
            return
        self.engine.schedule(timings.starting_to_running, self._running, arg)

    def _running(self, arg: tuple[Job, int]) -> None:
        job, epoch = arg
        if job.epoch != epoch:
            return
        now = self.engine.now
        job.status = RUNNING
        self._tj_status(
            job.training_job(),
            "InProgress",
            "Training",
            "Training image download completed. Training in progress.",
        )
        self._emit(job)
        timings = self.options.timings
        outcome = job.outcome
        job.training_since = now
        uri = self._checkpoint_uri(job)
        if uri is not None:
            # A trainer loads the newest checkpoint under its URI, whoever wrote it.
            job.saved = min(job.duration, max(job.saved, self.checkpoints.get(uri, 0.0)))
            interval = timings.checkpoint_interval
            if interval > 0 and job.saved + interval < job.duration:
                self.engine.schedule(interval, self._checkpoint, (job, epoch, job.saved + interval))
        train = job.duration - job.saved
        if job.gpu.hung_after is not None:
            # A hung collective never returns: only a limit or a stop ends the attempt.
            train = float("inf")
        if outcome == "spot":
            train += timings.spot_restart
            self.engine.schedule(job.duration / 2, self._spot, arg)
        ends = [(train + timings.uploading, "ok")]
        if outcome in ("cuda_oom", "host_oom"):
            ends.append((min(timings.failure_after, train), outcome))
        max_runtime = job.payload.get("StoppingCondition", {}).get("MaxRuntimeInSeconds")
        if max_runtime:
            ends.append((max_runtime - (now - (job.started_at or now)), "max_runtime"))
        limit = (job.timeout or {}).get("attemptDurationSeconds")
        if limit:
            ends.append((limit - (now - (job.started_at or now)), "timeout"))
        delay, kind = min(ends, key=lambda e: e[0])
        if kind == "ok" and timings.uploading > 0:
            self.engine.schedule(train, self._uploading, arg)
        if delay != float("inf"):
            self.engine.schedule(delay, self._attempt_end, (job, epoch, kind))
        if self.metrics_writer is not None:
            self._meter(job)

    def _checkpoint(self, arg: tuple[Job, int, float]) -> None:
        """A running trainer writes a checkpoint holding ``progress`` training seconds."""
        job, epoch, progress = arg
        if job.epoch != epoch or job.status != RUNNING:
            return
        uri = self._checkpoint_uri(job)
        interval = self.options.timings.checkpoint_interval
        if uri is None or not self._writes_checkpoint(job, progress):
            return  # a hung or idle trainer makes no progress, so it writes no more checkpoints
        self.checkpoints[uri] = max(self.checkpoints.get(uri, 0.0), progress)
        if self.checkpoint_writer is not None:
            self.checkpoint_writer(uri, self.ms() / 1000, progress)
        if progress + interval < job.duration:
            self.engine.schedule(interval, self._checkpoint, (job, epoch, progress + interval))

    # ------------------------------------------------------------------------------ GPU metrics
    def training_progress(self, job: Job, at: float | None = None) -> float | None:
        """Seconds of training a RUNNING job has done at ``at`` (default now), its checkpoints included."""
        if job.status != RUNNING or job.training_since is None:
            return None
        return job.saved + ((self.engine.now if at is None else at) - job.training_since)

    def host_readings(self, job: Job, at: float | None = None) -> list[gpu_metrics.HostReading]:
        """What each host of a RUNNING job publishes at ``at`` (default now); [] when it is not training."""
        progress = self.training_progress(job, at)
        if progress is None:
            return []
        when = self.engine.now if at is None else at
        shape = gpu_metrics.TrainerShape.of(job.gpu_key)
        return [
            gpu_metrics.reading(job.gpu_key, host, when, progress, job.instance_type, job.gpu, shape)
            for host in range(1, job.count + 1)
        ]

    def _meter(self, job: Job) -> None:
        self._metered[job.id] = job
        if not self._metrics_pending:
            self._metrics_pending = True
            interval = self.options.timings.metrics_interval
            due = (self.engine.now // interval + 1) * interval
            self.engine.schedule_at(due, self._publish_metrics)

    def _publish_metrics(self, _: Any = None) -> None:
        """Every host of every RUNNING job publishes its instance metrics; stops when none is running."""
        self._metrics_pending = False
        for job_id in [i for i, j in self._metered.items() if j.status != RUNNING]:
            del self._metered[job_id]
        writer = self.metrics_writer
        if not self._metered or writer is None:
            return
        stamp = self.ms() / 1000
        data: list[dict[str, Any]] = []
        for job in self._metered.values():
            data += gpu_metrics.metric_data(job.training_job().name, self.host_readings(job), stamp)
        writer(data)
        self._metrics_pending = True
        self.engine.schedule(self.options.timings.metrics_interval, self._publish_metrics)

    def _writes_checkpoint(self, job: Job, progress: float) -> bool:
        """Whether the trainer writes the checkpoint holding ``progress`` s (not once hung or idle)."""
        idle_after = job.gpu.idle_after
        return not (job.gpu.hung_at(progress) or (idle_after is not None and progress > idle_after))

    @staticmethod
    def _checkpoint_uri(job: Job) -> str | None:
        config = job.payload.get("CheckpointConfig")
        uri = config.get("S3Uri") if isinstance(config, dict) else None
        return str(uri) if uri else None

    def _uploading(self, arg: tuple[Job, int]) -> None:
        job, epoch = arg
        if job.epoch == epoch:
            self._tj_status(
                job.training_job(), "InProgress", "Uploading", "Uploading generated training model"
            )

    def _spot(self, arg: tuple[Job, int]) -> None:
        job, epoch = arg
        if job.epoch != epoch:
            return
        tj = job.training_job()
        self._tj_status(
            tj, "InProgress", "Interrupted", "Training job interrupted; spot capacity was reclaimed"
        )
        self._tj_status(tj, "InProgress", "Starting", "Launching requested ML instances")
        self.engine.schedule(self.options.timings.spot_restart, self._spot_resumed, arg)

    def _spot_resumed(self, arg: tuple[Job, int]) -> None:
        job, epoch = arg
        if job.epoch == epoch:
            self._tj_status(job.training_job(), "InProgress", "Training", "Training resumed from checkpoint")

    def _capacity_error(self, arg: tuple[Job, int]) -> None:
        job, epoch = arg
        if job.epoch != epoch:
            return
        tj = job.training_job()
        tj.failure_reason = texts.CAPACITY_ERROR
        self._tj_status(tj, "Failed", "Failed", "Training job failed")
        self._release(job)
        job.capacity_seconds += self.engine.now - (
            job.scheduled_at if job.scheduled_at is not None else self.engine.now
        )
        job.epoch += 1
        action = self._time_limit_action(job, texts.CAPACITY_CODE)
        if action is not None:
            self._terminate_by_limit(job, action)
            return
        job.status = RUNNABLE
        job.reason = texts.CAPACITY_REQUEUE
        self._enqueue(job)
        self._emit(job)

    def _attempt_end(self, arg: tuple[Job, int, str]) -> None:
        job, epoch, kind = arg
        if job.epoch != epoch:
            return
        tj = job.training_job()
        nodes = job.count
        if kind == "ok":
            self._tj_status(tj, "Completed", "Completed", "Training job completed")
            reason = texts.sagemaker(texts.COMPLETED)
        elif kind == "timeout":
            self._tj_status(tj, "Stopped", "Stopped", "Training job stopped")
            reason = texts.ATTEMPT_TIMEOUT
        elif kind == "max_runtime":
            self._tj_status(tj, "Stopped", "MaxRuntimeExceeded", "Training job stopped: MaxRuntimeExceeded")
            reason = texts.sagemaker(texts.MAX_RUNTIME)
        else:
            failure = {
                "internal": texts.INTERNAL_ERROR,
                "cuda_oom": texts.CUDA_OOM.format(nodes=nodes),
                "host_oom": texts.HOST_OOM,
            }[kind]
            tj.failure_reason = texts.truncate(failure)
            self._tj_status(tj, "Failed", "Failed", "Training job failed")
            reason = texts.sagemaker(tj.failure_reason)
        self._release(job)
        self._end_attempt(job, reason, succeeded=kind == "ok")

    def _end_attempt(self, job: Job, reason: str, succeeded: bool = False) -> None:
        """Record a finished attempt and decide: done, retry or fail."""
        now = self.engine.now
        job.epoch += 1
        job.attempts.append(self._attempt(job, now, reason))
        job.stopped_at = now
        if succeeded:
            self._finish(job, SUCCEEDED, reason)
            return
        if job.terminated:
            self._finish(job, FAILED, reason)
            return
        retry = job.retry or {}
        action = retry_action(retry.get("evaluateOnExit", []), reason)
        if action == "EXIT" or len(job.attempts) >= retry.get("attempts", 1):
            self._finish(job, FAILED, reason)
            return
        job.status = RUNNABLE
        job.reason = reason
        job.wait_since = now
        self._enqueue(job)
        self._emit(job)

    def _attempt(self, job: Job, stopped: float, reason: str) -> dict[str, Any]:
        return {
            "arn": job.training.arn if job.training else None,
            "startedAt": job.started_at if job.started_at is not None else job.scheduled_at,
            "stoppedAt": stopped,
            "statusReason": reason,
        }

    def _finish(self, job: Job, status: str, reason: str) -> None:
        job.epoch += 1
        job.status = status
        job.reason = reason
        job.stopped_at = self.engine.now
        job.queue.scheduler.on_finish(job)
        self.finished += 1
        if self.observer is not None:
            self.observer("finish", job)
        self._emit(job)

    def preempt(self, job: Job, reason: str) -> None:
        """Stop a running job its queue's scheduler chose as a victim and queue it again (or end it).

        It keeps what its checkpoints saved; past ``preemptionRetriesBeforeTermination`` it ends FAILED.
        """
        now = self.engine.now
        if self.bus.active:
            self.bus.publish(
                ev.BATCH_PREEMPTION_STARTED,
                "aws.batch",
                [job.arn],
                wire.preemption_started_detail(job, reason),
                self.ms(),
            )
        if self.observer is not None:
            self.observer("preempt", job)
        tj = job.training
        if tj is not None:
            self._tj_status(tj, "Stopped", "Stopped", "Training job stopped")
        self._keep_checkpointed_progress(job, now)
        self._release(job)
        job.epoch += 1
        job.preempted_count += 1
        job.preempted.append(self._attempt(job, now, reason))
        del job.preempted[: -self.options.recent_preemptions]
        limit = (job.preemption or {}).get("preemptionRetriesBeforeTermination")
        if limit is not None and job.preempted_count > limit:
            job.stopped_at = now
            self._finish(job, FAILED, reason)
        else:
            job.status = RUNNABLE
            job.reason = reason
            job.wait_since = now
            self._enqueue(job)
            self._emit(job)
        if self.bus.active:
            self.bus.publish(
                ev.BATCH_PREEMPTION_COMPLETED,
                "aws.batch",
                [job.arn],
                wire.preemption_completed_detail(self, job),
                self.ms(),
            )

    def unsaved_seconds(self, job: Job, now: float) -> float:
        """Seconds of this attempt a stop would lose now: since dispatch, less what checkpoints keep."""
        held = now - (job.scheduled_at if job.scheduled_at is not None else now)
        interval = self.options.timings.checkpoint_interval
        if (
            job.status == RUNNING
            and job.training_since is not None
            and interval > 0
            and "CheckpointConfig" in job.payload
        ):
            held -= ((now - job.training_since) // interval) * interval
        return max(0.0, held)

    def last_checkpoint_at(self, job: Job) -> float | None:
        """When the current attempt last checkpointed (None: not yet, or it has no CheckpointConfig)."""
        interval = self.options.timings.checkpoint_interval
        if job.training_since is None or interval <= 0 or "CheckpointConfig" not in job.payload:
            return None
        saves = (self.engine.now - job.training_since) // interval
        while saves >= 1 and not self._writes_checkpoint(job, job.saved + saves * interval):
            saves -= 1  # a hung or idle trainer wrote none after it stopped making progress
        return job.training_since + saves * interval if saves >= 1 else None

    def requeue_from_checkpoint(self, job: Job, reason: str, priority: int | None = None) -> None:
        """What the control plane's reclaim does to a victim: TerminateServiceJob, then resubmit its payload.

        Modelled as one job that keeps its identity (a what-if counts its wait once) and the progress
        its checkpoints kept, queued as a new submission would be (after the jobs of its share with
        the same priority), at ``priority`` when given (the requeue path's). A job that is not
        dispatched is left alone.
        """
        if job.status not in DISPATCHED:
            return
        now = self.engine.now
        if self.observer is not None:
            self.observer("reclaim", job)
        tj = job.training
        if tj is not None:
            self._tj_status(tj, "Stopped", "Stopped", "Training job stopped")
        self._keep_checkpointed_progress(job, now)
        self._release(job)
        job.epoch += 1
        job.attempts.append(self._attempt(job, now, reason))
        self._job_seq += 1
        job.seq = self._job_seq
        if priority is not None:
            job.priority = priority
        job.status = RUNNABLE
        job.reason = reason
        job.wait_since = now
        self._enqueue(job)
        self._emit(job)

    def terminate(self, job: Job, reason: str) -> None:
        """TerminateServiceJob: stop it wherever it is; it ends FAILED and is never retried."""
        if job.status in FINAL:
            return
        job.terminated = True
        if job.status in DISPATCHED:
            tj = job.training
            if tj is not None:
                self._tj_status(tj, "Stopping", "Stopping", "Stopping the training job")
                self._tj_status(tj, "Stopped", "Stopped", "Training job stopped")
            self._release(job)
            self._end_attempt(job, reason)
            return
        self._finish(job, FAILED, reason)
        self.request_pass()

    def stop_training_job(self, tj: TrainingJob) -> None:
        """StopTrainingJob: the attempt ends Stopped and goes through the job's retry strategy."""
        job = tj.job
        if job.training is not tj or job.status not in DISPATCHED:
            return
        self._tj_status(tj, "Stopping", "Stopping", "Stopping the training job")
        self._tj_status(tj, "Stopped", "Stopped", "Training job stopped")
        self._release(job)
        self._end_attempt(job, texts.sagemaker(texts.STOPPED))

    # ------------------------------------------------------------------------ job state limits
    def _blocked_reason(self, queue: JobQueue, job: Job) -> str | None:
        if job.reason and job.reason.startswith(texts.CAPACITY_CODE):
            return texts.CAPACITY_REQUEUE
        if self._never_fits(queue, job):
            return texts.SERVICE_ENVIRONMENT_MAX
        return queue.scheduler.blocked_reason(job)

    def _time_limit_action(self, job: Job, code: str | None) -> dict[str, Any] | None:
        for action in job.queue.time_limits:
            if action["state"] != RUNNABLE:
                continue
            if self.options.time_limit_on_blocked_only and (code is None or action["reason"] != code):
                continue
            if code == texts.CAPACITY_CODE:
                waited = job.capacity_seconds
            else:
                waited = self.engine.now - job.wait_since
            if waited >= action["maxTimeSeconds"]:
                return action
        return None

    def _terminate_by_limit(self, job: Job, action: dict[str, Any]) -> None:
        job.terminated = True
        self._finish(job, FAILED, texts.TIME_LIMIT + action["reason"])
        self.request_pass()

    def heads(self, queue: JobQueue) -> list[Job]:
        """The jobs the scheduler would try next: one per queue, or one per quota share."""
        return queue.scheduler.heads()

    def _check_heads(self, queue: JobQueue) -> None:
        for job in self.heads(queue):
            blocked = self._blocked_reason(queue, job)
            if blocked is not None and job.blocked != blocked:
                job.blocked = blocked
                if self.bus.active:
                    detail = wire.queue_blocked_detail(self, job, blocked)
                    # The service job's ARN alone (batch-service-job-queue-blocked-events.html); the
                    # queue's ARN is in the detail's jobQueue.
                    self.bus.publish(ev.BATCH_QUEUE_BLOCKED, "aws.batch", [job.arn], detail, self.ms())
            code = blocked.split(" - ")[0] if blocked else None
            action = self._time_limit_action(job, code)
            if action is not None:
                self._terminate_by_limit(job, action)
                continue
            for action in queue.time_limits:
                due = job.wait_since + action["maxTimeSeconds"]
                if due > self.engine.now and due not in queue.timer_at:
                    queue.timer_at.add(due)
                    self.engine.schedule_at(due, self._timer, (queue, due))

    def _timer(self, arg: tuple[JobQueue, float]) -> None:
        queue, due = arg
        queue.timer_at.discard(due)
        self.request_pass()

    # --------------------------------------------------------------------------- SageMaker side
    def _tj_status(self, tj: TrainingJob, status: str, secondary: str, message: str) -> None:
        now = self.engine.now
        if tj.transitions and tj.transitions[-1][2] is None:
            tj.transitions[-1][2] = now
        final = status in ("Completed", "Failed", "Stopped")
        tj.transitions.append([secondary, now, now if final else None, message])
        tj.status = status
        tj.secondary = secondary
        tj.modified = now
        if final:
            tj.ended = now
        self._emit_tj(tj)

    # ------------------------------------------------------------------------------ describing
    def _keep_checkpointed_progress(self, job: Job, now: float) -> None:
        """A preempted trainer that checkpoints resumes from its last checkpoint, not from the start."""
        interval = self.options.timings.checkpoint_interval
        if job.status != RUNNING or job.training_since is None or interval <= 0:
            return
        if "CheckpointConfig" not in job.payload:
            return
        saves = (now - job.training_since) // interval
        while saves >= 1 and not self._writes_checkpoint(job, job.saved + saves * interval):
            saves -= 1
        job.saved = min(job.duration, job.saved + saves * interval)
        job.training_since = None
        uri = self._checkpoint_uri(job)
        if uri is not None:
            self.checkpoints[uri] = max(self.checkpoints.get(uri, 0.0), job.saved)

    @property
    def spot_billable_fraction(self) -> float:
        """What a managed spot training job is billed for, as a fraction of its training time."""
        return self.options.spot_billable_fraction

    # --------------------------------------------------------------------------------- events
    def subscribe(self, listener: ev.Listener) -> None:
        """Deliver every event (full EventBridge envelope) to ``listener``."""
        self.bus.subscribe(listener)

    def _emit(self, job: Job) -> None:
        if self.bus.active:
            self.bus.publish(
                ev.BATCH_STATE, "aws.batch", [job.arn], wire.describe_job(self, job, event=True), self.ms()
            )

    def _emit_tj(self, tj: TrainingJob) -> None:
        if self.bus.active:
            self.bus.publish(
                ev.SAGEMAKER_STATE,
                "aws.sagemaker",
                [tj.arn],
                wire.describe_training_job(self, tj, event=True),
                self.ms(),
            )

    # -------------------------------------------------------------------------------- summary
    def share_instance_seconds(self, queue: JobQueue) -> dict[str, float]:
        """Instance-seconds each share has held so far (finished holds plus the running ones)."""
        now = self.engine.now
        scheduler = queue.scheduler
        out = scheduler.held_by_share()
        for job in self.jobs.values():
            if job.queue is queue and job.status in DISPATCHED and job.scheduled_at is not None:
                key = scheduler.share_of(job)
                if key is not None:
                    out[key] = out.get(key, 0.0) + job.count * (now - job.scheduled_at)
        return out
