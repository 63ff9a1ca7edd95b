"""One job's whole story, as `shareplane jobs JOB` tells it, from its record and what is stored beside it.

The record (``records.job_record``) holds Batch's side; beside it the store keeps each attempt's
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
from ..config.shares import SharesConfig
from ..cost.billing import AttemptCost
from ..forecast.prediction import prediction_from_record
from ..jobs.lifecycle import ObservationKind
from ..jobs.training import TrainingHistoryEntry
from .listing import HISTORY_SOURCES, history_label
from .wait import WAITING, first_start

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

    def text(self) -> str:
        """``12m05s``, ``3m10s so far`` or ``-`` (never dispatched, not waiting)."""
        if self.seconds is None:
            return "-"
        total = round(self.seconds)
        hours, rest = divmod(total, 3600)
        minutes, seconds = divmod(rest, 60)
        shown = (
            f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"
        )
        return shown if self.ended else f"{shown} so far"


def observed_now(records: Iterable[Mapping[str, Any]], clock: float) -> float:
    """``clock`` (epoch s), or the newest time the records hold if that is later.

    A recorded event cannot come from the future, so its time is a lower bound of now. It wins when
    the queue's clock runs ahead of the reader's: the local stack's emulator on its sped-up virtual
    clock, or a skewed laptop clock.
    """
    newest = 0
    for record in records:
        newest = max(newest, record.get("createdAt") or 0, record.get("stoppedAt") or 0)
        for entry in record.get("history") or ():
            newest = max(newest, entry.get("at") or 0)
    return max(clock, newest / 1000.0)


def job_wait(record: Mapping[str, Any], now: float) -> JobWait:
    """The wait of a record's job at ``now`` (epoch s): submission (createdAt) to first SCHEDULED."""
    created = record.get("createdAt")
    if created is None:
        return JobWait(None, False)
    started = first_start(record)
    if started is not None:
        return JobWait(max(0.0, started - created / 1000.0), True)
    if record.get("status") in WAITING:
        return JobWait(max(0.0, now - created / 1000.0), False)
    return JobWait(None, False)


def wait_summary(record: Mapping[str, Any], now: float) -> dict[str, Any]:
    """A record's wait as JSON, as one job's story and the job list give it (``now``, epoch s, dates
    the wait of a job still waiting).

    ``seconds``: to the first dispatch, or so far while the job waits; None when it was never
    dispatched and no longer waits. ``ended``: the wait ended at a dispatch. ``firstDispatchAt``: that
    dispatch (SCHEDULED, epoch ms), None until it happens. ``text``: the table's wait cell.
    """
    wait = job_wait(record, now)
    first = first_start(record)
    return {
        "seconds": None if wait.seconds is None else round(wait.seconds),
        "ended": wait.ended,
        "firstDispatchAt": None if first is None else round(first * 1000),
        "text": wait.text(),
    }


def _kind(entry: Mapping[str, Any]) -> ObservationKind:
    return ObservationKind(entry.get("kind") or ObservationKind.STATE_CHANGE.value)


def timeline(
    record: Mapping[str, Any], training: Mapping[str, Sequence[TrainingHistoryEntry]]
) -> list[dict[str, Any]]:
    """Batch's history and each attempt's SageMaker events in one list by time, each labelled by source.

    Batch's entries keep the order the record placed them in; a SageMaker event at the same
    millisecond follows them. SageMaker events with no time go last.
    """
    lines: list[tuple[float, int, int, dict[str, Any]]] = []
    for n, entry in enumerate(record.get("history") or ()):
        kind = _kind(entry)
        line = {
            "at": entry.get("at"),
            "label": history_label(entry),
            "source": HISTORY_SOURCES[kind],
            "status": entry.get("status"),
            "kind": kind.value,
            "reason": entry.get("reason"),
        }
        lines.append((float(entry.get("at") or 0), 0, n, line))
    for arn, entries in sorted(training.items()):
        for n, event in enumerate(entries):
            line = {
                "at": event.at or None,
                "label": event.label,
                "source": "sagemaker",
                "status": event.status.value,
                "secondaryStatus": event.secondary_status,
                "reason": event.failure_reason,
                "trainingJobArn": arn,
            }
            lines.append((float(event.at) if event.at else float("inf"), 1, n, line))
    return [line for *_, line in sorted(lines, key=lambda t: t[:3])]


