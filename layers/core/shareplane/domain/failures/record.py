"""What the failure path keeps of one failure: its decision record, what applying it did, its storm entry.

A decision is written once (``DECISION#<job>#<attempt>``) and applied later, possibly by another
delivery: the record holds everything applying needs, so nothing is decided twice. How the record is
laid out in the table is the ledger adapter's business (``adapters/failure_items.py``). Beside it: the
delayed message that brings a requeue back when it is due (``RequeueDue``; its body is
``adapters/due_messages.py``'s) and the watch's priority escalation a history item keeps
(``PriorityRaise``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .decision import FailureDecision
from .requeue import ChainState

__all__ = ["REQUEUE_DUE", "Applied", "DecisionRecord", "PriorityRaise", "RequeueDue", "StormFailure"]

#: The ``shareplane`` member of the failure path's own delayed message: a decision's requeue is due.
REQUEUE_DUE = "requeue-due"


@dataclass(frozen=True)
class RequeueDue:
    """The failure path's own delayed message: the decision whose requeue is due, and when (epoch seconds).

    The path sends it with every member set; one sent by hand may lack the job or the due time.
    """

    decision_key: str
    job_arn: str | None = None
    due_at: float | None = None


@dataclass(frozen=True)
class Applied:
    """What applying a decision did; only the members that are set are stored."""

    #: The job a requeue submitted, and the clientToken it was submitted with.
    new_job_arn: str | None = None
    client_token: str | None = None
    #: Why Batch refused the requeue (cut to 500 characters).
    refused: str | None = None
    #: Whether an alert decision's alert went out (False: it was quiet).
    alerted: bool | None = None


@dataclass(frozen=True)
class DecisionRecord:
    """One failure's decision as stored: the failed job, the decision, and the chain its requeue carries."""

    job_arn: str
    decision: FailureDecision
    #: The requeue chain after this failure (what a requeued job's tags say).
    chain: ChainState
    #: The trigger's time it was decided at, and when a requeue is due (``decided_at`` + backoff).
    decided_at: float
    due_at: float
    job_id: str | None = None
    job_name: str | None = None
    job_queue: str | None = None
    share: str = "none"
    training_job_name: str | None = None
    tier: str | None = None
    team: str | None = None
    #: What the storm guard counts the failure under (the share, or ``team:<team>`` for CPU jobs).
    storm_scope: str | None = None
    #: Set once the decision was applied; ``scheduled`` once a delayed requeue message was sent.
    applied: bool = False
    scheduled: bool = False
    result: Applied = field(default_factory=Applied)

    @property
    def new_job_arn(self) -> str | None:
        """The job a requeue submitted, once applied."""
        return self.result.new_job_arn


@dataclass(frozen=True)
class StormFailure:
    """One failure the storm guard counts in its scope's window (the digest lists these)."""

    scope: str
    at: float
    job_arn: str
    job_name: str | None = None
    failure_class: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class PriorityRaise:
    """The watch's escalation of a waiting job: the schedulingPriority it had and the one it got (kept
    on the job's history item)."""

    from_priority: int
    to_priority: int
