"""The model's resources and their state: environments, policies, queues, shares and jobs.

Plain records the model, the schedulers (``schedulers.py``) and the AWS shapes (``wire.py``) all
read and write; the behaviour lives with them, so this module imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from shareplane.domain.shares import fairshare as fairshare_rules

from .gpu_metrics import GpuScript

NUM_INSTANCES = "NUM_INSTANCES"
#: A queued job in a scheduler's heap: ``(-priority, seq, qver, job)``; an entry whose ``qver`` is
#: no longer the job's is stale and skipped.
QueueEntry = tuple[int, int, int, "Job"]


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


@dataclass(slots=True, eq=False)
class ServiceEnvironment:
    """A SAGEMAKER_TRAINING service environment and the instances its jobs hold."""

    name: str
    arn: str
    #: Instances of each capacity unit (NUM_INSTANCES, or an instance type) its jobs may hold at once.
    limits: dict[str, int]
    state: str
    tags: dict[str, str]
    status: str = "VALID"
    in_use: dict[str, int] = field(default_factory=dict)

    def unit_for(self, instance_type: str) -> str:
        """The capacity unit a job of this instance type consumes here."""
        return NUM_INSTANCES if NUM_INSTANCES in self.limits else instance_type


@dataclass(slots=True, eq=False)
class SchedulingPolicy:
    """A fair-share or quota-share scheduling policy."""

    name: str
    arn: str
    tags: dict[str, str]
    #: The fairsharePolicy or quotaSharePolicy as requested (the other one is None).
    fairshare: dict[str, Any] | None = None
    quota: dict[str, Any] | None = None
    decay_window: float = fairshare_rules.MIN_DECAY_WINDOW_SECONDS
    compute_reservation: int = 0
    weights: tuple[fairshare_rules.ShareWeight, ...] = ()

    def set_fairshare(self, policy: dict[str, Any]) -> None:
        """Install a fairsharePolicy dict (already validated)."""
        self.fairshare = policy
        self.decay_window = fairshare_rules.decay_window(policy.get("shareDecaySeconds", 0))
        self.compute_reservation = policy.get("computeReservation", 0)
        self.weights = tuple(
            fairshare_rules.ShareWeight(d["shareIdentifier"], float(d.get("weightFactor", 1.0)))
            for d in policy.get("shareDistribution", [])
        )


@dataclass(slots=True, eq=False)
class FairShare:
    """One share identifier inside a fair-share queue: its jobs and its decayed usage."""

    name: str
    weight: float
    #: Its runnable jobs, ordered by (-priority, order within the share, seq): the scheduler's heap.
    heap: list[QueueEntry] = field(default_factory=list)
    usage: float = 0.0
    t0: float = 0.0
    rate: float = 0.0
    active: int = 0
    #: Counted in the queue's active shares: it has jobs, or its decay window has not passed yet.
    counted: bool = False
    idle_epoch: int = 0
    held_seconds: float = 0.0

    def usage_at(self, now: float, window: float) -> float:
        """Its decayed usage brought up to ``now`` (and kept, so the next call accrues from here)."""
        if self.t0 != now:
            self.usage = fairshare_rules.accrue(self.usage, self.rate, now - self.t0, window)
            self.t0 = now
        return self.usage


class QuotaShare:
    """A quota share: a virtual queue with per-instance-type limits, lending and borrowing.

    Built from a CreateQuotaShare request, which names every part ``apply`` installs.
    """

    __slots__ = (
        "name",
        "arn",
        "queue",
        "tags",
        "heap",
        "in_use",
        "running",
        "status",
        "held_seconds",
        "capacity_limits",
        "limits",
        "sharing",
        "preemption",
        "state",
    )

    def __init__(self, name: str, arn: str, queue: JobQueue, spec: dict[str, Any]) -> None:
        self.name = name
        self.arn = arn
        self.queue = queue
        self.tags: dict[str, str] = spec.get("tags", {})
        self.heap: list[QueueEntry] = []
        self.in_use: dict[str, int] = {}
        self.running: set[Job] = set()
        self.status = "VALID"
        self.held_seconds = 0.0
        self.capacity_limits: list[dict[str, Any]] = []
        self.limits: dict[str, int] = {}
        self.sharing: dict[str, Any] = {}
        self.preemption: dict[str, Any] = {}
        self.state = "ENABLED"
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
        self.state = spec.get("state", self.state)

    @property
    def strategy(self) -> str:
        """RESERVE, LEND or LEND_AND_BORROW."""
        return str(self.sharing["strategy"])

    @property
    def lends(self) -> bool:
        """Whether its idle capacity may be borrowed by other shares."""
        return bool(self.sharing["strategy"] != "RESERVE")

    def borrow_cap(self, unit: str) -> float:
        """The most it may hold beyond its own limit of ``unit``."""
        if self.sharing["strategy"] != "LEND_AND_BORROW":
            return 0.0
        pct = self.sharing.get("borrowLimit", -1)
        if pct == -1:
            return float("inf")
        return self.limits.get(unit, 0) * float(pct) / 100.0


@dataclass(slots=True, eq=False)
class JobQueue:
    """A SAGEMAKER_TRAINING job queue over an ordered list of service environments.

    Its scheduler is chosen once by ``BatchModel.add_queue`` from the policy's kind, which never
    changes; until then the queue is not in the model.
    """

    name: str
    arn: str
    seq: int
    #: The Batch resource (its parameters); it may be replaced by a policy of the same kind.
    policy: SchedulingPolicy | None
    priority: int = 1
    state: str = "ENABLED"
    status: str = "VALID"
    tags: dict[str, str] = field(default_factory=dict)
    environments: list[ServiceEnvironment] = field(default_factory=list)
    time_limits: list[dict[str, Any]] = field(default_factory=list)
    shares: dict[str, FairShare] = field(default_factory=dict)
    active_shares: int = 0
    quota_shares: dict[str, QuotaShare] = field(default_factory=dict)
    timer_at: set[float] = field(default_factory=set)
    scheduler: QueueScheduler = field(init=False)

    @property
    def kind(self) -> str:
        """FIFO, FAIRSHARE or QUOTA."""
        return self.scheduler.kind


@dataclass(slots=True, eq=False)
class TrainingJob:
    """The SageMaker training job one dispatch created."""

    name: str
    arn: str
    job: Job = field(repr=False)
    created: float
    status: str = "InProgress"
    secondary: str = "Pending"
    failure_reason: str | None = None
    #: [secondary status, start, end, message] for each SecondaryStatusTransition.
    transitions: list[list[Any]] = field(default_factory=list)
    started: float | None = None
    ended: float | None = None
    modified: float = 0.0
    payload: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.transitions.append(["Pending", self.created, None, "Preparing the instances for training"])
        self.modified = self.created
        self.payload = self.job.payload


@dataclass(slots=True, eq=False)
class Job:
    """One service job: its request, where it is in its lifecycle, and its history.

    Identity is the job (``eq=False``): jobs sit in sets and heaps as themselves.
    """

    # -- the request, fixed at submission
    id: str
    arn: str
    name: str
    queue: JobQueue = field(repr=False)
    share: str | None
    qshare: QuotaShare | None = field(repr=False)
    priority: int
    seq: int
    created: float
    payload: dict[str, Any] = field(repr=False)
    payload_text: str | None = field(repr=False)
    instance_type: str
    count: int
    #: What the job counts against a fair share's usage: its instances, or 1 a job.
    units: int
    duration: float
    retry: dict[str, Any] | None
    timeout: dict[str, Any] | None
    preemption: dict[str, Any] | None
    tags: dict[str, str]
    client_token: str | None
    #: What the trainer does with its GPUs (gpu_metrics.py): busy unless scripted idle or hung.
    gpu: GpuScript
    #: The integer the job's metric values derive from (set at submission).
    gpu_key: int
    #: Outcomes forced on its next dispatches (``Faults.scripted``), consumed in order.
    script: list[str] | None
    status: str
    wait_since: float
    # -- where it is in its lifecycle
    reason: str | None = None
    fshare: FairShare | None = field(default=None, repr=False)
    attempts: list[dict[str, Any]] = field(default_factory=list, repr=False)
    preempted: list[dict[str, Any]] = field(default_factory=list, repr=False)
    preempted_count: int = 0
    training: TrainingJob | None = field(default=None, repr=False)
    scheduled_at: float | None = None
    started_at: float | None = None
    stopped_at: float | None = None
    terminated: bool = False
    epoch: int = 0
    env: ServiceEnvironment | None = field(default=None, repr=False)
    #: The capacity unit it holds on ``env`` (NUM_INSTANCES or its instance type), set at dispatch.
    unit: str = ""
    qver: int = 0
    outcome: str = "ok"
    blocked: str | None = None
    dispatches: int = 0
    first_dispatch: float | None = None
    saved: float = 0.0  # training seconds kept in checkpoints across preempted attempts
    training_since: float | None = None
    #: Seconds spent in SCHEDULED before capacity failures: what the capacity time limit compares.
    capacity_seconds: float = 0.0
    #: Why the payload cannot be read at all (SageMaker rejects it at dispatch); None when it can.
    invalid: str | None = None
    #: Submitted through SubmitServiceJob, so SageMaker judges the payload at dispatch (a what-if's
    #: own jobs carry only the members the model reads).
    judged: bool = False

    def training_job(self) -> TrainingJob:
        """The training job its current attempt created: an attempt's own events only run while it has one."""
        if self.training is None:
            raise RuntimeError(f"service job {self.id} has no training job in status {self.status}")
        return self.training
