"""Checkpoint-aware reclaim: which running jobs to stop for a waiting HIGHPRI job, and its audit.

Its modules, each one job (callers import from the module; importing the package loads
none of them, so a handler's cold start pays only for what it uses):

- ``plan``: Checkpoint-aware reclaim: which running jobs to stop so a job waiting past its tier's threshold
  starts.
- ``reason``: Reclaim's stop reason: written by reclaim (domain/reclaim/plan.py), read back by the failure
  path.
- ``record``: The audit record of one reclaim: who waited and how long, each victim and what it loses.
"""

__all__ = [
    "plan",
    "reason",
    "record",
]
