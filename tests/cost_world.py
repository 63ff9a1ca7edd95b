"""Batch jobs and their training jobs as the events and the DescribeTrainingJob answers that cost them.

Shared by the cost tests on the fakes: an ``Attempt`` is one training job (its billed interval, its
instances, its final status), a ``Job`` a Batch service job of one team's share running attempts one
after another. ``events`` gives every event both services would send; ``described`` what SageMaker
answers for a training job (the fake's DescribeTrainingJob), ``expected_months`` what each team's
month should hold, worked out here from the interval overlaps and not by the code under test.
"""

from __future__ import annotations

import calendar
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from shareplane.domain.jobs.lifecycle import JobObservation, JobStatus
from shareplane.domain.jobs.tags import TEAM_TAG, TIER_TAG
from shareplane.domain.jobs.training import TrainingJobObservation, TrainingJobStatus

ACCOUNT = "123456789012"
TJ_ARN = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/"
JOB_ARN = f"arn:aws:batch:us-east-1:{ACCOUNT}:service-job/"
QUEUE = f"arn:aws:batch:us-east-1:{ACCOUNT}:job-queue/search-p4d-queue"
P4D = "ml.p4d.24xlarge"
P4D_PRICE = 37.688
#: Provisioning before training starts, which is never billed.
PROVISIONING_MS = 240_000


@dataclass(frozen=True)
class Attempt:
    """One training job: billed from ``start`` to ``end`` (epoch ms), ``billable`` s of it billed."""

    name: str
    start: int
    end: int
    instances: int
    final: TrainingJobStatus
    #: BillableTimeInSeconds (less than the interval with managed spot).
    billable: int

    @property
    def arn(self) -> str:
        return TJ_ARN + self.name

    def running_at(self, now_ms: int) -> bool:
        return self.end > now_ms


@dataclass(frozen=True)
class Job:
    """A Batch service job of ``share`` at ``priority``, running its attempts in order."""

    name: str
    share: str
    priority: int
    attempts: tuple[Attempt, ...]

    @property
    def arn(self) -> str:
        return JOB_ARN + self.name

    def ended_by(self, now_ms: int) -> bool:
        return all(not a.running_at(now_ms) for a in self.attempts)


def training_events(
    attempt: Attempt, now_ms: int, tags: dict[str, str] | None = None
) -> list[TrainingJobObservation]:
    """SageMaker's events of one attempt up to ``now_ms``: starting, training, and its final one."""
    base = TrainingJobObservation(
        training_job_arn=attempt.arn,
        status=TrainingJobStatus.IN_PROGRESS,
        training_job_name=attempt.name,
        secondary_status="Starting",
        instance_type=P4D,
        instance_count=attempt.instances,
        created_at=attempt.start - PROVISIONING_MS,
        last_modified_at=attempt.start - PROVISIONING_MS,
        transitions=1,
        tags=tags or {},
    )
    training = TrainingJobObservation(
        **{
            **base.__dict__,
            "secondary_status": "Training",
            "training_started_at": attempt.start,
            "last_modified_at": attempt.start,
            "transitions": 2,
        }
    )
    events = [base, training]
    if not attempt.running_at(now_ms):
        events.append(final_observation(attempt, tags))
    return events


def final_observation(attempt: Attempt, tags: dict[str, str] | None = None) -> TrainingJobObservation:
    """The attempt's final state, as its event (and DescribeTrainingJob) says it."""
    return TrainingJobObservation(
        training_job_arn=attempt.arn,
        status=attempt.final,
        training_job_name=attempt.name,
        secondary_status=attempt.final.value,
        instance_type=P4D,
        instance_count=attempt.instances,
        created_at=attempt.start - PROVISIONING_MS,
        training_started_at=attempt.start,
        training_ended_at=attempt.end,
        last_modified_at=attempt.end,
        transitions=3,
        tags=tags or {},
        billable_seconds=attempt.billable,
        training_seconds=(attempt.end - attempt.start) // 1000,
        managed_spot=attempt.billable < (attempt.end - attempt.start) // 1000,
    )


