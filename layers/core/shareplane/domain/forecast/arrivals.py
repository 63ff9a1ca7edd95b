"""Arrival counts: how many jobs each queue received per hour, by share, instances and priority.

The start forecast projects the arrivals of the last 30 days forward (``start_forecast``). On a busy
queue those are tens of thousands of jobs, too many to read record by record on every watch tick and
every drop's receipt (docs/design/arrival-counts.md has what that read measured against these
counts; ``tests/bench/test_arrival_read_bench.py`` measures both). So each job is counted
once it has finished, in its queue's bucket for the hour it was created, by the transaction that
records its state: the counts hold every finished job under its current key, whatever order or how
many times its events came. Jobs still active are read whole by the twin and counted from their
records.

A finished job's key can still move: an event delivered late may bring a field the final one lacked
(Batch's official SUCCEEDED sample has no share, priority or capacity; the RUNNING one has all three),
so each write moves the count from the key the job was counted under to its new one.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..jobs.arns import queue_name
from ..jobs.lifecycle import JobState

#: A bucket's width: the arrivals' times are known to the hour (the forecast's 30-day rate, to 1/720).
HOUR_MS = 3_600_000


@dataclass(frozen=True, order=True)
class ArrivalKey:
    """The bucket and the kind of job one finished job is counted under."""

    queue: str
    #: The start of the hour the job was created in (epoch ms).
    hour_ms: int
    share: str
    instances: int
    priority: int


def hour_of(ms: int) -> int:
    """The start of the hour ``ms`` (epoch ms) falls in."""
    return ms - ms % HOUR_MS


def arrival_key(state: JobState) -> ArrivalKey | None:
    """What ``state``'s job counts as (None without a creation time or a queue: no arrival).

    Share, instances and priority as the twin reads a record (``wait_explain``): the share or quota
    share, 1 instance when Batch never reported its capacity (a record read whole would take its
    training job's count then; the state alone has none), priority 0 when it has none.
    """
    if not state.created_at or not state.job_queue:
        return None
    return ArrivalKey(
        queue=queue_name(state.job_queue),
        hour_ms=hour_of(state.created_at),
        share=state.share or "",
        instances=int(state.instance_count or 1),
        priority=int(state.scheduling_priority or 0),
    )


def counted_key(state: JobState | None) -> ArrivalKey | None:
    """The key a stored state is counted under: its own once it has finished, none before."""
    return arrival_key(state) if state is not None and state.status.is_final else None


def arrival_moves(previous: JobState | None, state: JobState) -> dict[ArrivalKey, int]:
    """What writing ``state`` over ``previous`` adds to each count: +1 where the job is now counted,
    -1 where it was (nothing when its key is unchanged).

    A final status stays final (Batch's SUCCEEDED and FAILED; a state moves only to newer
    observations), so a job enters the counts once and then only moves within them.
    """
    before, after = counted_key(previous), counted_key(state)
    if before == after:
        return {}
    return {key: delta for key, delta in ((before, -1), (after, 1)) if key is not None}
