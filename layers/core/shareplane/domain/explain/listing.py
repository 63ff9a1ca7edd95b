"""The job record: what `shareplane jobs` shows, built from stored state and history (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..config.shares import SharesConfig
from ..jobs.lifecycle import HistoryEntry, JobState, ObservationKind, place_history
from ..jobs.training import TrainingJobState


def job_record(
    state: JobState,
    history: Sequence[HistoryEntry],
    training_job: TrainingJobState | None = None,
    config: SharesConfig | None = None,
) -> dict[str, Any]:
    """A job as JSON: identity, current state, counters and its history in the order it happened.

    Only order-independent facts appear (no write version), so any delivery order of the same
    events yields the same record. With the shares config, the job's team and tier stand beside its
    share identifier (from the config's mapping; None for a share the config does not name).
    """
    share = state.share
    tier = config.job_tier(share, state.scheduling_priority) if config else None
    return {
        "jobId": state.job_id,
        "jobArn": state.job_arn,
        "jobName": state.job_name,
        "jobQueue": state.job_queue,
        "status": state.status.value,
        "statusReason": state.status_reason,
        "shareIdentifier": state.share_identifier,
        "quotaShareName": state.quota_share_name,
        "team": config.team_for_share(share) if config else None,
        "tier": tier.value if tier else None,
        "schedulingPriority": state.scheduling_priority,
        "createdAt": state.created_at,
        "startedAt": state.started_at,
        "stoppedAt": state.stopped_at,
        "instanceType": state.instance_type or (training_job.instance_type if training_job else None),
        "instanceCount": state.instance_count or (training_job.instance_count if training_job else None),
        "trainingJobArn": state.latest_training_job_arn,
        "trainingJobStatus": training_job.status.value if training_job else None,
        "failureReason": training_job.failure_reason if training_job else None,
        "attempts": state.attempts,
        "preemptions": state.preemptions,
        "capacityRequeues": state.capacity_requeues,
        "history": [history_record(entry) for entry in place_history(history)],
    }


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


def history_label(entry: Mapping[str, Any]) -> str:
    """One history record in a few characters, by who reported it: ``batch:RUNNABLE``,
    ``reconciled:RUNNING``, ``shareplane:FAILED(failure_decision)``."""
    kind = ObservationKind(entry["kind"]) if entry.get("kind") else ObservationKind.STATE_CHANGE
    label = f"{HISTORY_SOURCES[kind]}:{entry['status']}"
    return label if kind in _PLAIN_KINDS else f"{label}({kind.value.lower()})"


def history_record(entry: HistoryEntry) -> dict[str, Any]:
    """One history entry as JSON; a failure decision also says its class, rule and action."""
    record: dict[str, Any] = {
        "status": entry.status.value,
        "at": entry.at,
        "reason": entry.reason,
        "kind": entry.kind.value,
    }
    if entry.kind is ObservationKind.FAILURE_DECISION:
        record |= {"class": entry.failure_class, "rule": entry.rule, "action": entry.action}
    return record
