"""SageMaker training jobs: observations of one training job and their fold into its state.

A training job belongs to one Batch attempt; its events are recorded under the training job's ARN
and joined to the Batch job through the job's attempts (``lifecycle.correlates``), never by name.
SageMaker may send several events per change with different ids, so the dedupe key is the content.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

from .lifecycle import Decision


class TrainingJobStatus(StrEnum):
    """SageMaker's TrainingJobStatus."""

    IN_PROGRESS = "InProgress"
    COMPLETED = "Completed"
    FAILED = "Failed"
    STOPPING = "Stopping"
    STOPPED = "Stopped"
    DELETING = "Deleting"

    @property
    def is_final(self) -> bool:
        return self in (TrainingJobStatus.COMPLETED, TrainingJobStatus.FAILED, TrainingJobStatus.STOPPED)


@dataclass(frozen=True)
class TrainingJobObservation:
    """One SageMaker training job event, normalized."""

    training_job_arn: str
    status: TrainingJobStatus
    training_job_name: str | None = None
    secondary_status: str | None = None
    failure_reason: str | None = None
    instance_type: str | None = None
    instance_count: int | None = None
    created_at: int | None = None
    training_started_at: int | None = None
    training_ended_at: int | None = None
    last_modified_at: int | None = None
    transitions: int = 0
    tags: Mapping[str, str] = field(default_factory=dict)
    #: DescribeTrainingJob's BillableTimeInSeconds and TrainingTimeInSeconds (final states only).
    billable_seconds: int | None = None
    training_seconds: int | None = None
    managed_spot: bool = False

    @property
    def digest(self) -> str:
        payload = [
            self.training_job_arn,
            self.status.value,
            self.secondary_status,
            self.failure_reason,
            self.last_modified_at,
            self.transitions,
            self.training_ended_at,
        ]
        return hashlib.sha256(json.dumps(payload).encode()).hexdigest()[:16]

    @property
    def seq(self) -> str:
        """(final, last modified ms, number of secondary transitions, digest) as a sortable string."""
        final, modified = int(self.status.is_final), self.last_modified_at or 0
        return f"{final}|{modified:013d}|{self.transitions:04d}|{self.digest}"


@dataclass(frozen=True)
class TrainingJobState:
    """What is known of one training job: the newest observation's fields and what was seen."""

    training_job_arn: str
    status: TrainingJobStatus
    seq: str
    training_job_name: str | None = None
    secondary_status: str | None = None
    failure_reason: str | None = None
    instance_type: str | None = None
    instance_count: int | None = None
    created_at: int | None = None
    training_started_at: int | None = None
    training_ended_at: int | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    managed_spot: bool = False
    #: BillableTimeInSeconds, from the final event (or DescribeTrainingJob) that carried it.
    billable_seconds: int | None = None
    seen: tuple[str, ...] = ()
    version: int = 0


@dataclass(frozen=True)
class TrainingHistoryEntry:
    """One recorded SageMaker event of a training job: its status, secondary status and when."""

    status: TrainingJobStatus
    #: LastModifiedTime of the event, epoch ms (0 when the event carried none).
    at: int
    secondary_status: str | None = None
    failure_reason: str | None = None

    @property
    def label(self) -> str:
        """``sagemaker:<SecondaryStatus>`` (Starting, Training, Completed, ...), else the status."""
        return f"sagemaker:{self.secondary_status or self.status.value}"


@dataclass(frozen=True)
class TrainingTransition:
    """The decision for one training-job observation and the state to write."""

    decision: Decision
    state: TrainingJobState
    previous: TrainingJobState | None


def decide_training(current: TrainingJobState | None, obs: TrainingJobObservation) -> TrainingTransition:
    """Fold one SageMaker observation into the training job's state."""
    digest = obs.digest
    if current is not None and digest in current.seen:
        return TrainingTransition(Decision.DUPLICATE, current, current)
    newest = current is None or obs.seq > current.seq
    state = current or TrainingJobState(training_job_arn=obs.training_job_arn, status=obs.status, seq="")
    if newest:
        state = replace(
            state,
            status=obs.status,
            seq=obs.seq,
            secondary_status=obs.secondary_status,
            failure_reason=obs.failure_reason,
        )
    # Fields that never change for one training job: the first value seen is the value.
    state = replace(
        state,
        training_job_name=state.training_job_name or obs.training_job_name,
        instance_type=state.instance_type or obs.instance_type,
        instance_count=state.instance_count or obs.instance_count,
        created_at=state.created_at or obs.created_at,
        training_started_at=state.training_started_at or obs.training_started_at,
        training_ended_at=state.training_ended_at or obs.training_ended_at,
        tags=state.tags or obs.tags,
        managed_spot=state.managed_spot or obs.managed_spot,
        billable_seconds=state.billable_seconds
        if state.billable_seconds is not None
        else obs.billable_seconds,
        seen=tuple(sorted(state.seen + (digest,))),
        version=(current.version if current else 0) + 1,
    )
    return TrainingTransition(Decision.APPLY if newest else Decision.STALE, state, current)


@dataclass(frozen=True)
class TrainingJobFacts:
    """What the failure path reads of a training job (DescribeTrainingJob, or the table's final state)."""

    name: str | None = None
    #: SageMaker's TrainingJobStatus and SecondaryStatus as written (Failed, Stopped, ...).
    status: str | None = None
    secondary_status: str | None = None
    failure_reason: str | None = None
