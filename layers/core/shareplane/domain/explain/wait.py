"""Why is this job waiting: its queue's live state read into a forecast's input, and the reasons in words.

Pure. ``live_from_records`` turns job records (``record.JobRecord``, what ``shareplane jobs`` shows) and
the queue's policy into the ``start_forecast`` input; ``explain_wait`` says what holds one job back
and what would let it start sooner. `shareplane why` and `submit --dry-run` print both with the
forecast.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..config.shares import SchedulingMode, SharesConfig
from ..errors import InvalidInputError
from ..forecast.arrivals import ArrivalKey
from ..forecast.start_forecast import (
    Arrival,
    FinishedRun,
    History,
    LiveQueue,
    QueuedJob,
    QueueKind,
    RunningJob,
    ShareState,
    decayed_usage,
    fair_entitlements,
)
from ..jobs.lifecycle import JobStatus, gpus_per_instance
from ..jobs.service_job_request import ServiceJobRequest
from ..shares import fairshare
from .durations import duration_text
from .record import ENDED, JobRecord

WAITING = frozenset({JobStatus.SUBMITTED, JobStatus.PENDING, JobStatus.RUNNABLE})
#: What holds capacity in a queue without shares (a FIFO queue), as the reasons name it.
NO_SHARE = "jobs without a share"
HOLDING = frozenset({JobStatus.SCHEDULED, JobStatus.STARTING, JobStatus.RUNNING})
#: Finished runs count for the forecast's run times when they ended within this long.
HISTORY_SECONDS = 14 * 86400.0


@dataclass(frozen=True)
class QueuePolicy:
    """What the forecast needs of the queue besides its jobs: kind, capacity, weights or limits."""

    kind: QueueKind
    capacity: int
    weights: Mapping[str, float] = field(default_factory=dict)
    decay_seconds: float = 0.0
    compute_reservation: int = 0
    limits: Mapping[str, int] = field(default_factory=dict)
    borrow: bool = True
    head_of_line_blocking: bool = True


def job_label(record: JobRecord) -> str:
    """A job's name in the forecast as `why` shows it: its name, else its id."""
    return record.name


def job_arn_label(record: JobRecord) -> str:
    """A job's name in the forecast when names may repeat: its ARN."""
    return record.job_arn or record.name


def live_from_records(
    records: Iterable[JobRecord],
    policy: QueuePolicy,
    now: float,
    *,
    arrivals_since: float | None = None,
    name_of: Callable[[JobRecord], str] = job_label,
    finished_arrivals: Sequence[Arrival] | None = None,
    complete_since: float | None = None,
) -> tuple[LiveQueue, History]:
    """The queue at ``now`` and its history, from its job records (other queues' records left out).

    ``arrivals_since``: since when the records hold every submission (default: since the oldest
    record, true of the whole table); the forecast measures the arrival rate over no more.
    ``name_of`` names each job in the forecast (the forecast is keyed by it).
    ``finished_arrivals``: the finished jobs' arrivals, counted apart (``counted_arrivals``, the
    watch's and the receipt's bounded read); the records of finished jobs then add only their runs.
    ``complete_since``: since when the records hold every finished job (a bounded read that left the
    older ones out); default: the whole table, so every run that ended in the last HISTORY_SECONDS.
    """
    running: list[RunningJob] = []
    queued: list[QueuedJob] = []
    finished: list[FinishedRun] = []
    arrivals: list[Arrival] = []
    holds_by_share: dict[str, list[tuple[float, float | None, int]]] = {}
    for order, record in enumerate(
        sorted(records, key=lambda r: (r.state.created_at or 0, r.state.job_id or ""))
    ):
        share, instances, state = record.share, record.instances, record.state
        created = (state.created_at or 0) / 1000.0
        if created > now:
            continue
        priority = state.scheduling_priority or 0
        counted = finished_arrivals is not None and state.status in ENDED
        if state.created_at and not counted:  # a record without its submission time is no arrival
            arrivals.append(Arrival(created, share, instances, priority))
        holds = record.holds
        for start, end in holds:
            holds_by_share.setdefault(share, []).append((start, end, instances))
            if end is not None and end <= now and now - end <= HISTORY_SECONDS:
                finished.append(FinishedRun(share, end - start, instances, ended_at=end))
        name = name_of(record)
        if state.status in HOLDING and holds and holds[-1][1] is None:
            running.append(RunningJob(name, share, instances, holds[-1][0]))
        elif state.status in WAITING:
            queued.append(QueuedJob(name, share, instances, priority, created, order))
    window = fairshare.decay_window(policy.decay_seconds) if policy.kind is QueueKind.FAIRSHARE else 0.0
    names = set(policy.weights) | set(policy.limits) | set(holds_by_share) | {j.share for j in queued}
    shares = tuple(
        ShareState(
            name,
            weight_factor=policy.weights.get(name, fairshare.DEFAULT_WEIGHT),
            usage=decayed_usage(holds_by_share.get(name, ()), policy.weights.get(name, 1.0), window, now)
            if window
            else 0.0,
            limit=policy.limits.get(name),
        )
        for name in sorted(names)
    )
    live = LiveQueue(
        now=now,
        capacity=policy.capacity,
        kind=policy.kind,
        shares=shares,
        running=tuple(running),
        queued=tuple(queued),
        decay_seconds=policy.decay_seconds,
        compute_reservation=policy.compute_reservation,
        head_of_line_blocking=policy.head_of_line_blocking,
        borrow=policy.borrow,
    )
    if finished_arrivals is not None:
        arrivals = sorted([*arrivals, *(a for a in finished_arrivals if a.at <= now)], key=lambda a: a.at)
    since = arrivals_since if arrivals_since is not None else arrivals[0].at if arrivals else now
    # The finished runs read are those that ended in the last HISTORY_SECONDS, or since the records
    # are complete if later (``RunTimes.of``: a run started before then is counted from then).
    window = now - HISTORY_SECONDS
    finished_since = window if complete_since is None else max(window, complete_since)
    return live, History(tuple(finished), tuple(arrivals), since, finished_since)


