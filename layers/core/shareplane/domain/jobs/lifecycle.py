"""Job lifecycle: normalized observations, dedupe and ordering keys, and the transition decision.

AWS Batch service-job states go backwards (SCHEDULED->RUNNABLE on a capacity error, RUNNING->RUNNABLE
on preemption or retry), events are duplicated with fresh ids and arrive in any order. Everything
here is a pure function of the observation's content, so any permutation of any duplicates folds
to the same state.

The ordering key of an observation is the tuple

    (final, attempts, preemptions, stamp_ms, phase, digest)

- ``final``: SUCCEEDED and FAILED end a job; nothing outranks them.
- ``attempts`` / ``preemptions``: both only grow, and a retry or a preemption sends the job back to
  RUNNABLE with a larger count, so the regression sorts after what it regresses from.
- ``stamp_ms``: the largest of the detail's job times (createdAt, scheduledAt, startedAt,
  stoppedAt). A new dispatch after a capacity requeue carries a later ``scheduledAt``. The envelope
  ``time`` (1-second precision, set per delivery) is never used.
- ``phase``: the position inside one dispatch when the times tie. A RUNNABLE that names a previous
  training job (``latestAttempt``) comes after that job's SCHEDULED/STARTING/RUNNING; a RUNNABLE
  without one is the job's first wait.
- ``digest``: content hash, a deterministic tie-break so the order is total.

Where an observation sits in the job's *history* is decided by the best evidence (``at_ms``, then
``place_history``): the detail's own time for its state (scheduledAt for SCHEDULED, startedAt for
STARTING, stoppedAt for an end); failing that, the latest of the detail's other times, its
attempts' times and the envelope time, each a lower bound (the envelope's second is cut, never
rounded up); then the lifecycle order within one dispatch (RUNNABLE, SCHEDULED, STARTING, RUNNING,
requeued), which lifts a state placed before the one it follows to that one's time. AWS's own
samples omit ``scheduledAt``, and a detail whose only time is ``createdAt`` would otherwise put a
STARTING before its SCHEDULED.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from ..instance_types.catalog import CATALOG
from ..instance_types.catalog import gpus_per_instance as catalog_gpus
from .arns import training_job_key


class JobStatus(StrEnum):
    """Service-job (and container-job) states as AWS Batch names them."""

    SUBMITTED = "SUBMITTED"
    PENDING = "PENDING"
    RUNNABLE = "RUNNABLE"
    SCHEDULED = "SCHEDULED"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"

    @property
    def is_final(self) -> bool:
        return self in (JobStatus.SUCCEEDED, JobStatus.FAILED)


class ObservationKind(StrEnum):
    """What kind of event an observation came from."""

    SUBMITTED = "SUBMITTED"  # written by the submit path: Batch emits no event on submission
    STATE_CHANGE = "STATE_CHANGE"
    QUEUE_BLOCKED = "QUEUE_BLOCKED"
    PREEMPTION_STARTED = "PREEMPTION_STARTED"
    PREEMPTION_COMPLETED = "PREEMPTION_COMPLETED"
    RECONCILED = "RECONCILED"  # read back from DescribeServiceJob by the reconciler
    FAILURE_DECISION = "FAILURE_DECISION"  # what the failure path decided (requeue, alert, ...)
    PRIORITY_ESCALATED = "PRIORITY_ESCALATED"  # schedulingPriority raised for a job past its wait SLO
    RECLAIM = "RECLAIM"  # capacity reclaimed for this waiting job: which jobs were stopped for it
    RECLAIMED = "RECLAIMED"  # this job was stopped so a higher tier's waiting job could start


class Decision(StrEnum):
    """What recording an observation does to a job."""

    APPLY = "APPLY"  # newest so far: moves the current state
    STALE = "STALE"  # older than the current state: lands in history only
    DUPLICATE = "DUPLICATE"  # already recorded: no write at all


CAPACITY_REASON_PREFIX = "CAPACITY:"
#: Kinds that only annotate history: their details lack the attempt counts needed to order them
#: against full state changes, and Batch sends a full state change for the same move anyway.
ANNOTATION_KINDS = frozenset({ObservationKind.PREEMPTION_STARTED, ObservationKind.PREEMPTION_COMPLETED})

_PHASE = {
    JobStatus.SUBMITTED: 0,
    JobStatus.PENDING: 1,
    JobStatus.RUNNABLE: 2,
    JobStatus.SCHEDULED: 4,
    JobStatus.STARTING: 6,
    JobStatus.RUNNING: 8,
    JobStatus.SUCCEEDED: 12,
    JobStatus.FAILED: 12,
}
_REQUEUED_RUNNABLE_PHASE = 10  # RUNNABLE after a dispatch (capacity error, preemption, retry)


@dataclass(frozen=True)
class CapacityUsage:
    """Instances a job holds: ``unit`` is NUM_INSTANCES or an instance type."""

    unit: str
    quantity: float


@dataclass(frozen=True)
class JobObservation:
    """One job event, normalized: what it says about the job, whatever event shape it came in.

    ``None`` means the event did not carry the field, never "the field is empty".
    """

    job_arn: str
    status: JobStatus
    kind: ObservationKind = ObservationKind.STATE_CHANGE
    job_id: str | None = None
    job_name: str | None = None
    job_queue: str | None = None
    status_reason: str | None = None
    share_identifier: str | None = None
    quota_share_name: str | None = None
    scheduling_priority: int | None = None
    created_at: int | None = None
    scheduled_at: int | None = None
    started_at: int | None = None
    stopped_at: int | None = None
    attempts: int | None = None
    preemptions: int | None = None
    latest_training_job_arn: str | None = None
    training_job_arns: tuple[str, ...] = ()
    capacity_usage: tuple[CapacityUsage, ...] = ()
    instance_type: str | None = None
    #: Only for details that carry no millisecond time at all (preemption started): the envelope
    #: time keeps two preemptions of one job apart. Never set when the detail has a time.
    envelope_time_ms: int | None = None
    #: The EventBridge envelope ``time`` (whole seconds, so a lower bound of the moment), whatever the
    #: detail holds; evidence for the history only, not part of the content digest.
    delivered_at_ms: int | None = None
    #: The latest time an attempt the detail lists (``attempts``, ``preemptionSummary``) started or
    #: stopped: a lower bound for the state the detail reports. The only evidence a reconciler's
    #: read of a preempted or retried job has of when it went back to RUNNABLE (it has no envelope,
    #: and its ``startedAt`` is the dispatch's). Evidence for the history only, like the envelope's.
    attempt_time_ms: int | None = None
    #: A preemption-completed detail's latest preempted attempt: the dispatch whose end its RUNNABLE
    #: records. Evidence for the history only, not part of the content digest.
    ended_training_job_arn: str | None = None

    @property
    def is_annotation(self) -> bool:
        return self.kind in ANNOTATION_KINDS

    @property
    def is_capacity_requeue(self) -> bool:
        return (
            self.status is JobStatus.RUNNABLE
            and self.kind is ObservationKind.STATE_CHANGE
            and (self.status_reason or "").startswith(CAPACITY_REASON_PREFIX)
        )

    @property
    def stamp_ms(self) -> int:
        times = [t for t in (self.created_at, self.scheduled_at, self.started_at, self.stopped_at) if t]
        if not times and self.envelope_time_ms:
            return self.envelope_time_ms
        return max(times, default=0)

    @property
    def own_time_ms(self) -> int | None:
        """The detail's time for this observation's own state, when it carries one.

        RUNNING has none: ``startedAt`` is when the job reached STARTING, a lower bound for RUNNING.
        A completed preemption's RUNNABLE has its preempted attempt's ``stoppedAt``: the job went back
        to the queue when that attempt stopped (the envelope comes later, in whole seconds).
        """
        if self.kind is ObservationKind.PREEMPTION_COMPLETED:
            return self.stopped_at
        return {
            JobStatus.SUBMITTED: self.created_at,
            JobStatus.PENDING: self.created_at,
            JobStatus.SCHEDULED: self.scheduled_at,
            JobStatus.STARTING: self.started_at,
            JobStatus.SUCCEEDED: self.stopped_at,
            JobStatus.FAILED: self.stopped_at,
        }.get(self.status)

    @property
    def at_ms(self) -> int:
        """When this observation's state was entered, by the best evidence its event holds.

        The detail's own time for the state; else the latest lower bound: the detail's other times
        (states this one follows), its attempts' times and the envelope time.
        """
        own = self.own_time_ms
        if own:
            return own
        return max(self.stamp_ms, self.delivered_at_ms or 0, self.attempt_time_ms or 0)

    @property
    def phase(self) -> int:
        return lifecycle_phase(self.status, self.kind, self.latest_training_job_arn)

    @property
    def digest(self) -> str:
        return content_digest(self)

    @property
    def seq(self) -> str:
        return ordering_key(self)


def lifecycle_phase(status: JobStatus, kind: ObservationKind, training_job_arn: str | None) -> int:
    """The position of a state inside one dispatch (a RUNNABLE naming a training job ends that dispatch)."""
    phase = _PHASE[status]
    if status is JobStatus.RUNNABLE and training_job_arn:
        phase = _REQUEUED_RUNNABLE_PHASE
    if kind is ObservationKind.QUEUE_BLOCKED:
        phase += 1  # the blocked notice refines the RUNNABLE it is about
    return phase


def content_digest(obs: JobObservation) -> str:
    """Content-derived dedupe key: equal for the same change however often and however it was sent."""
    payload = {
        "job": obs.job_arn,
        "status": obs.status.value,
        "kind": obs.kind.value,
        "reason": obs.status_reason,
        "attempts": obs.attempts,
        "preemptions": obs.preemptions,
        "latest": obs.latest_training_job_arn,
        "times": [obs.created_at, obs.scheduled_at, obs.started_at, obs.stopped_at],
        "priority": obs.scheduling_priority,
        "envelope": obs.envelope_time_ms,
    }
    raw = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(raw).hexdigest()[:16]


def ordering_key(obs: JobObservation) -> str:
    """The observation's place in the job's life, encoded so string order is tuple order.

    Annotations sort below every state change ("!" < "0"): they set the state only of a job that
    nothing else has been heard of yet.
    """
    if obs.is_annotation:
        return f"!{obs.at_ms:013d}|{obs.digest}"
    final, attempts, preemptions = int(obs.status.is_final), obs.attempts or 0, obs.preemptions or 0
    return f"{final}|{attempts:03d}|{preemptions:04d}|{obs.stamp_ms:013d}|{obs.phase:02d}|{obs.digest}"


def history_key(obs: JobObservation) -> str:
    """Sort key of a history item: by when it happened, then by ordering key."""
    return f"{obs.at_ms:013d}#{ordering_key(obs)}"


@dataclass(frozen=True)
class HistoryEntry:
    """One recorded observation, in the job's history."""

    key: str
    status: JobStatus
    at: int
    reason: str | None
    kind: ObservationKind
    digest: str
    attempts: int | None = None
    preemptions: int | None = None
    training_job_arn: str | None = None
    #: A FAILURE_DECISION's failure class, matched rule and action (None for other kinds).
    failure_class: str | None = None
    rule: str | None = None
    action: str | None = None

    @classmethod
    def note(
        cls,
        kind: ObservationKind,
        *,
        at: int,
        tag: str,
        status: JobStatus,
        reason: str,
        digest: str,
        failure_class: str | None = None,
        rule: str | None = None,
        action: str | None = None,
    ) -> HistoryEntry:
        """One of shareplane's own notes (a failure decision, an escalation, a reclaim) at ``at`` (ms).

        Its key is ``<at>#~<kind>#<tag>``: ``~`` sorts it after every state AWS reported at the same
        millisecond, and ``tag`` (an attempt, a priority, a decision id) keeps two notes of a kind apart.
        """
        return cls(
            key=f"{at:013d}#~{kind.value}#{tag}",
            status=status,
            at=at,
            reason=reason,
            kind=kind,
            digest=digest,
            failure_class=failure_class,
            rule=rule,
            action=action,
        )


