"""The failure path: classify a failed job, decide requeue, alert or nothing, and what it keeps.

Its modules, each one job (callers import from the module; importing the package loads
none of them, so a handler's cold start pays only for what it uses):

- ``decision``: The failure path, decided purely: classify a failed job, then plan requeue, alert or
  nothing.
- ``record``: What the failure path keeps of one failure: its decision record, what applying it did, its
  storm entry.
- ``requeue``: Requeue requests, built purely: the failed job's own SubmitServiceJob, changed only by the
  decision.
"""

__all__ = [
    "decision",
    "record",
    "requeue",
]
