"""gpusim: a discrete-event model of AWS Batch queues running SageMaker Training jobs.

One model, two clocks: ``Engine`` replays virtual time as fast as it can (what-if runs, trace
replay); ``RealtimeEngine`` maps the same virtual time to a scaled wall clock for the emulator.
"""

from __future__ import annotations

from .api import ApiError, BatchApi, SageMakerApi
from .engine import Engine, RealtimeEngine
from .model import BatchModel, Faults, ModelOptions, Timings

__all__ = [
    "ApiError",
    "BatchApi",
    "BatchModel",
    "Engine",
    "Faults",
    "ModelOptions",
    "RealtimeEngine",
    "SageMakerApi",
    "Timings",
]
