"""The live twin: a job queue's state read through the ports and built into the start forecast's input.

The one builder of the forecast's input from live state. The watch_jobs Lambda reads a bounded set of
jobs through it (the active ones and the newest finished ones whole, the finished ones' arrivals from
the arrival counts, ``start_predictions.bounded_twin``), and so do the submit_job Lambda for its
receipt's first prediction (``receipt_prediction``) and `shareplane why`, `top` and `submit
--dry-run`. Read-only:
DescribeJobQueues, DescribeServiceEnvironments, DescribeSchedulingPolicies or ListQuotaShares, and the
jobs table.

Loading this module loads the forecast (``domain.start_forecast``, ``domain.wait_explain``): only
the paths that forecast import it, and only when they do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..domain.config.shares import SchedulingMode, SharesConfig
from ..domain.explain.record import JobRecord, job_record
from ..domain.explain.wait import QueuePolicy, job_label, live_from_records
from ..domain.forecast.start_forecast import Arrival, History, LiveQueue, QueueKind
from ..domain.jobs.arns import queue_name
from ..domain.jobs.lifecycle import JobState, JobStatus
from ..domain.shares.rebalance import SharingStrategy
from .ports import JobStore, QueueReader
from .queries import job_record_of


@dataclass(frozen=True)
class TwinSources:
    """Where the twin is read from: the jobs table, Batch's queue settings, the shares config."""

    store: JobStore
    batch: QueueReader
    config: SharesConfig


@dataclass(frozen=True)
class LiveTwin:
    """One queue at ``now``: its job records, its policy as Batch has it, and the forecast's input."""

    queue: str
    now: float
    records: tuple[JobRecord, ...]
    policy: QueuePolicy
    live: LiveQueue
    history: History
    #: The newest hour (epoch ms) of the arrival counts read, when the finished jobs' arrivals came from
    #: them (``start_predictions.bounded_twin``); None otherwise: how fresh the counts were.
    counts_hour_ms: int | None = None


def queue_policy(batch: QueueReader, queue: str, config: SharesConfig) -> QueuePolicy:
    """The queue's kind, capacity and weights (fair-share) or limits (quota shares), as Batch has them.

    The config's quota mode is the GPU queue's: any other queue (the CPU FIFO queue `top` shows
    beside it, or one named with ``--queue``) is what its scheduling policy makes it, FIFO without
    one (a policy's type is fixed once set). Capacity is what the queue's service environments may
    run; the config's instance types for that queue when Batch names none.
    """
    capacity = batch.queue_capacity(queue) or configured_capacity(config, queue)
    quota = config.mode is SchedulingMode.QUOTA and queue_name(queue) == queue_name(config.gpu_queue_name())
    if not quota:
        arn = batch.scheduling_policy_of(queue)
        if arn is None:
            return QueuePolicy(QueueKind.FIFO, capacity)
        policy = batch.describe_scheduling_policy(arn)
        if policy.mode is not SchedulingMode.QUOTA:
            return QueuePolicy(
                QueueKind.FAIRSHARE,
                capacity,
                weights={w.share_identifier: w.weight_factor for w in policy.weights},
                decay_seconds=float(policy.share_decay_seconds or 0),
                compute_reservation=int(policy.compute_reservation or 0),
            )
    limits: dict[str, int] = {}
    borrow = False
    for share in batch.list_quota_shares(queue):
        limits[share.name] = sum(share.settings.capacity_limits.values())
        borrow = borrow or share.settings.strategy is not SharingStrategy.RESERVE
    return QueuePolicy(QueueKind.QUOTA, capacity, limits=limits, borrow=borrow)


def configured_capacity(config: SharesConfig, queue: str) -> int:
    """Instances the config gives a queue: its CPU types for the CPU FIFO queue, else its GPU types."""
    cpu = config.queues.cpu_fifo is not None and queue_name(queue) == queue_name(config.queues.cpu_fifo)
    types = config.queues.cpu_instance_types if cpu else config.instance_types
    return sum(t.capacity for t in types.values())


def never_dispatched(state: JobState) -> bool:
    """A waiting job that never held capacity: its history has no hold, so the twin need not read it.

    On a deep queue most jobs are such, and each history read is a query of the jobs table.
    """
    return (
        state.status in (JobStatus.SUBMITTED, JobStatus.PENDING, JobStatus.RUNNABLE)
        and state.scheduled_at is None
        and state.started_at is None
        and state.first_started_at is None
        and not state.training_job_arns
        and state.attempts == 0
        and state.preemptions == 0
        and state.capacity_requeues == 0
    )


def read_live_twin(
    sources: TwinSources,
    queue: str,
    now: float,
    *,
    states: Iterable[JobState] | None = None,
    finished_arrivals: Sequence[Arrival] | None = None,
    arrivals_since: float | None = None,
    name_of: Callable[[JobRecord], str] = job_label,
    complete_since: float | None = None,
) -> LiveTwin:
    """The queue at ``now`` (epoch seconds), read from ``states`` (default: every job in the table).

    ``finished_arrivals``: the finished jobs' arrivals as a bounded read counts them (the arrival
    counts), in place of the finished ``states``' own. ``arrivals_since``: since when the jobs read
    hold every submission (default: since the oldest of them, true of the whole table). ``name_of``
    names each job in the forecast (default: its name, as `why` shows it; the watch keys its
    predictions by job ARN, which never repeats). ``complete_since``: since when ``states`` hold
    every finished job (default: the whole table).
    """
    chosen = sources.store.jobs() if states is None else states

    def record_of(state: JobState) -> JobRecord:
        if never_dispatched(state):
            return job_record(state, (), None, sources.config)
        # The twin reads a record's holds (its history) and its size; its training job adds a size
        # only when Batch's events have not given one, so it is read only then.
        training = not (state.instance_count and state.instance_type)
        return job_record_of(sources.store, state, sources.config, with_training=training)

    mine = queue_name(queue)
    records = tuple(record_of(state) for state in chosen if queue_name(state.job_queue) == mine)
    policy = queue_policy(sources.batch, queue, sources.config)
    live, history = live_from_records(
        records,
        policy,
        now,
        arrivals_since=arrivals_since,
        name_of=name_of,
        finished_arrivals=finished_arrivals,
        complete_since=complete_since,
    )
    return LiveTwin(queue, now, records, policy, live, history)