def counted_arrivals(counts: Iterable[tuple[ArrivalKey, int]]) -> list[Arrival]:
    """The arrival counts as the forecast's arrivals: each counted job at the start of its hour."""
    return [
        Arrival(key.hour_ms / 1000.0, key.share, key.instances, key.priority)
        for key, n in counts
        for _ in range(n)
    ]


# ------------------------------------------------------------------------------- explanation
@dataclass(frozen=True)
class Finding:
    """One reason (or one way to start sooner): a stable code and a sentence."""

    code: str
    text: str


@dataclass(frozen=True)
class WaitExplanation:
    """What holds a job back and what would let it start sooner."""

    job: str
    share: str
    instances: int
    free: int
    held_back_by: tuple[Finding, ...]
    sooner: tuple[Finding, ...]


@dataclass(frozen=True)
class HeldRun:
    """What the explanation knows of one running job beyond the forecast's view of it."""

    #: Its instance type (None when its record has not seen one).
    instance_type: str | None = None
    #: When its time limit ends its attempt (epoch s, ``time_limit_ends_at``); None when not known.
    limit_ends_at: float | None = None


@dataclass(frozen=True)
class TypeRoom:
    """One GPU instance type of the queue as a waiting job's team sees it now."""

    instance_type: str
    gpus_per_instance: int
    #: Instances of this type no running job holds (the config's capacity less what runs on it).
    free: int
    #: Instances of this type the job's share may still take (None: no bound but the type's capacity).
    share_room: int | None = None


@dataclass(frozen=True)
class InstanceTypes:
    """The waiting job's instance type, and the GPU types its team may run on with their room now."""

    requested: str
    gpus_per_instance: int
    #: The team's max_instance_count (None: bounded by capacity only).
    max_instances: int | None
    #: Every GPU type of the queue the team may use, the requested one included.
    rooms: tuple[TypeRoom, ...]

    def room(self, instance_type: str) -> TypeRoom | None:
        return next((r for r in self.rooms if r.instance_type == instance_type), None)


