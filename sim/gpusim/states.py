"""Service job statuses as DescribeServiceJob reports them; model, schedulers and wire shapes share them."""

from __future__ import annotations

SUBMITTED = "SUBMITTED"
RUNNABLE = "RUNNABLE"
SCHEDULED = "SCHEDULED"
STARTING = "STARTING"
RUNNING = "RUNNING"
SUCCEEDED = "SUCCEEDED"
FAILED = "FAILED"
#: Holding capacity: from dispatch until the attempt ends.
DISPATCHED = frozenset({SCHEDULED, STARTING, RUNNING})
FINAL = frozenset({SUCCEEDED, FAILED})
