"""A team's month adds up: billed plus accrued, whatever the events' order, repeats and losses.

Batch jobs of both teams run attempts across a month boundary (some on managed spot, billed less
than their interval); every Batch and SageMaker event is delivered one to three times in any order,
some SageMaker final events are lost, and a training job no Batch job of shareplane runs is tagged as
a team's. After the record path and one watch run (which describes the attempts Batch says are over
while the table holds them open), each team's month in the table is what its attempts cost, worked
out independently: finished ones billed over their interval by time, running ones accrued since
their training started, nobody's never anybody's.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane.domain.cost.billing import month_of
from shareplane.domain.jobs.arns import same_training_job, training_job_key
from shareplane.domain.jobs.training import TrainingJobStatus
from shareplane.service.record_state import record_observation
from shareplane.service.spend import accruing, team_months
from shareplane.service.watch_jobs import watch

from tests.cost_world import (
    Attempt,
    Job,
    batch_events,
    described,
    expected_months,
    forged_tags,
    training_events,
)
from tests.fakes.failure_world import World
from tests.properties import examples

BOUNDARY_MS = int(datetime(2026, 2, 1, tzinfo=UTC).timestamp() * 1000)
HOUR_MS = 3_600_000
MONTHS = ["2026-01", "2026-02"]
#: Each share a job may be submitted under, the team it maps to in the shipped config, and a priority.
SHARES = {"ProdExp1": ("ProdExp1", 10), "ProdExp1HIGHPRI": ("ProdExp1", 90), "ProdExp2": ("ProdExp2", 50)}
TEAM_OF_SHARE = {share: team for share, (team, _) in SHARES.items()}
FINALS = [TrainingJobStatus.COMPLETED, TrainingJobStatus.FAILED, TrainingJobStatus.STOPPED]


@st.composite
def jobs(draw: st.DrawFn) -> list[Job]:
    """One to four Batch jobs of one or two attempts, starting up to three days before the boundary."""
    out = []
    for index in range(draw(st.integers(1, 4))):
        share = draw(st.sampled_from(sorted(SHARES)))
        start = BOUNDARY_MS + draw(st.integers(-72 * 60, 24 * 60)) * 60_000
        attempts = []
        for number in range(draw(st.integers(1, 2))):
            minutes = draw(st.integers(1, 96 * 60))
            spot = draw(st.booleans())
            end = start + minutes * 60_000
            billable = minutes * 60 * 3 // 10 if spot else minutes * 60
            attempts.append(
                Attempt(
                    f"AWSBatchjob{index}a{number}",
                    start,
                    end,
                    draw(st.integers(1, 8)),
                    draw(st.sampled_from(FINALS)),
                    billable,
                )
            )
            start = end + draw(st.integers(5, 60)) * 60_000
        out.append(Job(f"job{index}", share, SHARES[share][1], tuple(attempts)))
    return out


@settings(max_examples=examples(200), deadline=None)
@given(
    cluster=jobs(),
    now_offset_minutes=st.integers(-24 * 60, 120 * 60),
    data=st.data(),
)
def test_each_teams_month_is_the_sum_of_its_jobs_billed_and_accrued_costs(
    cluster: list[Job], now_offset_minutes: int, data: st.DataObject
) -> None:
    now_ms = BOUNDARY_MS + now_offset_minutes * 60_000
    world = World()
    started = [a for job in cluster for a in job.attempts if a.start <= now_ms]
    finished = [a for a in started if not a.running_at(now_ms)]
    # GIVEN every event up to now, SageMaker's final event of some finished attempts lost
    lost = set(
        data.draw(st.lists(st.sampled_from([a.arn for a in finished]), unique=True)) if finished else []
    )
    events: list[Any] = [e for job in cluster for e in batch_events(job, now_ms)]
    for attempt in started:
        events += [
            e
            for e in training_events(attempt, now_ms)
            if not (e.status.is_final and e.training_job_arn in lost)
        ]
    # ... and a training job named like Batch's, tagged as ProdExp2's, that no Batch job of ours ran
    stranger = Attempt(
        "AWSBatchstranger", BOUNDARY_MS - 34 * HOUR_MS, BOUNDARY_MS - 25 * HOUR_MS, 8, FINALS[0], 32400
    )
    events += training_events(stranger, now_ms, forged_tags("ProdExp2", "HIGHPRI"))
    copies = data.draw(st.lists(st.integers(1, 3), min_size=len(events), max_size=len(events)))
    delivered = data.draw(st.permutations([e for e, n in zip(events, copies, strict=True) for _ in range(n)]))
    world.training.jobs = {a.name: described(a, now_ms) for a in [*started, stranger]}
    # WHEN the record path records them in that order, then the watch runs
    for event in delivered:
        record_observation(event, world.store, world.metrics, world.config)
    report = watch(world.ports, now_ms / 1000)
    # THEN every finished attempt of a job is costed once, the stranger never
    assert set(world.store.costs) == {training_job_key(a.arn) for a in finished}
    assert world.metrics.count("UnownedTrainingJobs") >= 1
    # ... and each team's months hold what its attempts cost: billed and accrued
    expected = expected_months(cluster, TEAM_OF_SHARE, now_ms, MONTHS)
    accrued: dict[tuple[str, str], float] = {}
    for estimate in accruing(world.store.open_attempts(), world.store, world.config, now_ms):
        if estimate.team is None:  # the stranger, while it runs: nobody's
            assert same_training_job(estimate.training_job_arn, stranger.arn)
            continue
        for month, usd in estimate.by_month().items():
            accrued[(estimate.team, month)] = accrued.get((estimate.team, month), 0.0) + usd
    for team in ("ProdExp1", "ProdExp2"):
        for month in MONTHS:
            billed_usd, accrued_usd = expected.get((team, month), (0.0, 0.0))
            assert world.store.month_spend(team, month) == pytest.approx(billed_usd, abs=1e-3), (team, month)
            assert accrued.get((team, month), 0.0) == pytest.approx(accrued_usd, abs=1e-3), (team, month)
    # ... which is what budgets read for the month of now (submission, the watch's gauges, `budgets`)
    current = month_of(now_ms)
    months = team_months(world.store, world.config, ["ProdExp1", "ProdExp2"], now_ms)
    for team, month_now in months.items():
        billed_usd, accrued_usd = expected.get((team, current), (0.0, 0.0))
        assert month_now.spent_usd == pytest.approx(billed_usd + accrued_usd, abs=1e-3)
        assert report.budgets[team]["spent_usd"] == pytest.approx(billed_usd + accrued_usd, abs=0.011)
