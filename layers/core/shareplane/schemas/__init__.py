"""Inbound event models: EventBridge envelopes with typed details, tolerant of unknown fields.

The state-event names below resolve on first use (PEP 562): a handler that imports one schema
module (``schemas.s3``, ``schemas.scheduled``) does not build the Batch and SageMaker state-event
models at cold start, and ``from shareplane.schemas import parse_state_event`` still works.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

#: Each re-exported name and the module (in this package) that defines it.
_HOME = {
    "BatchJobQueueBlocked": "batch",
    "BatchJobStateChange": "batch",
    "BatchServiceJobPreemptionCompleted": "batch",
    "BatchServiceJobPreemptionStarted": "batch",
    "BatchServiceJobQueueBlocked": "batch",
    "BatchServiceJobStateChange": "batch",
    "SageMakerTrainingJobStateChange": "sagemaker",
    "parse_state_event": "parse",
}

__all__ = list(_HOME)


def __getattr__(name: str) -> Any:
    """Import a re-exported name from its defining module the first time it is asked for."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_HOME[name]}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value