def requested_resources(request: ServiceJobRequest | None) -> tuple[str | None, int | None, float | None]:
    """(instance type, instance count, time limit in s) a SubmitServiceJob request asks for.

    The time limit is Batch's ``timeoutConfig.attemptDurationSeconds``: Batch terminates a service job
    attempt that runs past it
    (https://docs.aws.amazon.com/batch/latest/APIReference/API_ServiceJobTimeout.html). Without one, Batch
    defers to SageMaker's own ``StoppingCondition``: ``MaxWaitTimeInSeconds`` for a managed spot job
    (waiting for spot capacity plus running), else ``MaxRuntimeInSeconds``
    (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_StoppingCondition.html). The
    SageMaker fields are read from ``serviceRequestPayload`` (CreateTrainingJob's request as JSON).
    """
    if request is None:
        return None, None, None
    try:
        payload = json.loads(request.service_request_payload)
    except ValueError:
        payload = {}
    payload = payload if isinstance(payload, Mapping) else {}
    resources = payload.get("ResourceConfig") or {}
    instance_type = resources.get("InstanceType")
    count = resources.get("InstanceCount")
    stopping = payload.get("StoppingCondition") or {}
    sagemaker = (
        stopping.get("MaxWaitTimeInSeconds")
        if payload.get("EnableManagedSpotTraining")
        else stopping.get("MaxRuntimeInSeconds")
    )
    batch = (request.timeout_config or {}).get("attemptDurationSeconds")
    limit = batch if batch is not None else sagemaker
    return (
        str(instance_type) if instance_type else None,
        int(count) if count else None,
        float(limit) if limit else None,
    )


def time_limit_ends_at(record: JobRecord, limit_seconds: float | None) -> float | None:
    """When a running job's time limit ends its current attempt (epoch s), or None when not known.

    The limit counts from the attempt's ``startedAt`` (Batch: "measured from the job attempt's
    startedAt timestamp", https://docs.aws.amazon.com/batch/latest/APIReference/API_JobTimeout.html).
    Only a ``startedAt`` of the attempt holding capacity now counts: a job still SCHEDULED has not
    started its clock, so its limit bounds nothing yet. SageMaker's stop and upload after the limit
    take a little longer, which no document bounds; they are not added.
    """
    holds = record.holds
    started = record.state.started_at
    if limit_seconds is None or not holds or holds[-1][1] is not None or started is None:
        return None
    started_s = started / 1000.0
    return started_s + limit_seconds if started_s >= holds[-1][0] else None


def instance_types_for(
    config: SharesConfig,
    share: str,
    requested: str,
    running: Iterable[JobRecord],
    instance_type_of: Mapping[str, str | None] | None = None,
) -> InstanceTypes | None:
    """The GPU instance types a waiting job of ``share`` could run on, with their room now.

    A job spec names one instance type (SageMaker's ResourceConfig.InstanceType), so another type
    means the same job submitted again on it. A type is offered when the team may use it as admission
    allows (``allowed_instance_types``; empty allows every type) and it is entitled to it or may
    borrow it: on a fair-share queue any share runs on capacity no one holds; on a quota-share queue
    the team's entitlement of the type is its share's limit, on top of which only LEND_AND_BORROW
    borrows (``borrow_limit`` percent of it; -1 unbounded). ``running`` are the records of the jobs
    holding capacity now (their instance type and count); ``instance_type_of`` each one's type by job
    ARN where it is known better than its record (its stored request's). None when the requested type
    is not a GPU type of the config.
    """
    key = config.share_key(share)
    team = config.teams.get(key.team) if key else None
    if team is None or requested not in config.instance_types:
        return None
    better = instance_type_of or {}
    held: dict[str, int] = {}
    held_by_share: dict[str, int] = {}
    for record in running:
        kind = better[record.job_arn] if record.job_arn in better else record.instance_type
        if kind is None:
            continue
        held[kind] = held.get(kind, 0) + record.instances
        if record.share == share:
            held_by_share[kind] = held_by_share.get(kind, 0) + record.instances
    quota = config.mode is SchedulingMode.QUOTA
    rooms: list[TypeRoom] = []
    for kind, limits in sorted(config.instance_types.items()):
        gpus = gpus_per_instance(kind)
        if team.allowed_instance_types and kind not in team.allowed_instance_types:
            continue
        own_limit = team.entitlement.get(kind, 0)
        share_room: int | None = None
        if quota and own_limit == 0:
            # As admission refuses it: a quota share with no capacity of a GPU type never runs a job on it.
            continue
        if quota:
            borrows = team.quota.strategy == "LEND_AND_BORROW"
            if borrows and team.quota.borrow_limit == -1:
                share_room = None
            else:
                extra = own_limit * team.quota.borrow_limit // 100 if borrows else 0
                share_room = max(0, own_limit + extra - held_by_share.get(kind, 0))
            if share_room == 0 and kind != requested:
                continue
        rooms.append(TypeRoom(kind, gpus, max(0, limits.capacity - held.get(kind, 0)), share_room))
    return InstanceTypes(requested, gpus_per_instance(requested), team.max_instance_count, tuple(rooms))