#: History kinds that are job states AWS reported, each in its dispatch (the others are shareplane's
#: own notes, placed at the time they were decided). A completed preemption is the job's return to
#: RUNNABLE at the end of the dispatch it preempted, whether or not Batch's own state change arrives.
_STATE_KINDS = frozenset(
    {
        ObservationKind.SUBMITTED,
        ObservationKind.STATE_CHANGE,
        ObservationKind.QUEUE_BLOCKED,
        ObservationKind.RECONCILED,
        ObservationKind.PREEMPTION_COMPLETED,
    }
)
#: Kinds placed in lifecycle order within one instant: the states, and a started preemption (RUNNING,
#: with no dispatch named), which comes before the RUNNABLE its completion records.
_LIFECYCLE_KINDS = _STATE_KINDS | {ObservationKind.PREEMPTION_STARTED}


def place_history(entries: Sequence[HistoryEntry]) -> list[HistoryEntry]:
    """The history in the order it happened, each state at its best-evidenced time.

    Entries keep the time their own event gave (``JobObservation.at_ms``); then, within one dispatch
    (the states naming one training job, or none yet), a state is never placed before a state it
    follows: it takes that state's time when its own evidence is older. A pure function of the set
    of entries, so any delivery order gives the same history.
    """
    dispatches: dict[str | None, list[HistoryEntry]] = {}
    for entry in entries:
        if entry.kind in _STATE_KINDS:
            dispatches.setdefault(entry.training_job_arn, []).append(entry)
    lifted: dict[str, HistoryEntry] = {}
    for members in dispatches.values():
        floor = 0
        for entry in sorted(members, key=lambda e: (_entry_phase(e), e.at, e.key)):
            floor = max(floor, entry.at)
            lifted[entry.key] = entry if entry.at == floor else replace(entry, at=floor)
    placed = [lifted.get(entry.key, entry) for entry in entries]
    return sorted(placed, key=_placed_order)


