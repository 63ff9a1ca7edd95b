"""What the CLI shows of jobs: the listing, one job's story, and why a job is waiting.

Its modules, each one job (callers import from the module; importing the package loads
none of them, so a handler's cold start pays only for what it uses):

- ``listing``: The job record: what `shareplane jobs` shows, built from stored state and history (pure).
- ``story``: One job's whole story, as `shareplane jobs JOB` tells it, from its record and what is stored
  beside it.
- ``wait``: Why is this job waiting: its queue's live state read into a forecast's input, and the reasons in
  words.
"""

__all__ = [
    "listing",
    "story",
    "wait",
]
