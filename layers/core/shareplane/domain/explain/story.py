"""One job's whole story, as `shareplane jobs JOB` tells it, from its record and what is stored beside it.

The record (``record.JobRecord``) holds Batch's side; beside it the store keeps each attempt's
SageMaker training-job events, its cost, the alerts sent for it and the submission (who dropped which
spec). ``job_story`` joins them into one timeline labelled by source, the changes of priority, the
attempts and requeues, the failure decisions, the cost, the wait (submission to first dispatch,
SCHEDULED, as everywhere in shareplane) and, when a watch tick stored one, the start prediction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..alerts.sent import SentAlert
from ..config.shares import SharesConfig, Tier
from ..cost.billing import AttemptCost
from ..forecast.prediction import StartPrediction
from ..jobs.lifecycle import HistoryEntry, JobStatus, ObservationKind
from ..jobs.service_job_request import ServiceJobRequest
from ..jobs.training import TrainingHistoryEntry
from ..submit.payload import SubmittedPayload
from .durations import duration_text
from .record import HISTORY_SOURCES, JobRecord, history_label
from .wait import WAITING

#: History kinds that record a change made to the job after submission (its priority, its capacity).
CHANGE_KINDS = frozenset({ObservationKind.PRIORITY_ESCALATED, ObservationKind.RECLAIM})
#: History kinds that interrupt an attempt; a RUNNABLE after a dispatch is a requeue too.
INTERRUPTION_KINDS = frozenset(
    {ObservationKind.PREEMPTION_STARTED, ObservationKind.PREEMPTION_COMPLETED, ObservationKind.RECLAIMED}
)


@dataclass(frozen=True)
class JobWait:
    """A job's wait in seconds: to its first dispatch, or so far while it still waits."""

    seconds: float | None
    #: True: the wait ended at the first dispatch; False: still waiting, or never dispatched (None).
    ended: bool
    #: The first dispatch (SCHEDULED, epoch s), None until it happens.
    first_dispatch: float | None = None

    def text(self) -> str:
        """``12m05s``, ``3m10s so far`` or ``-`` (never dispatched, not waiting), as ``duration_text``."""
        if self.seconds is None:
            return "-"
        shown = duration_text(self.seconds)
        return shown if self.ended else f"{shown} so far"


def observed_now(records: Iterable[JobRecord], clock: float) -> float:
    """``clock`` (epoch s), or the newest time the records hold if that is later.

    A recorded event cannot come from the future, so its time is a lower bound of now. It wins when
    the queue's clock runs ahead of the reader's: the local stack's emulator on its sped-up virtual
    clock, or a skewed laptop clock.
    """
    return max(clock, max((r.newest_ms() for r in records), default=0) / 1000.0)


def job_wait(record: JobRecord, now: float) -> JobWait:
    """The wait of a record's job at ``now`` (epoch s): submission (createdAt) to first SCHEDULED."""
    created = record.created_s
    started = record.first_start
    if created is None:
        return JobWait(None, False, started)
    if started is not None:
        return JobWait(max(0.0, started - created), True, started)
    if record.state.status in WAITING:
        return JobWait(max(0.0, now - created), False)
    return JobWait(None, False)


@dataclass(frozen=True)
class TimelineLine:
    """One line of the story's timeline: a Batch history entry or a SageMaker event, by source."""

    at: int | None
    label: str
    source: str
    status: str
    reason: str | None
    #: A Batch entry's kind (None for a SageMaker event).
    kind: ObservationKind | None = None
    #: A SageMaker event's secondary status and training job (None for a Batch entry).
    secondary_status: str | None = None
    training_job_arn: str | None = None


def timeline(
    record: JobRecord, training: Mapping[str, Sequence[TrainingHistoryEntry]]
) -> tuple[TimelineLine, ...]:
    """Batch's history and each attempt's SageMaker events in one list by time, each labelled by source.

    Batch's entries keep the order the record placed them in; a SageMaker event at the same
    millisecond follows them. SageMaker events with no time go last.
    """
    lines: list[tuple[float, int, int, TimelineLine]] = []
    for n, entry in enumerate(record.history):
        line = TimelineLine(
            entry.at,
            history_label(entry),
            HISTORY_SOURCES[entry.kind],
            entry.status.value,
            entry.reason,
            kind=entry.kind,
        )
        lines.append((float(entry.at), 0, n, line))
    for arn, entries in sorted(training.items()):
        for n, event in enumerate(entries):
            line = TimelineLine(
                event.at or None,
                event.label,
                "sagemaker",
                event.status.value,
                event.failure_reason,
                secondary_status=event.secondary_status,
                training_job_arn=arn,
            )
            lines.append((float(event.at) if event.at else float("inf"), 1, n, line))
    return tuple(line for *_, line in sorted(lines, key=lambda t: t[:3]))


def interruptions(record: JobRecord) -> tuple[HistoryEntry, ...]:
    """Preemptions, reclaims and requeues (a RUNNABLE after a dispatch), each with its reason."""
    out: list[HistoryEntry] = []
    dispatched = False
    for entry in record.history:
        requeued = (
            entry.kind is ObservationKind.STATE_CHANGE and entry.status is JobStatus.RUNNABLE and dispatched
        )
        if entry.kind in INTERRUPTION_KINDS or requeued:
            out.append(entry)
        if entry.status is JobStatus.SCHEDULED:
            dispatched = True
        elif requeued:
            dispatched = False
    return tuple(out)