def _entry_phase(entry: HistoryEntry) -> int:
    return lifecycle_phase(entry.status, entry.kind, entry.training_job_arn)


def _placed_order(entry: HistoryEntry) -> tuple[int, int, int, int, int, str]:
    if entry.kind not in _LIFECYCLE_KINDS:
        return (entry.at, 1, 0, 0, 0, entry.key)
    phase = _entry_phase(entry)
    # At one instant, earlier dispatches (fewer attempts/preemptions) and earlier phases come first.
    return (entry.at, 0, entry.attempts or 0, entry.preemptions or 0, phase, entry.key)


#: Fields that hold the value of the newest observation that carried them (last writer wins by
#: ordering key, not by arrival), so a reordered stream converges.
LATEST_WINS_FIELDS = (
    "attempts",
    "scheduling_priority",
    "started_at",
    "stopped_at",
    "scheduled_at",
    "latest_training_job_arn",
    "capacity_usage",
    "instance_type",
)
#: Fields that never change once known: the first value seen is the value.
IMMUTABLE_FIELDS = ("job_id", "job_name", "job_queue", "share_identifier", "quota_share_name", "created_at")


@dataclass(frozen=True)
class JobState:
    """The current state of one job, as folded from every observation recorded so far."""

    job_arn: str
    status: JobStatus
    seq: str
    status_reason: str | None = None
    job_id: str | None = None
    job_name: str | None = None
    job_queue: str | None = None
    share_identifier: str | None = None
    quota_share_name: str | None = None
    scheduling_priority: int | None = None
    created_at: int | None = None
    scheduled_at: int | None = None
    started_at: int | None = None
    stopped_at: int | None = None
    first_started_at: int | None = None
    latest_training_job_arn: str | None = None
    training_job_arns: tuple[str, ...] = ()
    capacity_usage: tuple[CapacityUsage, ...] = ()
    instance_type: str | None = None
    attempts: int = 0
    preemptions: int = 0
    capacity_requeues: int = 0
    field_seq: Mapping[str, str] = field(default_factory=dict)
    seen: tuple[str, ...] = ()
    version: int = 0

    @property
    def instance_count(self) -> float:
        return sum(usage.quantity for usage in self.capacity_usage)

    @property
    def share(self) -> str | None:
        """The job's share identifier (fair-share queues), else its quota share (quota-share queues)."""
        return self.share_identifier or self.quota_share_name


