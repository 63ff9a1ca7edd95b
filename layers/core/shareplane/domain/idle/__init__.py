"""Idle and hung GPU jobs: the per-team policy, the decision for one job and its audit record.

Its modules, each one job (callers import from the module; importing the package loads
none of them, so a handler's cold start pays only for what it uses):

- ``policy``: Idle and hung GPU jobs: the per-team policy and the decision for one job.
- ``record``: The audit record of one idle-detector decision that acted (alert, warning, stop, stop and
  requeue).
"""

__all__ = [
    "policy",
    "record",
]
