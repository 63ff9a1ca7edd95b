"""Inbound event models: EventBridge envelopes with typed details, tolerant of unknown fields."""

from .batch import (
    BatchJobQueueBlocked,
    BatchJobStateChange,
    BatchServiceJobPreemptionCompleted,
    BatchServiceJobPreemptionStarted,
    BatchServiceJobQueueBlocked,
    BatchServiceJobStateChange,
)
from .parse import JobEvent, TrainingJobEvent, parse_state_event
from .sagemaker import SageMakerTrainingJobStateChange

__all__ = [
    "BatchJobQueueBlocked",
    "BatchJobStateChange",
    "BatchServiceJobPreemptionCompleted",
    "BatchServiceJobPreemptionStarted",
    "BatchServiceJobQueueBlocked",
    "BatchServiceJobStateChange",
    "JobEvent",
    "SageMakerTrainingJobStateChange",
    "TrainingJobEvent",
    "parse_state_event",
]