def _standing(queue: LiveQueue, share: ShareState, rate: float) -> float:
    window = fairshare.decay_window(queue.decay_seconds)
    return fairshare.standing(share.usage, rate, window)


@dataclass(frozen=True)
class WaitContext:
    """What the rules read of one waiting job: the queue now, the job, and the facts beside them."""

    queue: LiveQueue
    job: QueuedJob
    #: Each share's tier (capacity held is grouped by share and tier).
    tiers: Mapping[str, str]
    #: Each tier's schedulingPriority (a raise the job could ask for).
    tier_priorities: Mapping[str, int]
    #: When its tier may reclaim capacity (None: it never does).
    reclaim_due_at: float | None
    #: Each running job's instance type and time limit, by its name in the queue.
    held_runs: Mapping[str, HeldRun]
    #: The job's instance type and the others its team may use (None: not known).
    instance_types: InstanceTypes | None
    #: Instances held per share now.
    held: Mapping[str, int]
    #: Instances no running job holds.
    free: int
    #: Of those, the ones the job can run on (its own type's, on a queue of several GPU types).
    free_for_job: int
    shares: Mapping[str, ShareState]
    #: The jobs of its share that go first (higher priority, or submitted earlier).
    ahead: tuple[QueuedJob, ...]

    @property
    def short(self) -> bool:
        """Whether too few instances are free for the job now."""
        return self.free_for_job < self.job.instances


def wait_context(
    queue: LiveQueue,
    job: QueuedJob,
    *,
    tier_of: Mapping[str, str] | None = None,
    tier_priorities: Mapping[str, int] | None = None,
    reclaim_due_at: float | None = None,
    held_runs: Mapping[str, HeldRun] | None = None,
    instance_types: InstanceTypes | None = None,
) -> WaitContext:
    """The facts the rules read, computed once from the queue for ``job``."""
    held: dict[str, int] = {}
    for r in queue.running:
        held[r.share] = held.get(r.share, 0) + r.instances
    free = queue.capacity - sum(held.values())
    own_room = instance_types.room(instance_types.requested) if instance_types else None
    # On a queue of several GPU types the job fits only on its own type's free instances.
    free_for_job = min(free, own_room.free) if own_room else free
    ahead = tuple(
        j
        for j in queue.queued
        if j.share == job.share and j.name != job.name and (-j.priority, j.order) < (-job.priority, job.order)
    )
    return WaitContext(
        queue,
        job,
        tier_of or {},
        tier_priorities or {},
        reclaim_due_at,
        held_runs or {},
        instance_types,
        held,
        free,
        free_for_job,
        {s.name: s for s in queue.shares},
        ahead,
    )


#: A rule: what it finds of one waiting job, in the order it says them (none when it does not apply).
WaitRule = Callable[[WaitContext], Iterator[Finding]]


def never_fits(ctx: WaitContext) -> Iterator[Finding]:
    """The job asks for more instances than the whole queue has."""
    if ctx.job.instances > ctx.queue.capacity:
        yield Finding(
            "never_fits",
            f"it asks for {ctx.job.instances} instances; the queue has {ctx.queue.capacity} in all",
        )


def quota_limit(ctx: WaitContext) -> Iterator[Finding]:
    """On a quota-share queue, the job would take its share past its limit."""
    job, own = ctx.job, ctx.shares.get(ctx.job.share)
    if ctx.queue.kind is not QueueKind.QUOTA or own is None or own.limit is None:
        return
    holds = ctx.held.get(job.share, 0)
    if holds + job.instances <= own.limit:
        return
    if ctx.queue.borrow:
        text = (
            f"its quota share {job.share} holds {holds} of its limit {own.limit}; "
            "beyond it the job runs only on capacity other shares lend"
        )
    else:
        text = (
            f"its quota share {job.share} holds {holds} of its limit {own.limit} "
            "and may not borrow: it waits for its own share's jobs to end"
        )
    yield Finding("quota_limit", text)


