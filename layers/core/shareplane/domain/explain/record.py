"""The job record: one job as `shareplane jobs` shows it, built from stored state and history (pure).

A frozen ``JobRecord`` holds the typed values (the job's state, its history in the order it happened,
its latest training job's facts, its team and tier, and, when read, its stored start prediction and
uploader); the story, the wait explanation and the CLI read those values. Its JSON is built once, at
the edge (``record_json``), and nothing reads it back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..config.shares import SharesConfig, Tier
from ..forecast.prediction import StartPrediction
from ..jobs.lifecycle import HistoryEntry, JobState, JobStatus, ObservationKind, place_history
from ..jobs.training import TrainingJobState

#: Statuses that end a job: an attempt's hold ends at one.
ENDED = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED})


@dataclass(frozen=True)
class JobRecord:
    """One job: its state, its history in the order it happened, and what is known beside them.

    Only order-independent facts are read from it (no write version), so any delivery order of the
    same events yields the same record.
    """

    state: JobState
    #: The history in the order it happened (``place_history``).
    history: tuple[HistoryEntry, ...] = ()
    #: The latest training job's facts (None: not read, or no training job yet).
    training: TrainingJobState | None = None
    #: The team and tier the shares config maps the job's share to (None without the config).
    team: str | None = None
    tier: Tier | None = None
    #: The newest start prediction a watch tick stored for it (None: none, or not read).
    prediction: StartPrediction | None = None
    #: Who dropped the job's spec (account, S3 request id, CloudTrail's principal), from its payload.
    uploader: Mapping[str, Any] | None = None

    @property
    def job_arn(self) -> str:
        return self.state.job_arn

    @property
    def name(self) -> str:
        """The job's name, else its id: how `why` and the forecast name it."""
        return self.state.job_name or self.state.job_id or ""

    @property
    def share(self) -> str:
        """The share identifier (or quota share) the job runs in; empty on a queue without shares."""
        return self.state.share or ""

    @property
    def instance_type(self) -> str | None:
        """Its instance type: Batch's events', else its training job's."""
        return self.state.instance_type or (self.training.instance_type if self.training else None)

    @property
    def instance_count(self) -> float | None:
        """Its instance count: Batch's events', else its training job's (None: neither seen yet)."""
        return self.state.instance_count or (self.training.instance_count if self.training else None)

    @property
    def instances(self) -> int:
        """The instances the job asks for (1 when the record has not seen its count)."""
        return int(self.instance_count or 1)

    @property
    def created_s(self) -> float | None:
        """Its submission time in epoch seconds."""
        created = self.state.created_at
        return None if created is None else created / 1000.0

    @cached_property
    def holds(self) -> tuple[tuple[float, float | None], ...]:
        """Each attempt's hold in epoch seconds, ``(from SCHEDULED, to its end or None while held)``.

        An attempt ends at the next RUNNABLE (preempted, requeued) or final status of its history.
        """
        holds: list[tuple[float, float | None]] = []
        start: float | None = None
        for entry in self.history:
            if entry.status is JobStatus.SCHEDULED and start is None:
                start = entry.at / 1000.0
            elif start is not None and (entry.status is JobStatus.RUNNABLE or entry.status in ENDED):
                holds.append((start, entry.at / 1000.0))
                start = None
        if start is not None:
            stopped = self.state.stopped_at
            ended = stopped and self.state.status in ENDED
            holds.append((start, stopped / 1000.0 if ended and stopped else None))
        return tuple(holds)

    @property
    def first_start(self) -> float | None:
        """The job's first dispatch (SCHEDULED) in epoch seconds, None if it never started."""
        return self.holds[0][0] if self.holds else None

    def newest_ms(self) -> int:
        """The newest time the record holds (epoch ms; 0 for none): its creation, stop or last entry."""
        times = [self.state.created_at or 0, self.state.stopped_at or 0, *(e.at for e in self.history)]
        return max(times)


def recorded_now(clock: float, states: Iterable[JobState]) -> float:
    """ "Now" for a table of jobs (epoch s): the clock, or the newest time the states record when that is
    ahead of it.

    The jobs table is dated by the events' own times, and a recorded event cannot come from the future.
    A table ahead of this machine's clock (the local stack's emulator runs a sped-up virtual clock; a
    skewed laptop clock) would otherwise hold waiting jobs "submitted in the future".
    """
    recorded = [
        t for s in states for t in (s.created_at, s.scheduled_at, s.started_at, s.stopped_at) if t is not None
    ]
    return max([clock, *(t / 1000.0 for t in recorded)])


def job_record(
    state: JobState,
    history: Sequence[HistoryEntry],
    training_job: TrainingJobState | None = None,
    config: SharesConfig | None = None,
) -> JobRecord:
    """The job's record: its history placed in the order it happened; with the shares config, its team
    and tier (from the config's mapping; None for a share the config does not name)."""
    return JobRecord(
        state,
        tuple(place_history(history)),
        training_job,
        team=config.team_for_share(state.share) if config else None,
        tier=config.job_tier(state.share, state.scheduling_priority) if config else None,
    )


#: Who put each kind of history entry there: AWS Batch's own events, Batch's answer read back by the
#: reconciler (DescribeServiceJob), the submit path (Batch emits no event on submission), or one of
#: shareplane's decisions. SageMaker's training-job states are labelled ``sagemaker`` (``job_story``).
HISTORY_SOURCES: Mapping[ObservationKind, str] = {
    ObservationKind.SUBMITTED: "submit",
    ObservationKind.STATE_CHANGE: "batch",
    ObservationKind.QUEUE_BLOCKED: "batch",
    ObservationKind.PREEMPTION_STARTED: "batch",
    ObservationKind.PREEMPTION_COMPLETED: "batch",
    ObservationKind.RECONCILED: "reconciled",
    ObservationKind.FAILURE_DECISION: "shareplane",
    ObservationKind.PRIORITY_ESCALATED: "shareplane",
    ObservationKind.RECLAIM: "shareplane",
    ObservationKind.RECLAIMED: "shareplane",
}
#: Kinds that are a job state as such; the others are labelled with their kind too.
_PLAIN_KINDS = frozenset(
    {ObservationKind.SUBMITTED, ObservationKind.STATE_CHANGE, ObservationKind.RECONCILED}
)


def history_label(entry: HistoryEntry) -> str:
    """One history entry in a few characters, by who reported it: ``batch:RUNNABLE``,
    ``reconciled:RUNNING``, ``shareplane:FAILED(failure_decision)``."""
    label = f"{HISTORY_SOURCES[entry.kind]}:{entry.status.value}"
    return label if entry.kind in _PLAIN_KINDS else f"{label}({entry.kind.value.lower()})"
