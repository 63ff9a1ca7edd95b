"""What operators read per team in the team x tier layout: watch_jobs gauges and job records."""

from __future__ import annotations

import pytest
from shareplane.domain.jobs.lifecycle import CapacityUsage, JobState, JobStatus
from shareplane.service.queries import JobQuery, job_records
from shareplane.service.watch_jobs import publish_gauges

from tests.fakes.failure_world import World

QUEUE = "arn:aws:batch:us-east-1:123456789012:job-queue/search-p4d-queue"


def job(n: int, share: str | None, status: JobStatus, instances: int = 4, priority: int = 50) -> JobState:
    """A job of the GPU queue holding (or wanting) ``instances`` instances."""
    return JobState(
        job_arn=f"arn:aws:batch:us-east-1:123456789012:service-job/j{n}",
        status=status,
        seq=str(n),
        job_queue=QUEUE,
        share_identifier=share,
        scheduling_priority=priority,
        created_at=1_773_722_000_000,
        capacity_usage=(CapacityUsage("NUM_INSTANCES", float(instances)),),
    )


# config/shares.yaml: HIGHPRI has an identifier of its own per team; MIDPRI and LOWPRI go to the team's.
JOBS = [
    job(1, "ProdExp1HIGHPRI", JobStatus.RUNNING, 8, priority=90),
    job(2, "ProdExp1", JobStatus.RUNNING, 16, priority=10),
    job(3, "ProdExp1", JobStatus.STARTING, 4),
    job(4, "ProdExp2", JobStatus.RUNNING, 10, priority=50),
    job(5, "ProdExp2HIGHPRI", JobStatus.RUNNABLE, 2, priority=90),
    job(6, "Intern", JobStatus.RUNNING, 1),
]


class Reader:
    """The jobs table's read side: JOBS, no history, no training jobs."""

    def jobs(self, status: str | None = None) -> list[JobState]:
        return [j for j in JOBS if status is None or j.status.value == status]

    def job_history(self, job_arn: str) -> list:
        return []

    def load_training_job(self, arn: str) -> None:
        return None


def test_instances_in_use_are_gauged_per_team_summing_its_identifiers() -> None:
    world = World()
    by_status: dict[JobStatus, list[JobState]] = {}
    for j in JOBS:
        by_status.setdefault(j.status, []).append(j)
    publish_gauges(by_status, world.ports, now=1_773_722_900.0)
    in_use = {d["Team"]: v for n, v, d in world.metrics.emitted if n == "InstancesInUse"}
    entitled = {d["Team"]: v for n, v, d in world.metrics.emitted if n == "InstancesEntitled"}
    assert in_use == {"ProdExp1": 28.0, "ProdExp2": 10.0, "none": 1.0}
    assert entitled == {"ProdExp1": 60, "ProdExp2": 40}
    runnable = {d["Tier"]: v for n, v, d in world.metrics.emitted if n == "RunnableJobs"}
    assert runnable["HIGHPRI"] == 1


@pytest.mark.parametrize(
    ("team", "tier", "names"),
    [
        ("ProdExp1", None, ["j1", "j2", "j3"]),
        (None, "HIGHPRI", ["j1", "j5"]),
        ("ProdExp1", "HIGHPRI", ["j1"]),
        ("ProdExp1", "LOWPRI", ["j2"]),
        ("ProdExp2", "MIDPRI", ["j4"]),
    ],
    ids=[
        "a team's jobs are found under its tier's own identifier and its plain share",
        "a tier's jobs are found across teams",
        "team and tier together narrow to the tier's own identifier",
        "on the team's plain share the tier is the one the job's priority reaches",
        "team and tier together narrow to the team's jobs of that tier",
    ],
)
def test_job_records_filter_by_team_and_tier(team: str | None, tier: str | None, names: list[str]) -> None:
    query = JobQuery(teams=frozenset({team} if team else ()), tiers=frozenset({tier} if tier else ()))
    records = job_records(Reader(), query, config=World().config)
    assert sorted(r.job_arn.rsplit("/", 1)[-1] for r in records) == names
    assert all(r.team == (team or r.team) and r.state.share_identifier for r in records)
