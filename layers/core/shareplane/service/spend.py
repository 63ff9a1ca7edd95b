"""A team's month: what it was billed (the SPEND items) plus what its running attempts have accrued.

The running attempts are the training jobs the table holds as not final (``JobStore.open_attempts``,
one Query and two batched reads), each charged to the team of the Batch job that runs it
(``domain/cost.cost_owner``); an attempt no Batch job links yet, or whose job is of no team, accrues
to nobody. Submission's budget check, the watch's budget gauges and alerts, and ``shareplane
budgets`` all read a month through ``team_months``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..domain.config.shares import SharesConfig
from ..domain.cost.billing import (
    AttemptCost,
    CostOwner,
    OpenAttempt,
    cost_owner,
    month_of,
    running_cost,
    with_job,
)

if TYPE_CHECKING:
    from ..domain.jobs.lifecycle import JobState
    from ..domain.submit.payload import SubmittedPayload


class SpendReader(Protocol):
    """What a team's month is read from: the billed spend, the open attempts and the submit path's team."""

    def month_spend(self, team: str, month: str) -> float:
        """USD the team was billed in ``month`` (``YYYY-MM``, UTC); 0 before its first."""
        ...

    def open_attempts(self) -> list[OpenAttempt]:
        """Every training job not final in the table, with the Batch job its link names."""
        ...

    def load_payload(self, job_arn: str) -> SubmittedPayload | None:
        """What the submit path stored for the job (its team among it)."""
        ...


@dataclass(frozen=True)
class TeamMonth:
    """One team's month: billed (finished attempts) and accrued (running ones), in USD."""

    team: str
    month: str
    billed_usd: float
    accrued_usd: float

    @property
    def spent_usd(self) -> float:
        return self.billed_usd + self.accrued_usd


def owner_of(job: JobState | None, reader: SpendReader, config: SharesConfig) -> CostOwner | None:
    """The team an attempt of ``job`` is charged to (None: no link, or a job of no team's)."""
    if job is None:
        return None
    submitted = None
    if not job.share or job.share == "none":
        # A job without a share (CPU FIFO) has the team the submit path recorded, and no other.
        payload = reader.load_payload(job.job_arn)
        submitted = payload.team if payload else None
    return cost_owner(job, config, submitted)


def accruing(
    attempts: Iterable[OpenAttempt], reader: SpendReader, config: SharesConfig, now_ms: int
) -> list[AttemptCost]:
    """What each open attempt has accrued up to ``now_ms``, charged to its Batch job's team."""
    out = []
    for attempt in attempts:
        owner = owner_of(attempt.job, reader, config)
        estimate = running_cost(attempt.training, owner, now_ms, config)
        if estimate is not None:
            out.append(with_job(estimate, attempt.job.job_arn if attempt.job else None))
    return out


def team_months(
    reader: SpendReader,
    config: SharesConfig,
    teams: Sequence[str],
    now_ms: int,
    attempts: Sequence[OpenAttempt] | None = None,
) -> dict[str, TeamMonth]:
    """Each of ``teams``' month of ``now_ms``: billed, plus the accrual of its running attempts in it.

    The open attempts are read once (not per team), and only when some team is asked for, unless the
    caller has them (``attempts``: the watch, which has just reconciled them).
    """
    if not teams:
        return {}
    month = month_of(now_ms)
    accrued: dict[str, float] = {}
    opened = reader.open_attempts() if attempts is None else attempts
    for estimate in accruing(opened, reader, config, now_ms):
        if estimate.team is not None:
            accrued[estimate.team] = accrued.get(estimate.team, 0.0) + estimate.by_month().get(month, 0.0)
    return {
        team: TeamMonth(team, month, reader.month_spend(team, month), round(accrued.get(team, 0.0), 6))
        for team in teams
    }
