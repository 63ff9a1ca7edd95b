"""The JSON bodies of the delayed messages a timer delivers back to its own queue.

``schemas/failure.py`` and ``schemas/reclaim.py`` read these bodies back into the same values; the
timer on SQS and EventBridge Scheduler and its in-memory fake both send what ``due_body`` writes.
"""

from __future__ import annotations

from ..domain.failures.record import REQUEUE_DUE, RequeueDue
from ..domain.reclaim.record import RECLAIM_DUE, ReclaimDue


def due_body(message: RequeueDue | ReclaimDue) -> dict[str, object]:
    """The message body of a requeue that is due, or of reclaim's re-check of a waiting job."""
    if isinstance(message, RequeueDue):
        body = {
            "shareplane": REQUEUE_DUE,
            "decisionKey": message.decision_key,
            "jobArn": message.job_arn,
            "dueAt": message.due_at,
        }
        # An unset member is left out, as the parser reads an absent one (the path sets every one).
        return {name: value for name, value in body.items() if value is not None}
    # Decided at ``hopAt``; when that is before ``dueAt`` the re-check only hops on.
    return {
        "shareplane": RECLAIM_DUE,
        "jobArn": message.job_arn,
        "jobId": message.job_id,
        "dueAt": message.due_at,
        "hopAt": message.hop_at,
    }
