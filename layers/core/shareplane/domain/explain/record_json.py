"""The job record and one job's story as JSON: what `shareplane jobs -o json` and `export` print.

Built once, at the edge, from the typed values (``record.JobRecord``, ``story.JobStory``); nothing
reads it back. Times are epoch ms, as stored; the keys are the CLI's published JSON, each shape a
``TypedDict`` below.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

from ..jobs.lifecycle import HistoryEntry, ObservationKind
from .record import JobRecord, history_label
from .story import CostSummary, JobStory, JobWait, Placement, PredictionCheck, TimelineLine

#: One history entry; a failure decision's also names its class, rule and action.
HistoryJson = TypedDict(
    "HistoryJson",
    {
        "status": str,
        "at": int,
        "reason": str | None,
        "kind": str,
        "class": NotRequired[str | None],
        "rule": NotRequired[str | None],
        "action": NotRequired[str | None],
    },
)


class RecordJson(TypedDict):
    """A job as `shareplane jobs -o json` lists it (``uploader`` and ``prediction`` when they were read)."""

    jobId: str | None
    jobArn: str
    jobName: str | None
    jobQueue: str | None
    status: str
    statusReason: str | None
    shareIdentifier: str | None
    quotaShareName: str | None
    team: str | None
    tier: str | None
    schedulingPriority: int | None
    createdAt: int | None
    startedAt: int | None
    stoppedAt: int | None
    instanceType: str | None
    instanceCount: float | None
    trainingJobArn: str | None
    trainingJobStatus: str | None
    failureReason: str | None
    attempts: int
    preemptions: int
    capacityRequeues: int
    history: list[HistoryJson]
    uploader: NotRequired[Mapping[str, Any] | None]
    prediction: NotRequired[Mapping[str, Any] | None]


class WaitJson(TypedDict):
    seconds: int | None
    ended: bool
    firstDispatchAt: int | None
    text: str


class ListedJson(RecordJson):
    """A listed job: its record and its wait."""

    wait: WaitJson


class SubmissionJson(TypedDict):
    source: Mapping[str, Any] | None
    submittedAt: int | None
    uploader: Mapping[str, Any] | None


class PlacementJson(TypedDict):
    queue: str | None
    share: str | None
    tier: str | None
    schedulingPriority: int | None


class LineJson(TypedDict):
    """A change or an interruption: when, its history label, why."""

    at: int
    label: str
    reason: str | None


class PlacementChangesJson(TypedDict):
    asSubmitted: PlacementJson | None
    now: PlacementJson
    changes: list[LineJson]


class TimelineJson(TypedDict):
    """A Batch entry has ``kind``; a SageMaker event ``secondaryStatus`` and ``trainingJobArn``."""

    at: int | None
    label: str
    source: str
    status: str
    kind: NotRequired[str]
    secondaryStatus: NotRequired[str | None]
    reason: str | None
    trainingJobArn: NotRequired[str | None]


DecisionJson = TypedDict(
    "DecisionJson",
    {"at": int, "class": str | None, "rule": str | None, "action": str | None, "reason": str | None},
)


class AlertJson(TypedDict):
    sentAt: float
    kind: str
    severity: str
    subject: str


class AttemptCostJson(TypedDict):
    trainingJobArn: str
    instanceType: str | None
    instanceCount: int
    billableSeconds: float
    usd: float | None
    source: str


class CostJson(TypedDict):
    attempts: list[AttemptCostJson]
    usd: float | None
    billableInstanceHours: float


class PredictionCheckJson(TypedDict):
    predictedAt: int
    startP10: int | None
    waitSecondsP10: int | None
    startP50: int | None
    waitSecondsP50: int | None
    startP90: int | None
    waitSecondsP90: int | None
    actualMinusP50Seconds: int | None


class StoryJson(RecordJson):
    """One job's whole story: its record with the story's parts beside it."""

    submission: SubmissionJson | None
    wait: WaitJson
    placement: PlacementChangesJson
    timeline: list[TimelineJson]
    interruptions: list[LineJson]
    decisions: list[DecisionJson]
    alerts: list[AlertJson]
    cost: CostJson


def history_json(entry: HistoryEntry) -> HistoryJson:
    """One history entry as JSON; a failure decision also says its class, rule and action."""
    shown: HistoryJson = {
        "status": entry.status.value,
        "at": entry.at,
        "reason": entry.reason,
        "kind": entry.kind.value,
    }
    if entry.kind is ObservationKind.FAILURE_DECISION:
        shown.update({"class": entry.failure_class, "rule": entry.rule, "action": entry.action})
    return shown


def record_json(record: JobRecord, *, beside: bool = False) -> RecordJson:
    """A job as JSON: identity, current state, counters and its history in the order it happened.

    ``beside``: the record's ``uploader`` and stored ``prediction`` were read, so they are shown
    (None: the store holds none).
    """
    state, training = record.state, record.training
    shown: RecordJson = {
        "jobId": state.job_id,
        "jobArn": state.job_arn,
        "jobName": state.job_name,
        "jobQueue": state.job_queue,
        "status": state.status.value,
        "statusReason": state.status_reason,
        "shareIdentifier": state.share_identifier,
        "quotaShareName": state.quota_share_name,
        "team": record.team,
        "tier": record.tier.value if record.tier else None,
        "schedulingPriority": state.scheduling_priority,
        "createdAt": state.created_at,
        "startedAt": state.started_at,
        "stoppedAt": state.stopped_at,
        "instanceType": record.instance_type,
        "instanceCount": record.instance_count,
        "trainingJobArn": state.latest_training_job_arn,
        "trainingJobStatus": training.status.value if training else None,
        "failureReason": training.failure_reason if training else None,
        "attempts": state.attempts,
        "preemptions": state.preemptions,
        "capacityRequeues": state.capacity_requeues,
        "history": [history_json(entry) for entry in record.history],
    }
    if beside:
        shown["uploader"] = dict(record.uploader) if record.uploader is not None else None
        shown["prediction"] = record.prediction.as_record() if record.prediction else None
    return shown


def wait_json(wait: JobWait) -> WaitJson:
    """A job's wait as JSON, as one job's story and the job list give it.

    ``seconds``: to the first dispatch, or so far while the job waits; None when it was never
    dispatched and no longer waits. ``ended``: the wait ended at a dispatch. ``firstDispatchAt``: that
    dispatch (SCHEDULED, epoch ms), None until it happens. ``text``: the table's wait cell.
    """
    first = wait.first_dispatch
    return {
        "seconds": None if wait.seconds is None else round(wait.seconds),
        "ended": wait.ended,
        "firstDispatchAt": None if first is None else round(first * 1000),
        "text": wait.text(),
    }


def listed_json(record: JobRecord, wait: JobWait, *, beside: bool = False) -> ListedJson:
    """A listed job as JSON: its record and its wait (``record_json``'s ``beside``)."""
    return {**record_json(record, beside=beside), "wait": wait_json(wait)}


def story_json(story: JobStory) -> StoryJson:
    """One job's whole story as JSON: its record with the story's parts beside it."""
    submission, submitted = story.submission, story.placement.as_submitted
    return {
        **record_json(story.record, beside=True),
        "prediction": _prediction_json(story.prediction),
        "submission": None
        if submission is None
        else {
            "source": dict(submission.source) or None,
            "submittedAt": submission.submitted_at,
            "uploader": dict(submission.uploader) if submission.uploader is not None else None,
        },
        "wait": wait_json(story.wait),
        "placement": {
            "asSubmitted": None if submitted is None else _placement_json(submitted),
            "now": _placement_json(story.placement.now),
            "changes": [_line_json(e) for e in story.placement.changes],
        },
        "timeline": [_timeline_json(line) for line in story.timeline],
        "interruptions": [_line_json(e) for e in story.interruptions],
        "decisions": [
            {"at": e.at, "class": e.failure_class, "rule": e.rule, "action": e.action, "reason": e.reason}
            for e in story.decisions
        ],
        "alerts": [
            {"sentAt": a.sent_at, "kind": a.kind, "severity": a.severity, "subject": a.subject}
            for a in story.alerts
        ],
        "cost": _cost_json(story.cost),
    }


def _line_json(entry: HistoryEntry) -> LineJson:
    return {"at": entry.at, "label": history_label(entry), "reason": entry.reason}


def _placement_json(placement: Placement) -> PlacementJson:
    return {
        "queue": placement.queue,
        "share": placement.share,
        "tier": placement.tier.value if placement.tier else None,
        "schedulingPriority": placement.scheduling_priority,
    }


def _timeline_json(line: TimelineLine) -> TimelineJson:
    if line.kind is not None:
        return {
            "at": line.at,
            "label": line.label,
            "source": line.source,
            "status": line.status,
            "kind": line.kind.value,
            "reason": line.reason,
        }
    return {
        "at": line.at,
        "label": line.label,
        "source": line.source,
        "status": line.status,
        "secondaryStatus": line.secondary_status,
        "reason": line.reason,
        "trainingJobArn": line.training_job_arn,
    }


def _cost_json(cost: CostSummary) -> CostJson:
    return {
        "attempts": [
            {
                "trainingJobArn": c.training_job_arn,
                "instanceType": c.instance_type,
                "instanceCount": c.instance_count,
                "billableSeconds": c.billable_seconds,
                "usd": None if c.usd is None else round(c.usd, 2),
                "source": c.source.value,
            }
            for c in cost.attempts
        ],
        "usd": cost.usd,
        "billableInstanceHours": cost.billable_instance_hours,
    }


def _prediction_json(check: PredictionCheck | None) -> PredictionCheckJson | None:
    if check is None:
        return None
    prediction, (p10, p50, p90) = check.prediction, check.waits
    return {
        "predictedAt": prediction.predicted_at,
        "startP10": prediction.p10,
        "waitSecondsP10": p10,
        "startP50": prediction.p50,
        "waitSecondsP50": p50,
        "startP90": prediction.p90,
        "waitSecondsP90": p90,
        "actualMinusP50Seconds": check.actual_minus_p50,
    }