def decisions(record: JobRecord) -> tuple[HistoryEntry, ...]:
    """The failure path's decisions on this job: class, matched rule, action and why."""
    return tuple(e for e in record.history if e.kind is ObservationKind.FAILURE_DECISION)


@dataclass(frozen=True)
class Placement:
    """Where a job is (or was submitted): its queue, share, tier and schedulingPriority."""

    queue: str | None
    share: str | None
    tier: Tier | None
    scheduling_priority: int | None


@dataclass(frozen=True)
class PlacementChanges:
    """The placement as submitted (None: the submit path kept no request) and now, and each change."""

    as_submitted: Placement | None
    now: Placement
    changes: tuple[HistoryEntry, ...]


def changes(
    record: JobRecord, submitted_request: ServiceJobRequest | None, config: SharesConfig | None = None
) -> PlacementChanges:
    """Queue, share, tier and priority as submitted and as now, and each change shareplane made.

    The tier as submitted is the config's reading of the request's share and priority (None without
    the config).
    """
    state = record.state
    now = Placement(state.job_queue, state.share, record.tier, state.scheduling_priority)
    submitted = None
    if submitted_request is not None:
        share, priority = submitted_request.share, submitted_request.scheduling_priority
        tier = config.job_tier(share, priority) if config is not None else None
        submitted = Placement(submitted_request.job_queue, share, tier, priority)
    made = tuple(e for e in record.history if e.kind in CHANGE_KINDS)
    return PlacementChanges(submitted, now, made)


@dataclass(frozen=True)
class CostSummary:
    """Each attempt's cost (by time) and the job's total (USD only over attempts with a price)."""

    attempts: tuple[AttemptCost, ...]
    #: USD to the cent over the priced attempts (None: none priced).
    usd: float | None
    billable_instance_hours: float

    @property
    def estimated(self) -> bool:
        """Whether an attempt still running is in it, estimated so far."""
        return any(a.estimated for a in self.attempts)


def cost_summary(costs: Sequence[AttemptCost]) -> CostSummary:
    """Each attempt's cost and the job's total (USD only over attempts with a price)."""
    priced = [c.usd for c in costs if c.usd is not None]
    return CostSummary(
        tuple(sorted(costs, key=lambda c: c.at)),
        round(sum(priced), 2) if priced else None,
        round(sum(c.billable_instance_hours for c in costs), 3),
    )


@dataclass(frozen=True)
class PredictionCheck:
    """A stored start prediction with the waits it meant and, once the job started, its p50's error."""

    prediction: StartPrediction
    #: The waits from submission each of p10/p50/p90 meant, in s (None: no start or no submission time).
    waits: tuple[int | None, int | None, int | None]
    #: The actual first start less the p50, in s (None: not started, or no p50).
    actual_minus_p50: int | None


def prediction_check(record: JobRecord) -> PredictionCheck | None:
    """The start prediction a watch tick stored on the record, with the waits it meant and, once the
    job started, how far its p50 was from the actual start. None when the record carries none."""
    prediction = record.prediction
    if prediction is None:
        return None
    created = record.state.created_at
    started = record.first_start

    def wait(start: int | None) -> int | None:
        return None if start is None or created is None else round((start - created) / 1000.0)

    p50 = prediction.p50
    return PredictionCheck(
        prediction,
        (wait(prediction.p10), wait(p50), wait(prediction.p90)),
        None if started is None or p50 is None else round(started - p50 / 1000.0),
    )


@dataclass(frozen=True)
class JobStory:
    """A job's record with its whole story beside it (times in epoch ms, as in the record)."""

    record: JobRecord
    #: The submit path's payload (spec source, request, when, who); None for a job it did not submit.
    submission: SubmittedPayload | None
    wait: JobWait
    placement: PlacementChanges
    timeline: tuple[TimelineLine, ...]
    interruptions: tuple[HistoryEntry, ...]
    decisions: tuple[HistoryEntry, ...]
    #: The alerts sent for the job, in send order.
    alerts: tuple[SentAlert, ...]
    cost: CostSummary
    prediction: PredictionCheck | None

    @property
    def uploader(self) -> Mapping[str, Any] | None:
        """Who dropped the job's spec: the record's, else the submission's."""
        return self.record.uploader or (self.submission.uploader if self.submission else None)


def job_story(
    record: JobRecord,
    *,
    training: Mapping[str, Sequence[TrainingHistoryEntry]],
    alerts: Sequence[SentAlert],
    costs: Sequence[AttemptCost],
    submission: SubmittedPayload | None,
    now: float,
    config: SharesConfig | None = None,
) -> JobStory:
    """The record with its whole story beside it.

    ``training``: each attempt's SageMaker events by training-job ARN; ``alerts``: those sent for
    this job; ``costs``: its attempts' recorded costs; ``submission``: the submit path's payload, None
    for a job it did not submit; ``now`` (epoch s) dates the wait of a job still waiting; ``config``
    reads the tier it was submitted in.
    """
    return JobStory(
        record,
        submission,
        job_wait(record, now),
        changes(record, submission.request if submission else None, config),
        timeline(record, training),
        interruptions(record),
        decisions(record),
        tuple(sorted(alerts, key=lambda a: a.sent_at)),
        cost_summary(costs),
        prediction_check(record),
    )
