"""The model's resources and their state: environments, policies, queues, shares and jobs.

Plain records the model, the schedulers (``schedulers.py``) and the AWS shapes (``wire.py``) all
read and write; the behaviour lives with them, so this module imports none of them.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from shareplane.domain.shares import fairshare

from .gpu_metrics import BUSY

NUM_INSTANCES = "NUM_INSTANCES"


class QueueScheduler(Protocol):
    """What the model and the API ask of a queue's scheduler (``schedulers.Scheduler`` implements it).

    A protocol, so a queue can hold its scheduler without this module importing ``schedulers.py``,
    which imports these records.
    """

    kind: ClassVar[str]

    def enqueue(self, job: Job) -> None: ...

    def run_pass(self) -> None: ...

    def heads(self) -> list[Job]: ...

    def front_of_queue(self, runnable: list[Job]) -> list[Job]: ...

    def on_runnable(self, job: Job) -> None: ...

    def on_dispatch(self, job: Job, now: float) -> None: ...

    def on_release(self, job: Job, now: float, held: float) -> None: ...

    def on_finish(self, job: Job) -> None: ...

    def blocked_reason(self, job: Job) -> str | None: ...

    def held_by_share(self) -> dict[str, float]: ...

    def share_of(self, job: Job) -> str | None: ...


class ServiceEnvironment:
    """A SAGEMAKER_TRAINING service environment and the instances its jobs hold."""

    def __init__(self, name: str, arn: str, limits: dict[str, int], state: str, tags: dict[str, str]) -> None:
        self.name = name
        self.arn = arn
        self.limits = limits
        self.state = state
        self.status = "VALID"
        self.tags = tags
        self.in_use: dict[str, int] = {}

    def unit_for(self, instance_type: str) -> str:
        """The capacity unit a job of this instance type consumes here."""
        return NUM_INSTANCES if NUM_INSTANCES in self.limits else instance_type


class SchedulingPolicy:
    """A fair-share or quota-share scheduling policy."""

    def __init__(self, name: str, arn: str, tags: dict[str, str]) -> None:
        self.name = name
        self.arn = arn
        self.tags = tags
        self.fairshare: dict[str, Any] | None = None
        self.quota: dict[str, Any] | None = None
        self.decay_window = fairshare.MIN_DECAY_WINDOW_SECONDS
        self.compute_reservation = 0
        self.weights: tuple[fairshare.ShareWeight, ...] = ()

    def set_fairshare(self, policy: dict[str, Any]) -> None:
        """Install a fairsharePolicy dict (already validated)."""
        self.fairshare = policy
        self.decay_window = fairshare.decay_window(policy.get("shareDecaySeconds", 0))
        self.compute_reservation = policy.get("computeReservation", 0)
        self.weights = tuple(
            fairshare.ShareWeight(d["shareIdentifier"], float(d.get("weightFactor", 1.0)))
            for d in policy.get("shareDistribution", [])
        )


class FairShare:
    """One share identifier inside a fair-share queue: its jobs and its decayed usage."""

    __slots__ = (
        "name",
        "heap",
        "usage",
        "t0",
        "rate",
        "weight",
        "active",
        "counted",
        "idle_epoch",
        "held_seconds",
    )

    def __init__(self, name: str, weight: float) -> None:
        self.name = name
        self.heap: list[tuple[int, int, int, Job]] = []
        self.usage = 0.0
        self.t0 = 0.0
        self.rate = 0.0
        self.weight = weight
        self.active = 0
        #: Counted in the queue's active shares: it has jobs, or its decay window has not passed yet.
        self.counted = False
        self.idle_epoch = 0
        self.held_seconds = 0.0

    def usage_at(self, now: float, window: float) -> float:
        """Its decayed usage brought up to ``now`` (and kept, so the next call accrues from here)."""
        if self.t0 != now:
            self.usage = fairshare.accrue(self.usage, self.rate, now - self.t0, window)
            self.t0 = now
        return self.usage


class QuotaShare:
    """A quota share: a virtual queue with per-instance-type limits, lending and borrowing."""

    def __init__(self, name: str, arn: str, queue: JobQueue, spec: dict[str, Any]) -> None:
        self.name = name
        self.arn = arn
        self.queue = queue
        self.tags: dict[str, str] = spec.get("tags", {})
        self.heap: list[tuple[int, int, int, Job]] = []
        self.in_use: dict[str, int] = {}
        self.running: set[Job] = set()
        self.status = "VALID"
        self.held_seconds = 0.0
        self.apply(spec)

    def apply(self, spec: dict[str, Any]) -> None:
        """Install (part of) a Create/UpdateQuotaShare request."""
        if "capacityLimits" in spec:
            self.capacity_limits = [dict(c) for c in spec["capacityLimits"]]
            self.limits = {c["capacityUnit"]: int(c["maxCapacity"]) for c in spec["capacityLimits"]}
        if "resourceSharingConfiguration" in spec:
            rsc = dict(spec["resourceSharingConfiguration"])
            if rsc["strategy"] == "LEND_AND_BORROW":
                rsc.setdefault("borrowLimit", -1)
            self.sharing = rsc
        if "preemptionConfiguration" in spec:
            self.preemption = dict(spec["preemptionConfiguration"])
        self.state = spec.get("state", getattr(self, "state", "ENABLED"))

    @property
    def strategy(self) -> str:
        """RESERVE, LEND or LEND_AND_BORROW."""
        return self.sharing["strategy"]

    @property
    def lends(self) -> bool:
        """Whether its idle capacity may be borrowed by other shares."""
        return self.sharing["strategy"] != "RESERVE"

    def borrow_cap(self, unit: str) -> float:
        """The most it may hold beyond its own limit of ``unit``."""
        if self.sharing["strategy"] != "LEND_AND_BORROW":
            return 0.0
        pct = self.sharing.get("borrowLimit", -1)
        if pct == -1:
            return float("inf")
        return self.limits.get(unit, 0) * pct / 100.0


class JobQueue:
    """A SAGEMAKER_TRAINING job queue over an ordered list of service environments."""

    def __init__(self, name: str, arn: str, seq: int, policy: SchedulingPolicy | None) -> None:
        self.name = name
        self.arn = arn
        self.seq = seq
        self.priority = 1
        self.state = "ENABLED"
        self.status = "VALID"
        self.tags: dict[str, str] = {}
        self.environments: list[ServiceEnvironment] = []
        #: The Batch resource (its parameters); it may be replaced by a policy of the same kind.
        self.policy = policy
        self.time_limits: list[dict[str, Any]] = []
        self.shares: dict[str, FairShare] = {}
        self.active_shares = 0
        self.quota_shares: dict[str, QuotaShare] = {}
        self.timer_at: set[float] = set()
        #: Chosen once by ``BatchModel.add_queue`` from the policy's kind, which never changes.
        self.scheduler: QueueScheduler

    @property
    def kind(self) -> str:
        """FIFO, FAIRSHARE or QUOTA."""
        return self.scheduler.kind


class TrainingJob:
    """The SageMaker training job one dispatch created."""

    __slots__ = (
        "name",
        "arn",
        "job",
        "status",
        "secondary",
        "failure_reason",
        "transitions",
        "created",
        "started",
        "ended",
        "modified",
        "payload",
    )

    def __init__(self, name: str, arn: str, job: Job, now: float) -> None:
        self.name = name
        self.arn = arn
        self.job = job
        self.status = "InProgress"
        self.secondary = "Pending"
        self.failure_reason: str | None = None
        self.transitions: list[list[Any]] = [["Pending", now, None, "Preparing the instances for training"]]
        self.created = now
        self.started: float | None = None
        self.ended: float | None = None
        self.modified = now
        self.payload = job.payload


class Job:
    """One service job: its request, where it is in its lifecycle, and its history."""

    __slots__ = (
        "id",
        "arn",
        "name",
        "queue",
        "share",
        "fshare",
        "qshare",
        "priority",
        "seq",
        "created",
        "status",
        "reason",
        "payload",
        "payload_text",
        "instance_type",
        "count",
        "units",
        "duration",
        "retry",
        "timeout",
        "preemption",
        "tags",
        "attempts",
        "preempted",
        "preempted_count",
        "training",
        "scheduled_at",
        "started_at",
        "stopped_at",
        "terminated",
        "epoch",
        "wait_since",
        "env",
        "unit",
        "qver",
        "script",
        "outcome",
        "blocked",
        "dispatches",
        "first_dispatch",
        "client_token",
        "saved",
        "training_since",
        "capacity_seconds",
        "invalid",
        "judged",
        "gpu",
        "gpu_key",
    )

    def __init__(self) -> None:
        self.attempts: list[dict[str, Any]] = []
        self.preempted: list[dict[str, Any]] = []
        self.preempted_count = 0
        self.training: TrainingJob | None = None
        self.scheduled_at: float | None = None
        self.started_at: float | None = None
        self.stopped_at: float | None = None
        self.terminated = False
        self.epoch = 0
        self.env: ServiceEnvironment | None = None
        self.unit: str | None = None
        self.qver = 0
        self.outcome = "ok"
        self.blocked: str | None = None
        self.dispatches = 0
        self.first_dispatch: float | None = None
        self.reason: str | None = None
        self.fshare: FairShare | None = None
        self.qshare: QuotaShare | None = None
        self.saved = 0.0  # training seconds kept in checkpoints across preempted attempts
        self.training_since: float | None = None
        #: Seconds spent in SCHEDULED before capacity failures: what the capacity time limit compares.
        self.capacity_seconds = 0.0
        #: Why the payload cannot be read at all (SageMaker rejects it at dispatch); None when it can.
        self.invalid: str | None = None
        #: Submitted through SubmitServiceJob, so SageMaker judges the payload at dispatch (a what-if's
        #: own jobs carry only the members the model reads).
        self.judged = False
        #: What the trainer does with its GPUs (gpu_metrics.py): busy unless scripted idle or hung.
        self.gpu = BUSY
        #: The integer the job's metric values derive from (set at submission).
        self.gpu_key = 0
