"""What the CLI shows of jobs: the job record, one job's story, why a job is waiting, and their JSON.

Its modules, each one job (callers import from the module; importing the package loads
none of them, so a handler's cold start pays only for what it uses):

- ``durations``: One way to print a span of time (``12m05s``, ``3h07m``, ``2d04h``) in every view (pure).
- ``record``: The job record: one job as `shareplane jobs` shows it, built from stored state and history
  (pure).
- ``record_json``: The job record and one job's story as JSON: what `shareplane jobs -o json` and `export`
  print.
- ``story``: One job's whole story, as `shareplane jobs JOB` tells it, from its record and what is stored
  beside it.
- ``wait``: Why is this job waiting: its queue's live state read into a forecast's input, and the reasons in
  words.
"""

__all__ = [
    "durations",
    "record",
    "record_json",
    "story",
    "wait",
]
