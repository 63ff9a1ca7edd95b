"""The watch reconciles training jobs: one still open in the table whose attempt Batch says is over
is described (DescribeTrainingJob) and recorded, so a lost SageMaker final event is costed once."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from shareplane.domain.jobs.training import TrainingJobStatus
from shareplane.service.record_state import record_observation
from shareplane.service.watch_jobs import watch

from tests.cost_world import P4D_PRICE, Attempt, Job, batch_events, described, training_events
from tests.fakes.failure_world import World

START = int(datetime(2026, 3, 10, tzinfo=UTC).timestamp() * 1000)
HOUR = 3_600_000
DONE = Attempt("AWSBatchembed-a0", START, START + 2 * HOUR, 4, TrainingJobStatus.COMPLETED, 7200)


def recorded(world: World, job: Job, now_ms: int, lose_final: bool) -> None:
    """Every event of ``job`` up to ``now_ms`` recorded, its attempts' final SageMaker events lost or not."""
    events = list(batch_events(job, now_ms))
    for attempt in job.attempts:
        events += [e for e in training_events(attempt, now_ms) if not (lose_final and e.status.is_final)]
        world.training.jobs[attempt.name] = described(attempt, now_ms)
    for event in events:
        record_observation(event, world.store, world.metrics, world.config)


def test_a_lost_final_event_is_described_recorded_and_costed_once_to_the_batch_jobs_team() -> None:
    # GIVEN ProdExp2's MIDPRI job ended, its training job's final SageMaker event lost
    world = World()
    now = START + 3 * HOUR
    recorded(world, Job("embed", "ProdExp2", 50, (DONE,)), now, lose_final=True)
    assert world.store.load_training_job(DONE.arn).status is TrainingJobStatus.IN_PROGRESS  # type: ignore[union-attr]
    # WHEN the watch runs, twice
    first = watch(world.ports, now / 1000)
    second = watch(world.ports, now / 1000 + 300)
    # THEN SageMaker was asked once, the job is recorded Completed and costed once to ProdExp2 MIDPRI
    assert world.training.asked == [DONE.name]
    assert (first.training_repaired, second.training_reconciled) == (1, 0)
    assert world.store.load_training_job(DONE.arn).status is TrainingJobStatus.COMPLETED  # type: ignore[union-attr]
    (cost,) = world.store.costs.values()
    assert (cost.team, cost.tier, cost.usd) == ("ProdExp2", "MIDPRI", pytest.approx(2 * 4 * P4D_PRICE))
    assert world.store.month_spend("ProdExp2", "2026-03") == pytest.approx(2 * 4 * P4D_PRICE)
    assert world.metrics.count("CostUsd") == pytest.approx(2 * 4 * P4D_PRICE)


def test_a_training_job_whose_attempt_batch_still_runs_is_not_described() -> None:
    # GIVEN a job still running its attempt, and a training job no Batch job links
    world = World()
    now = START + HOUR
    running = Attempt("AWSBatchlong-a0", START, START + 10 * HOUR, 2, TrainingJobStatus.COMPLETED, 36000)
    recorded(world, Job("long", "ProdExp1", 10, (running,)), now, lose_final=False)
    stranger = Attempt("AWSBatchstranger", START, START + 10 * HOUR, 2, TrainingJobStatus.COMPLETED, 36000)
    for event in training_events(stranger, now):
        record_observation(event, world.store, world.metrics, world.config)
    # WHEN the watch runs THEN neither is described, and ProdExp1's month holds the running hour
    report = watch(world.ports, now / 1000)
    assert world.training.asked == [] and report.training_reconciled == 0
    assert report.budgets["ProdExp1"]["accrued_usd"] == pytest.approx(2 * P4D_PRICE, abs=0.01)
    assert report.budgets["ProdExp2"]["spent_usd"] == 0.0