def share_over_entitlement(ctx: WaitContext) -> Iterator[Finding]:
    """On a fair-share queue, shares standing lower than the job's are served first."""
    queue, held, own = ctx.queue, ctx.held, ctx.shares.get(ctx.job.share)
    if queue.kind is not QueueKind.FAIRSHARE or own is None:
        return
    active = {s.name: s.weight_factor for s in queue.shares if held.get(s.name) or _has_queued(queue, s.name)}
    entitled = fair_entitlements(queue.capacity, active)
    rates = {s.name: held.get(s.name, 0) * s.weight_factor for s in queue.shares}
    mine = _standing(queue, own, rates.get(own.name, 0.0))
    first = [
        s.name
        for s in queue.shares
        if s.name != own.name
        and _has_queued(queue, s.name)
        and _standing(queue, s, rates.get(s.name, 0.0)) < mine
    ]
    if not first:
        return
    over = held.get(own.name, 0) >= entitled.get(own.name, 0.0)
    lead = (
        f"share {own.name} holds {held.get(own.name, 0)} instances against an entitlement of "
        f"{entitled.get(own.name, 0.0):.1f}"
        if over
        else f"share {own.name} has used more of its entitlement recently than"
    )
    yield Finding("share_over_entitlement", f"{lead}; fair-share serves {', '.join(sorted(first)[:5])} first")


def ahead_in_share(ctx: WaitContext) -> Iterator[Finding]:
    """Jobs of the same share go first (higher priority, or submitted earlier)."""
    if not ctx.ahead:
        return
    n, share = len(ctx.ahead), ctx.job.share
    yield Finding(
        "ahead_in_share",
        f"{n} job(s) of share {share} go first (higher priority or submitted earlier)"
        if share
        # A FIFO queue (the CPU queue) has no shares: one line, in submission order.
        else f"{n} job(s) submitted earlier go first (no shares: first in, first out)",
    )


def capacity_held(ctx: WaitContext) -> Iterator[Finding]:
    """Too few instances are free: who holds them, by share and tier."""
    if not ctx.short:
        return
    by_holder: dict[str, int] = {}
    for r in ctx.queue.running:
        label = f"{r.share}/{ctx.tiers[r.share]}" if r.share in ctx.tiers else r.share or NO_SHARE
        by_holder[label] = by_holder.get(label, 0) + r.instances
    top = ", ".join(f"{k} {v}" for k, v in sorted(by_holder.items(), key=lambda kv: (-kv[1], kv[0]))[:6])
    yield Finding(
        "capacity_held",
        f"it needs {ctx.job.instances} instances and {max(ctx.free_for_job, 0)} are free; held by {top}",
    )


def time_limit(ctx: WaitContext) -> Iterator[Finding]:
    """The latest time enough capacity frees for the job: running jobs' time limits, soonest first.

    Only jobs on the job's own instance type (when it is known) and with a known time limit count;
    the time is when the last of those the job needs reaches its limit, so capacity frees by then
    whatever else ends sooner. Which waiting job takes the freed capacity first is the queue's order,
    which the other findings and the forecast say.
    """
    job, queue = ctx.job, ctx.queue
    if not ctx.short or job.instances > queue.capacity:
        return
    need = job.instances - max(ctx.free_for_job, 0)
    ends: list[tuple[float, str, int]] = []
    for run in queue.running:
        facts = ctx.held_runs.get(run.name)
        if facts is None or facts.limit_ends_at is None:
            continue
        if ctx.instance_types is not None and facts.instance_type != ctx.instance_types.requested:
            continue
        ends.append((facts.limit_ends_at, run.name, run.instances))
    freed = 0
    for n, (at, name, instances) in enumerate(sorted(ends)):
        freed += instances
        if freed >= need:
            before = f"; {n} job(s) before it reach theirs sooner" if n else ""
            left = duration_text(max(0.0, at - queue.now))
            yield Finding(
                "time_limit",
                f"capacity frees by {_iso(at)} at the latest (in {left}): {name} reaches its time limit"
                + before,
            )
            return


def head_of_line(ctx: WaitContext) -> Iterator[Finding]:
    """The queue's next job does not fit, and nothing behind it starts first."""
    if not ctx.queue.head_of_line_blocking:
        return
    blocker = _head_of_line(ctx.queue, ctx.shares, ctx.held)
    if blocker is not None and blocker.name != ctx.job.name and blocker.instances > ctx.free:
        yield Finding(
            "head_of_line",
            f"head-of-line blocked by {blocker.name} (share {blocker.share}), which needs "
            f"{blocker.instances} instances with {max(ctx.free, 0)} free: nothing behind it starts first",
        )


