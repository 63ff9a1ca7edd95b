"""Use case: a team's queued and running jobs, wherever they wait (what ``shareplane cleanup`` ends)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..domain.config.shares import SchedulingMode, SharesConfig
from ..domain.jobs.described_job import ListedJob
from ..domain.jobs.lifecycle import JobStatus
from ..domain.submit.jobspec import TEAM_TAG
from .ports import TeamJobsBatch

#: The states a queued or running job is in, in Batch's order.
ACTIVE_STATUSES = tuple(status.value for status in JobStatus if not status.is_final)


@dataclass(frozen=True)
class TeamJob:
    """One active job of a team, and the queue it is in."""

    team: str
    queue: str
    job: ListedJob


def find_team_jobs(batch: TeamJobsBatch, config: SharesConfig, teams: Sequence[str]) -> list[TeamJob]:
    """The teams' queued and running jobs: by share identifier on the GPU queue, by team tag on CPU."""
    return [*_gpu_jobs(batch, config, teams), *_cpu_jobs(batch, config, teams)]


def _gpu_jobs(batch: TeamJobsBatch, config: SharesConfig, teams: Sequence[str]) -> list[TeamJob]:
    queue = config.gpu_queue_name()
    quota = config.mode is SchedulingMode.QUOTA
    found = []
    for team in teams:
        # Every identifier of the team: its plain share (the jobs of tiers without an identifier of
        # their own, and jobs queued before the stack moved to team_tier) and its own-share tiers'.
        shares = {share for share, key in config.share_keys.items() if key.team == team}
        for share in sorted(shares | {config.teams[team].share}):
            found += [TeamJob(team, queue, job) for job in batch.active_jobs(queue, share, quota=quota)]
    return found


def _cpu_jobs(batch: TeamJobsBatch, config: SharesConfig, teams: Sequence[str]) -> list[TeamJob]:
    queue = config.queues.cpu_fifo
    if not queue:
        return []
    # A FIFO queue has no shares: ListServiceJobs cannot filter by team, the job's tags can.
    found = []
    for status in ACTIVE_STATUSES:
        for job in batch.list_jobs(queue, status):
            described = batch.describe(job.job_id)
            team = described.tags.get(TEAM_TAG) if described is not None else None
            if team is not None and team in teams:
                found.append(TeamJob(team, queue, job))
    return found