#: Dimensions of each job metric. Low cardinality only: the job id is an EMF property, never a
#: dimension (a dimension per job would multiply the custom-metric bill by the job count).
METRIC_DIMENSIONS: Mapping[str, tuple[str, ...]] = {
    "Transitions": ("Queue", "Team", "Tier", "Status"),
    "QueueWaitSeconds": ("Queue", "Team", "Tier"),
    "RunSeconds": ("Queue", "Team", "Tier"),
    "InstanceSeconds": ("Queue", "Team"),
    "GPUSeconds": ("Queue", "Team"),
    "CapacityRequeues": ("Queue", "Team"),
    "Preemptions": ("Queue", "Team"),
    # One of the two per job, at its first start: was its wait within its tier's wait SLO?
    "SloAttained": ("Queue", "Tier"),
    "SloMissed": ("Queue", "Tier"),
}


@dataclass(frozen=True)
class JobMetricEvent:
    """A measurement a transition produces, for the metrics sink (never keyed by job id)."""

    name: str
    value: float
    unit: str  # Count | Seconds

    @property
    def dimensions(self) -> tuple[str, ...]:
        return METRIC_DIMENSIONS[self.name]


@dataclass(frozen=True)
class Transition:
    """The decision for one observation and everything the store must write for it."""

    decision: Decision
    state: JobState
    previous: JobState | None
    history: HistoryEntry | None
    new_training_job_arns: tuple[str, ...] = ()
    metrics: tuple[JobMetricEvent, ...] = ()

    @property
    def writes(self) -> bool:
        return self.decision is not Decision.DUPLICATE