def reclaim_planned(ctx: WaitContext) -> Iterator[Finding]:
    """The job's tier may reclaim capacity lower tiers hold."""
    due, now = ctx.reclaim_due_at, ctx.queue.now
    if due is None:
        return
    when = "is due now" if due <= now else f"becomes due in {duration_text(due - now)}"
    yield Finding("reclaim_planned", f"its tier may reclaim capacity lower tiers hold: a reclaim {when}")


def fewer_instances(ctx: WaitContext) -> Iterator[Finding]:
    """Some instances are free, if fewer than it asks for."""
    if ctx.short and ctx.free_for_job > 0:
        yield Finding("fewer_instances", f"with {ctx.free_for_job} instance(s) it would fit now")


def other_instance_type(ctx: WaitContext) -> Iterator[Finding]:
    """The same job on another GPU type its team may use, with the GPUs it asks for, that fits now.

    The instance count keeps the job's GPUs exactly (a training job's world size is its GPU count),
    so a type whose GPUs per instance do not divide them is not offered; nor one past the team's
    max_instance_count, its share's room on that type, or the type's free instances.
    """
    types = ctx.instance_types
    if not ctx.short or types is None:
        return
    gpus = ctx.job.instances * types.gpus_per_instance
    for room in types.rooms:
        if room.instance_type == types.requested or gpus <= 0 or room.gpus_per_instance <= 0:
            continue
        if gpus % room.gpus_per_instance:
            continue
        count = gpus // room.gpus_per_instance
        if types.max_instances is not None and count > types.max_instances:
            continue
        if count > room.free or (room.share_room is not None and count > room.share_room):
            continue
        yield Finding(
            "other_instance_type",
            f"the same job on {room.instance_type} would fit now: {count} instance(s), {gpus} GPUs "
            f"as asked; {room.free} of that type are free",
        )


def priority_raise(ctx: WaitContext) -> Iterator[Finding]:
    """A higher tier's schedulingPriority would put it ahead of some of its share's jobs."""
    if not ctx.tier_priorities or not ctx.ahead:
        return
    higher = sorted(p for p in ctx.tier_priorities.values() if p > ctx.job.priority)
    if not higher:
        return
    passed = sum(1 for j in ctx.ahead if j.priority < higher[0])
    if passed:
        tier = next(t for t, p in ctx.tier_priorities.items() if p == higher[0])
        yield Finding(
            "priority_raise",
            f"schedulingPriority {higher[0]} ({tier}) would put it ahead of {passed} of those jobs",
        )


#: What holds a job back, in the order the explanation says it.
HELD_BACK_RULES: tuple[WaitRule, ...] = (
    never_fits,
    quota_limit,
    share_over_entitlement,
    ahead_in_share,
    capacity_held,
    time_limit,
    head_of_line,
    reclaim_planned,
)
#: What would let it start sooner, in the order the explanation says it.
SOONER_RULES: tuple[WaitRule, ...] = (fewer_instances, other_instance_type, priority_raise)
#: Said when no rule holds the job back.
NOTHING_HOLDS = Finding(
    "next", "nothing holds it back now: it should start at the queue's next scheduling pass"
)