def described(attempt: Attempt, now_ms: int) -> dict[str, Any]:
    """DescribeTrainingJob's answer for the attempt at ``now_ms`` (times as epoch ms, as gpusim's wire has them)."""
    obs = (
        final_observation(attempt) if not attempt.running_at(now_ms) else training_events(attempt, now_ms)[-1]
    )
    answer: dict[str, Any] = {
        "TrainingJobName": attempt.name,
        "TrainingJobArn": attempt.arn,
        "TrainingJobStatus": obs.status.value,
        "SecondaryStatus": obs.secondary_status,
        "ResourceConfig": {"InstanceType": P4D, "InstanceCount": attempt.instances, "VolumeSizeInGB": 100},
        "CreationTime": obs.created_at,
        "TrainingStartTime": obs.training_started_at,
        "LastModifiedTime": obs.last_modified_at,
        "SecondaryStatusTransitions": [{"Status": f"s{i}"} for i in range(obs.transitions)],
        "EnableManagedSpotTraining": obs.managed_spot,
    }
    if obs.status.is_final:
        answer |= {
            "TrainingEndTime": obs.training_ended_at,
            "BillableTimeInSeconds": obs.billable_seconds,
            "TrainingTimeInSeconds": obs.training_seconds,
        }
    return answer


def batch_events(job: Job, now_ms: int) -> list[JobObservation]:
    """Batch's events of the job up to ``now_ms``: RUNNING per attempt (linking it), then its end."""
    base = JobObservation(
        job_arn=job.arn,
        status=JobStatus.RUNNING,
        job_id=job.name,
        job_name=job.name,
        job_queue=QUEUE,
        share_identifier=job.share,
        scheduling_priority=job.priority,
        created_at=job.attempts[0].start - 600_000,
    )
    events = []
    for index, attempt in enumerate(job.attempts):
        if attempt.start - PROVISIONING_MS > now_ms:
            break
        linked = tuple(a.arn for a in job.attempts[: index + 1])
        events.append(
            JobObservation(
                **{
                    **base.__dict__,
                    "started_at": attempt.start - PROVISIONING_MS,
                    # Batch lists an attempt once it has ended: a running job counts the earlier ones.
                    "attempts": index,
                    "latest_training_job_arn": attempt.arn,
                    "training_job_arns": linked,
                }
            )
        )
        if index + 1 < len(job.attempts) and not attempt.running_at(now_ms):
            # The attempt failed and Batch retries the job: RUNNABLE again, naming the attempt that ended.
            events.append(
                JobObservation(
                    **{
                        **base.__dict__,
                        "status": JobStatus.RUNNABLE,
                        "status_reason": "retrying",
                        "attempts": index + 1,
                        "latest_training_job_arn": attempt.arn,
                        "training_job_arns": linked,
                        "attempt_time_ms": attempt.end + 1000,
                    }
                )
            )
    if job.ended_by(now_ms):
        last = job.attempts[-1]
        status = JobStatus.SUCCEEDED if last.final is TrainingJobStatus.COMPLETED else JobStatus.FAILED
        events.append(
            JobObservation(
                **{
                    **base.__dict__,
                    "status": status,
                    "started_at": last.start - PROVISIONING_MS,
                    "stopped_at": last.end + 1000,
                    "attempts": len(job.attempts),
                    "latest_training_job_arn": last.arn,
                    "training_job_arns": tuple(a.arn for a in job.attempts),
                }
            )
        )
    return events


def forged_tags(team: str, tier: str) -> dict[str, str]:
    """The tags the submit path sets, as anyone creating a training job can set them too."""
    return {TEAM_TAG: team, TIER_TAG: tier}


def month_bounds_ms(month: str) -> tuple[int, int]:
    """[first ms, first ms of the next month) of a ``YYYY-MM`` month in UTC."""
    year, number = (int(p) for p in month.split("-"))
    start = datetime(year, number, 1, tzinfo=UTC)
    days = calendar.monthrange(year, number)[1]
    return int(start.timestamp() * 1000), int(start.timestamp() * 1000) + days * 86_400_000


def overlap_ms(start: int, end: int, month: str) -> int:
    """How much of [start, end) lies in ``month``."""
    first, after = month_bounds_ms(month)
    return max(0, min(end, after) - max(start, first))


def expected_months(
    jobs: list[Job], team_of_share: dict[str, str], now_ms: int, months: list[str]
) -> dict[tuple[str, str], tuple[float, float]]:
    """(team, month) -> (billed USD, accrued USD): finished attempts' billable time x instances x price
    spread over their interval by the overlap with the month; running attempts' time since their start."""
    out: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for job in jobs:
        team = team_of_share[job.share]
        for attempt in job.attempts:
            for month in months:
                if attempt.running_at(now_ms):
                    if attempt.start <= now_ms:
                        hours = overlap_ms(attempt.start, now_ms, month) / 3_600_000
                        out[(team, month)][1] += hours * attempt.instances * P4D_PRICE
                    continue
                interval = attempt.end - attempt.start
                billed_h = min(attempt.billable, interval / 1000) * attempt.instances / 3600
                out[(team, month)][0] += (
                    billed_h * P4D_PRICE * overlap_ms(attempt.start, attempt.end, month) / interval
                )
    return {key: (v[0], v[1]) for key, v in out.items()}