def decide(current: JobState | None, obs: JobObservation) -> Transition:
    """Fold one observation into a job's state: apply it, keep it as history only, or drop it."""
    digest = obs.digest
    if current is not None and digest in current.seen:
        return Transition(Decision.DUPLICATE, current, current, None)

    obs_seq = obs.seq
    newest = current is None or obs_seq > current.seq
    base = current or _empty_state(obs)
    state = base

    if newest:
        state = replace(state, status=obs.status, status_reason=obs.status_reason, seq=obs_seq)
    state = _merge_fields(state, obs, obs_seq)

    known = set(state.training_job_arns)
    new_arns = tuple(arn for arn in _arns_of(obs) if arn not in known)
    preemptions = max(state.preemptions, obs.preemptions or 0)
    state = replace(
        state,
        training_job_arns=tuple(sorted(state.training_job_arns + new_arns)),
        preemptions=preemptions,
        capacity_requeues=state.capacity_requeues + (1 if obs.is_capacity_requeue else 0),
        seen=tuple(sorted(state.seen + (digest,))),
        version=base.version + 1 if current is not None else 1,
    )
    first_start = _first_start(obs)
    if first_start is not None and (state.first_started_at is None or first_start < state.first_started_at):
        state = replace(state, first_started_at=first_start)

    history = HistoryEntry(
        key=history_key(obs),
        status=obs.status,
        at=obs.at_ms,
        reason=obs.status_reason,
        kind=obs.kind,
        digest=digest,
        attempts=obs.attempts,
        preemptions=obs.preemptions,
        training_job_arn=obs.latest_training_job_arn or obs.ended_training_job_arn,
    )
    decision = Decision.APPLY if newest else Decision.STALE
    return Transition(
        decision=decision,
        state=state,
        previous=current,
        history=history,
        new_training_job_arns=new_arns,
        metrics=_metrics(current, state, obs),
    )


