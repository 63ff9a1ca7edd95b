"""The audit record of one reclaim: who waited and how long, each victim and what it loses; and
reclaim's delayed re-check of a waiting job (``ReclaimDue``), which its timer delivers.

``service/reclaim_capacity.py`` builds it from the plan; the reclaim ledger stores it (its layout is
``adapters/reclaim_items.py``'s) and gives it back, with whether and when its victims were stopped.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The ``shareplane`` member of reclaim's own delayed re-check of a waiting job.
RECLAIM_DUE = "reclaim-due"


@dataclass(frozen=True)
class ReclaimDue:
    """Reclaim's delayed re-check of a waiting job: due at ``due_at``, sent to arrive at ``hop_at``."""

    job_arn: str
    job_id: str
    due_at: float
    hop_at: float


@dataclass(frozen=True)
class ReclaimVictimRecord:
    """One job stopped for the waiting job, and what stopping it costs."""

    job_id: str
    job_arn: str
    team: str
    tier: str
    instances: int
    reason: str
    job_name: str | None = None
    share: str | None = None
    instance_type: str | None = None
    borrowed: bool = False
    checkpoint_age_seconds: int | None = None
    lost_instance_minutes: float = 0.0
    gpu_hours_lost: float = 0.0


@dataclass(frozen=True)
class ReclaimRecord:
    """One reclaim decision, as planned (``applied`` once its victims were stopped)."""

    decision_id: str
    job_id: str
    job_arn: str
    team: str
    tier: str
    victims: tuple[ReclaimVictimRecord, ...]
    decided_at: float
    job_name: str | None = None
    job_queue: str | None = None
    share: str | None = None
    waited_seconds: int = 0
    reclaim_after_seconds: int | None = None
    short_instances: int = 0
    lost_instance_minutes: float = 0.0
    dry_run: bool = False
    #: The waiting job's victim count the plan read: the claim is refused if it moved since.
    victims_before: int | None = None
    applied: bool = False
    applied_at: float | None = None

    @property
    def waiting_name(self) -> str:
        """The waiting job's name, else its id."""
        return self.job_name or self.job_id
