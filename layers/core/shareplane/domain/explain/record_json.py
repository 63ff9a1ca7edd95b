"""The job record and one job's story as JSON: what `shareplane jobs -o json` and `export` print.

Built once, at the edge, from the typed values (``record.JobRecord``, ``story.JobStory``); nothing
reads it back. Times are epoch ms, as stored; the keys are the CLI's published JSON.
"""

from __future__ import annotations

from typing import Any

from ..jobs.lifecycle import HistoryEntry, ObservationKind
from .record import JobRecord, history_label
from .story import CostSummary, JobStory, JobWait, Placement, PredictionCheck, TimelineLine


def history_json(entry: HistoryEntry) -> dict[str, Any]:
    """One history entry as JSON; a failure decision also says its class, rule and action."""
    shown: dict[str, Any] = {
        "status": entry.status.value,
        "at": entry.at,
        "reason": entry.reason,
        "kind": entry.kind.value,
    }
    if entry.kind is ObservationKind.FAILURE_DECISION:
        shown |= {"class": entry.failure_class, "rule": entry.rule, "action": entry.action}
    return shown


def record_json(record: JobRecord, *, beside: bool = False) -> dict[str, Any]:
    """A job as JSON: identity, current state, counters and its history in the order it happened.

    ``beside``: the record's ``uploader`` and stored ``prediction`` were read, so they are shown
    (None: the store holds none).
    """
    state, training = record.state, record.training
    shown: dict[str, Any] = {
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


def wait_json(wait: JobWait) -> dict[str, Any]:
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


def story_json(story: JobStory) -> dict[str, Any]:
    """One job's whole story as JSON: its record with the story's parts beside it."""
    submission = story.submission
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
            "asSubmitted": _placement_json(story.placement.as_submitted),
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


def _line_json(entry: HistoryEntry) -> dict[str, Any]:
    return {"at": entry.at, "label": history_label(entry), "reason": entry.reason}


def _placement_json(placement: Placement | None) -> dict[str, Any] | None:
    if placement is None:
        return None
    return {
        "queue": placement.queue,
        "share": placement.share,
        "tier": placement.tier.value if placement.tier else None,
        "schedulingPriority": placement.scheduling_priority,
    }


def _timeline_json(line: TimelineLine) -> dict[str, Any]:
    shown: dict[str, Any] = {"at": line.at, "label": line.label, "source": line.source, "status": line.status}
    if line.kind is not None:
        return shown | {"kind": line.kind.value, "reason": line.reason}
    return shown | {
        "secondaryStatus": line.secondary_status,
        "reason": line.reason,
        "trainingJobArn": line.training_job_arn,
    }


def _cost_json(cost: CostSummary) -> dict[str, Any]:
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


def _prediction_json(check: PredictionCheck | None) -> dict[str, Any] | None:
    if check is None:
        return None
    prediction = check.prediction
    shown: dict[str, Any] = {"predictedAt": prediction.predicted_at}
    starts = (prediction.p10, prediction.p50, prediction.p90)
    for name, start, wait in zip(("P10", "P50", "P90"), starts, check.waits, strict=True):
        shown[f"start{name}"] = start
        shown[f"waitSeconds{name}"] = wait
    shown["actualMinusP50Seconds"] = check.actual_minus_p50
    return shown
