"""Arrival counts: a job is counted once it has finished, under its queue, creation hour and kind."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st
from shareplane.domain.forecast.arrivals import HOUR_MS, ArrivalKey, arrival_key, arrival_moves, counted_key
from shareplane.domain.jobs.lifecycle import CapacityUsage, JobState, JobStatus

CREATED = 1_773_690_900_000  # 19:55 UTC
HOUR = CREATED - CREATED % HOUR_MS


def job(status: JobStatus, **fields: object) -> JobState:
    base = JobState(
        job_arn="arn:aws:batch:us-east-1:123456789012:service-job/j1",
        status=status,
        seq="a",
        job_queue="arn:aws:batch:us-east-1:123456789012:job-queue/gpu",
        share_identifier="ProdExp1",
        scheduling_priority=50,
        created_at=CREATED,
        capacity_usage=(CapacityUsage("NUM_INSTANCES", 2),),
    )
    return replace(base, **fields)  # type: ignore[arg-type]


def test_a_job_is_keyed_by_its_queue_creation_hour_share_instances_and_priority() -> None:
    assert arrival_key(job(JobStatus.RUNNING)) == ArrivalKey("gpu", HOUR, "ProdExp1", 2, 50)
    # read as the twin reads a record: the quota share, 1 instance and priority 0 when unknown
    unknown = job(JobStatus.RUNNING, share_identifier=None, quota_share_name="q1", capacity_usage=(),
                  scheduling_priority=None)  # fmt: skip
    assert arrival_key(unknown) == ArrivalKey("gpu", HOUR, "q1", 1, 0)
    # no creation time or no queue: no arrival
    assert arrival_key(job(JobStatus.RUNNING, created_at=None)) is None
    assert arrival_key(job(JobStatus.RUNNING, job_queue=None)) is None


def test_only_a_finished_job_is_counted() -> None:
    assert counted_key(job(JobStatus.RUNNABLE)) is None
    assert counted_key(job(JobStatus.FAILED)) == arrival_key(job(JobStatus.FAILED))
    assert counted_key(None) is None


def test_finishing_adds_one_a_late_field_moves_it_and_a_rewrite_moves_nothing() -> None:
    running, done = job(JobStatus.RUNNING), job(JobStatus.SUCCEEDED, share_identifier=None)
    key = ArrivalKey("gpu", HOUR, "", 2, 50)
    assert arrival_moves(None, job(JobStatus.RUNNABLE)) == {}
    assert arrival_moves(running, done) == {key: 1}
    later = replace(done, share_identifier="ProdExp1")
    assert arrival_moves(done, later) == {key: -1, replace(key, share="ProdExp1"): 1}
    assert arrival_moves(later, replace(later, seq="b")) == {}


statuses = st.sampled_from(list(JobStatus))
shares = st.sampled_from([None, "ProdExp1", "ProdExp2"])


@given(st.lists(st.tuples(statuses, shares), min_size=1, max_size=8))
def test_the_moves_of_any_sequence_of_states_add_up_to_its_last_states_count(
    steps: list[tuple[JobStatus, str | None]],
) -> None:
    total: dict[ArrivalKey, int] = {}
    previous = None
    for status, share in steps:
        state = job(status, share_identifier=share)
        for key, delta in arrival_moves(previous, state).items():
            total[key] = total.get(key, 0) + delta
        previous = state
    assert {k: n for k, n in total.items() if n} == (
        {counted_key(previous): 1} if counted_key(previous) else {}
    )