def explain_wait(
    queue: LiveQueue,
    job_name: str,
    *,
    tier_of: Mapping[str, str] | None = None,
    tier_priorities: Mapping[str, int] | None = None,
    reclaim_due_at: float | None = None,
    held_runs: Mapping[str, HeldRun] | None = None,
    instance_types: InstanceTypes | None = None,
) -> WaitExplanation:
    """Why ``job_name`` (queued in ``queue``) has not started, from the queue's state now.

    ``tier_of`` names each share's tier (capacity held is grouped by share and tier);
    ``tier_priorities`` the schedulingPriority of each tier (a raise the job could ask for);
    ``reclaim_due_at`` when its tier may reclaim capacity (None: it never does);
    ``held_runs`` each running job's instance type and time limit, by its name in ``queue``
    (a time limit pending, ``time_limit``); ``instance_types`` the job's type and the others its team
    may use (another type with room now, ``other_instance_type``). Every rule of ``HELD_BACK_RULES``
    and ``SOONER_RULES`` runs, in that order.
    """
    job = next((j for j in queue.queued if j.name == job_name), None)
    if job is None:
        raise InvalidInputError("job", f"{job_name!r} is not waiting in the queue", "name a RUNNABLE job")
    ctx = wait_context(
        queue,
        job,
        tier_of=tier_of,
        tier_priorities=tier_priorities,
        reclaim_due_at=reclaim_due_at,
        held_runs=held_runs,
        instance_types=instance_types,
    )
    reasons = tuple(found for rule in HELD_BACK_RULES for found in rule(ctx)) or (NOTHING_HOLDS,)
    sooner = tuple(found for rule in SOONER_RULES for found in rule(ctx))
    return WaitExplanation(job.name, job.share, job.instances, ctx.free, reasons, sooner)


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


def _has_queued(queue: LiveQueue, share: str) -> bool:
    return any(j.share == share for j in queue.queued)


def _head_of_line(
    queue: LiveQueue, shares: Mapping[str, ShareState], held: Mapping[str, int]
) -> QueuedJob | None:
    """The job the queue tries next: the lowest-standing share's head (fair-share) or the oldest."""
    if not queue.queued:
        return None
    if queue.kind is not QueueKind.FAIRSHARE:
        return min(queue.queued, key=lambda j: j.order)
    heads: dict[str, QueuedJob] = {}
    for j in queue.queued:
        h = heads.get(j.share)
        if h is None or (-j.priority, j.order) < (-h.priority, h.order):
            heads[j.share] = j
    default = ShareState("")

    def key(j: QueuedJob) -> tuple[float, int]:
        s = shares.get(j.share, default)
        return (_standing(queue, s, held.get(j.share, 0) * s.weight_factor), j.order)

    return min(heads.values(), key=key)


def position_in_snapshot(snapshot: Mapping[str, Any], job_arn: str) -> tuple[int | None, float | None, int]:
    """(0-based position, earliestTimeAtPosition in epoch s, jobs listed) from GetJobQueueSnapshot.

    https://docs.aws.amazon.com/batch/latest/APIReference/API_GetJobQueueSnapshot.html:
    ``frontOfQueue.jobs`` lists the first 100 RUNNABLE jobs in dispatch order, each with
    ``earliestTimeAtPosition`` (epoch ms). A job past those has no position from Batch.
    """
    jobs: Sequence[Mapping[str, Any]] = (snapshot.get("frontOfQueue") or {}).get("jobs") or ()
    for n, entry in enumerate(jobs):
        if entry.get("jobArn") == job_arn:
            at = entry.get("earliestTimeAtPosition")
            return n, (at / 1000.0 if at is not None else None), len(jobs)
    return None, None, len(jobs)


def dispatch_order(queue: LiveQueue) -> list[QueuedJob]:
    """The queue's waiting jobs in the order the forward model would dispatch them now.

    FIFO and quota queues by age; fair-share within a share by priority then age, and across shares
    interleaved by standing, as the emulator's snapshot orders them.
    """
    order = sorted(
        queue.queued,
        key=lambda j: (j.order,) if queue.kind is not QueueKind.FAIRSHARE else (-j.priority, j.order),
    )
    if queue.kind is not QueueKind.FAIRSHARE:
        return order
    held: dict[str, int] = {}
    for r in queue.running:
        held[r.share] = held.get(r.share, 0) + r.instances
    shares = {s.name: s for s in queue.shares}
    by_share: dict[str, list[QueuedJob]] = {}
    for j in order:
        by_share.setdefault(j.share, []).append(j)
    default = ShareState("")
    rank = sorted(
        by_share,
        key=lambda s: _standing(
            queue, shares.get(s, default), held.get(s, 0) * shares.get(s, default).weight_factor
        ),
    )
    interleaved: list[QueuedJob] = []
    while any(by_share.values()):
        for s in rank:
            if by_share[s]:
                interleaved.append(by_share[s].pop(0))
    return interleaved


def forecast_position(queue: LiveQueue, job_name: str) -> int:
    """The job's 0-based place in the queue's dispatch order as the forward model ranks it now."""
    return next(n for n, j in enumerate(dispatch_order(queue)) if j.name == job_name)
