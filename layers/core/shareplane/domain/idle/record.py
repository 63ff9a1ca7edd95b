"""The audit record of one idle-detector decision that acted (alert, warning, stop, stop and requeue).

``service/detect_idle.py`` builds it from ``domain.idle.decide``'s answer; the idle ledger stores it
(its layout is ``adapters/idle_items.py``'s) once per job, act and decision time, and gives it back:
the newest one at or before a tick's time is the ``previous`` notice of the job's next decision, and
``shareplane idle`` / ``shareplane jobs`` list them.
"""

from __future__ import annotations

from dataclasses import dataclass

from .policy import Act, Notice, Signal


@dataclass(frozen=True)
class IdleRecord:
    """One decision that acted on a job, and the evidence it acted on."""

    job_arn: str
    job_id: str
    signal: Signal
    act: Act
    decided_at: float
    #: Idle since (first idle sample after the last busy one), or the newest checkpoint for hung.
    since: float
    #: The newest sample every host had.
    until: float | None
    reason: str
    job_name: str | None = None
    training_job_name: str | None = None
    queue: str | None = None
    share: str | None = None
    team: str | None = None
    tier: str | None = None
    instance_type: str | None = None
    instances: int = 1
    gpus: int = 0
    peak_host_percent: float | None = None
    peak_memory_percent: float | None = None
    #: When a warned job will be stopped if it is still idle then.
    stop_at: float | None = None
    #: GPU-hours the evidence shows idle at this decision.
    idle_gpu_hours: float = 0.0
    #: Whether the stop call reached Batch (False: the job had ended meanwhile).
    stopped: bool = False

    @property
    def notice(self) -> Notice:
        """What the job's next decision must know about this one."""
        return Notice(self.signal, self.act, self.decided_at, self.since)