def _empty_state(obs: JobObservation) -> JobState:
    # The first observation of a job: whatever it is, it starts the fold (seq "" sorts first).
    return JobState(job_arn=obs.job_arn, status=obs.status, seq="", status_reason=obs.status_reason)


def _merge_fields(state: JobState, obs: JobObservation, obs_seq: str) -> JobState:
    updates: dict[str, Any] = {}
    field_seq = dict(state.field_seq)
    for name in IMMUTABLE_FIELDS:
        value = getattr(obs, name)
        if value is not None and getattr(state, name) is None:
            updates[name] = value
    for name in LATEST_WINS_FIELDS:
        value = getattr(obs, name)
        if value is None or value == ():
            continue
        if obs_seq > field_seq.get(name, ""):
            updates[name] = value
            field_seq[name] = obs_seq
    return replace(state, **updates, field_seq=field_seq)


def _arns_of(obs: JobObservation) -> tuple[str, ...]:
    arns = list(obs.training_job_arns)
    if obs.latest_training_job_arn:
        arns.append(obs.latest_training_job_arn)
    return tuple(dict.fromkeys(arns))


def _first_start(obs: JobObservation) -> int | None:
    started = obs.status in (JobStatus.STARTING, JobStatus.RUNNING) or (
        obs.status.is_final and obs.started_at is not None
    )
    return obs.started_at if started and obs.kind is ObservationKind.STATE_CHANGE else None


def _metrics(previous: JobState | None, state: JobState, obs: JobObservation) -> tuple[JobMetricEvent, ...]:
    """Measurements produced by recording ``obs``: each happens once per job, whatever the order."""
    events: list[JobMetricEvent] = [JobMetricEvent("Transitions", 1, "Count")]
    if obs.is_capacity_requeue:
        events.append(JobMetricEvent("CapacityRequeues", 1, "Count"))
    if previous is None or state.preemptions > previous.preemptions:
        gained = state.preemptions - (previous.preemptions if previous else 0)
        if gained:
            events.append(JobMetricEvent("Preemptions", gained, "Count"))
    had_start = previous.first_started_at if previous else None
    if had_start is None and state.first_started_at is not None and state.created_at is not None:
        wait = max(0, state.first_started_at - state.created_at) / 1000
        events.append(JobMetricEvent("QueueWaitSeconds", wait, "Seconds"))
    was_final = previous is not None and previous.status.is_final and previous.seq
    if state.status.is_final and not was_final and state.started_at and state.stopped_at:
        run = max(0, state.stopped_at - state.started_at) / 1000
        events.append(JobMetricEvent("RunSeconds", run, "Seconds"))
        if state.instance_count:
            events.append(JobMetricEvent("InstanceSeconds", run * state.instance_count, "Seconds"))
            gpus = gpus_per_instance(state.instance_type or _typed_unit(state))
            if gpus:
                events.append(JobMetricEvent("GPUSeconds", run * state.instance_count * gpus, "Seconds"))
    return tuple(events)


def _typed_unit(state: JobState) -> str | None:
    units = [u.unit for u in state.capacity_usage if u.unit != "NUM_INSTANCES"]
    return units[0] if units else None


#: GPUs per SageMaker training instance type, from the one catalog (``instance_types.CATALOG``); a type
#: it does not list has none.
GPUS_PER_INSTANCE: Mapping[str, int] = {name: row.gpus for name, row in CATALOG.items()}


def gpus_per_instance(instance_type: str | None) -> int:
    """GPUs in one instance of ``instance_type`` (0 for CPU types and unknown names)."""
    return catalog_gpus(instance_type)


def correlates(state: JobState, training_job_arn: str) -> bool:
    """Whether a SageMaker training job belongs to this Batch job (through its attempts, never its name),
    in whichever casing either side spelled its ARN."""
    key = training_job_key(training_job_arn)
    return any(
        training_job_key(arn) == key
        for arn in (*state.training_job_arns, state.latest_training_job_arn)
        if arn
    )
