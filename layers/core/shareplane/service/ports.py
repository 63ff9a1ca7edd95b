"""Ports the use cases talk through; adapters implement them, tests fake them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from ..domain.lifecycle import HistoryEntry, JobMetricEvent, JobState, Transition
from ..domain.training import TrainingJobObservation, TrainingJobState, TrainingTransition


class JobStore(Protocol):
    """Current state and history of jobs and their training jobs."""

    def load_job(self, job_arn: str) -> JobState | None:
        """The job's current state, read consistently; None when never recorded."""
        ...

    def save_job(self, transition: Transition) -> bool:
        """Write one transition atomically; False when it was already recorded (a duplicate).

        Raises ConcurrentUpdateError when the state changed since it was loaded.
        """
        ...

    def load_training_job(self, training_job_arn: str) -> TrainingJobState | None:
        """The training job's current state; None when never recorded."""
        ...

    def save_training_job(self, transition: TrainingTransition, observation: TrainingJobObservation) -> bool:
        """Write one training-job transition atomically; False for a duplicate."""
        ...

    def job_history(self, job_arn: str) -> Sequence[HistoryEntry]:
        """The job's history in the order it happened."""
        ...


class MetricsSink(Protocol):
    """Where job measurements go (EMF in Lambda)."""

    def emit(
        self, events: Sequence[JobMetricEvent], dimensions: Mapping[str, str], properties: Mapping[str, str]
    ) -> None:
        """Publish measurements under the given dimensions, with properties that are not dimensions."""
        ...