def interruptions(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Preemptions, reclaims and requeues (a RUNNABLE after a dispatch), each with its reason."""
    out: list[dict[str, Any]] = []
    dispatched = False
    for entry in record.get("history") or ():
        kind, status = _kind(entry), entry.get("status")
        requeued = kind is ObservationKind.STATE_CHANGE and status == "RUNNABLE" and dispatched
        if kind in INTERRUPTION_KINDS or requeued:
            out.append({"at": entry.get("at"), "label": history_label(entry), "reason": entry.get("reason")})
        if status == "SCHEDULED":
            dispatched = True
        elif requeued:
            dispatched = False
    return out


def decisions(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The failure path's decisions on this job: class, matched rule, action and why."""
    return [
        {
            "at": e.get("at"),
            "class": e.get("class"),
            "rule": e.get("rule"),
            "action": e.get("action"),
            "reason": e.get("reason"),
        }
        for e in record.get("history") or ()
        if _kind(e) is ObservationKind.FAILURE_DECISION
    ]


def changes(
    record: Mapping[str, Any], submitted_request: Mapping[str, Any] | None, config: SharesConfig | None = None
) -> dict[str, Any]:
    """Queue, share, tier and priority as submitted and as now, and each change shareplane made.

    The tier as submitted is the config's reading of the request's share and priority (None without
    the config).
    """
    now = {
        "queue": record.get("jobQueue"),
        "share": record.get("shareIdentifier") or record.get("quotaShareName"),
        "tier": record.get("tier"),
        "schedulingPriority": record.get("schedulingPriority"),
    }
    request = submitted_request or {}
    submitted = None
    if request:
        share = request.get("shareIdentifier") or request.get("quotaShareName")
        priority = request.get("schedulingPriority")
        tier = config.job_tier(share, priority) if config is not None else None
        submitted = {
            "queue": request.get("jobQueue"),
            "share": share,
            "tier": tier.value if tier else None,
            "schedulingPriority": priority,
        }
    made = [
        {"at": e.get("at"), "label": history_label(e), "reason": e.get("reason")}
        for e in record.get("history") or ()
        if _kind(e) in CHANGE_KINDS
    ]
    return {"asSubmitted": submitted, "now": now, "changes": made}


def cost_summary(costs: Sequence[AttemptCost]) -> dict[str, Any]:
    """Each attempt's cost and the job's total (USD only over attempts with a price)."""
    attempts = [
        {
            "trainingJobArn": c.training_job_arn,
            "instanceType": c.instance_type,
            "instanceCount": c.instance_count,
            "billableSeconds": c.billable_seconds,
            "usd": None if c.usd is None else round(c.usd, 2),
            "source": c.source.value,
        }
        for c in sorted(costs, key=lambda c: c.at)
    ]
    priced = [c.usd for c in costs if c.usd is not None]
    return {
        "attempts": attempts,
        "usd": round(sum(priced), 2) if priced else None,
        "billableInstanceHours": round(sum(c.billable_instance_hours for c in costs), 3),
    }


def prediction_summary(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """The start prediction a watch tick stored on the record, with the waits it meant and, once the
    job started, how far its p50 was from the actual start. None when the record carries none."""
    prediction = prediction_from_record(record.get("prediction"))
    if prediction is None:
        return None
    created = record.get("createdAt")
    started = first_start(record)
    out: dict[str, Any] = {"predictedAt": prediction.predicted_at}
    for name, start in (("P10", prediction.p10), ("P50", prediction.p50), ("P90", prediction.p90)):
        out[f"start{name}"] = start
        out[f"waitSeconds{name}"] = (
            None if start is None or created is None else round((start - created) / 1000.0)
        )
    p50 = out["startP50"]
    out["actualMinusP50Seconds"] = None if started is None or p50 is None else round(started - p50 / 1000.0)
    return out


def job_story(
    record: Mapping[str, Any],
    *,
    training: Mapping[str, Sequence[TrainingHistoryEntry]],
    alerts: Sequence[SentAlert],
    costs: Sequence[AttemptCost],
    submission: Mapping[str, Any] | None,
    now: float,
    config: SharesConfig | None = None,
) -> dict[str, Any]:
    """The record with its whole story beside it, as JSON (times in epoch ms, as in the record).

    ``training``: each attempt's SageMaker events by training-job ARN; ``alerts``: those sent for
    this job; ``costs``: its attempts' recorded costs; ``submission``: the submit path's PAYLOAD
    item (``source``, ``request``, ``submittedAt``), None for a job it did not submit; ``now``
    (epoch s) dates the wait of a job still waiting; ``config`` reads the tier it was submitted in.
    """
    request = (submission or {}).get("request")
    return {
        **record,
        "submission": None
        if submission is None
        else {
            "source": submission.get("source"),
            "submittedAt": submission.get("submittedAt"),
            "uploader": submission.get("uploader"),
        },
        "wait": wait_summary(record, now),
        "placement": changes(record, request if isinstance(request, Mapping) else None, config),
        "timeline": timeline(record, training),
        "interruptions": interruptions(record),
        "decisions": decisions(record),
        "alerts": [
            {"sentAt": a.sent_at, "kind": a.kind, "severity": a.severity, "subject": a.subject}
            for a in sorted(alerts, key=lambda a: a.sent_at)
        ],
        "cost": cost_summary(costs),
        "prediction": prediction_summary(record),
    }
