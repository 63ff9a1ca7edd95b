"""Cost per attempt, per Batch job and per chargeback group: pure, from billable time and the config's prices."""

from __future__ import annotations

from datetime import datetime

import pytest
import yaml
from shareplane.domain.config.shares import SharesConfig
from shareplane.domain.cost.billing import (
    AttemptCost,
    BillableSource,
    CostOwner,
    UsageGroup,
    attempt_cost,
    cost_dimensions,
    cost_owner,
    job_cost_usd,
    running_cost,
    spread_by_month,
    usage_rows,
)
from shareplane.domain.jobs.lifecycle import JobState, JobStatus
from shareplane.domain.jobs.training import TrainingJobState, TrainingJobStatus

from tests.conftest import REPO

RAW = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())
CONFIG = SharesConfig.model_validate(RAW)
SPOT_CONFIG = SharesConfig.model_validate(
    {
        **RAW,
        "prices": {
            **RAW["prices"],
            "ml.p4d.24xlarge": {"on_demand_usd_per_hour": 40.0, "spot_usd_per_hour": 12.0},
        },
    }
)
T0 = 1_773_619_200_000
HOUR = 3_600_000
OWNER = CostOwner("ProdExp2", "MIDPRI", "arn:aws:batch:us-east-1:123456789012:service-job/j")


def final(**fields: object) -> TrainingJobState:
    base: dict[str, object] = {
        "training_job_arn": "arn:tj/a",
        "status": TrainingJobStatus.COMPLETED,
        "seq": "",
        "instance_type": "ml.p4d.24xlarge",
        "instance_count": 2,
        "training_started_at": T0,
        "training_ended_at": T0 + 2 * HOUR,
    }
    return TrainingJobState(**{**base, **fields})  # type: ignore[arg-type]


def test_a_finished_attempt_costs_billable_seconds_times_instances_times_on_demand() -> None:
    cost = attempt_cost(final(billable_seconds=7200), OWNER, CONFIG)
    assert cost is not None
    assert cost.usd == pytest.approx(2 * 2 * 37.688)
    assert (cost.team, cost.tier, cost.source, cost.job_arn) == (
        "ProdExp2",
        "MIDPRI",
        BillableSource.REPORTED,
        OWNER.job_arn,
    )
    assert cost.billable_instance_hours == 4


def test_managed_spot_savings_come_from_billable_time_never_from_a_spot_price_on_top() -> None:
    # 2 h of training billed as 0.6 h: the on-demand price applies to the billable time
    cost = attempt_cost(final(billable_seconds=2160, managed_spot=True), OWNER, SPOT_CONFIG)
    assert cost is not None and cost.usd == pytest.approx(0.6 * 2 * 40.0)


def test_billable_time_is_bounded_by_the_billed_interval() -> None:
    # a final event claiming 10 h billable for a 2 h interval is billed the 2 h SageMaker can bill
    cost = attempt_cost(final(billable_seconds=36_000), OWNER, CONFIG)
    assert cost is not None and cost.billable_seconds == 7200


def test_without_billable_time_a_started_attempt_is_billed_its_training_time_and_an_unstarted_one_nothing() -> (
    None
):
    timed = attempt_cost(final(), OWNER, CONFIG)
    assert timed is not None and (timed.billable_seconds, timed.source) == (
        7200,
        BillableSource.TRAINING_TIMES,
    )
    never = attempt_cost(final(training_started_at=None, training_ended_at=None), OWNER, CONFIG)
    assert never is not None and (never.usd, never.source) == (0.0, BillableSource.NOT_STARTED)


def test_an_attempt_still_running_has_no_final_cost_but_an_estimate() -> None:
    assert attempt_cost(final(status=TrainingJobStatus.IN_PROGRESS), OWNER, CONFIG) is None
    state = TrainingJobState(
        "arn:tj/r",
        TrainingJobStatus.IN_PROGRESS,
        "",
        instance_type="ml.p4d.24xlarge",
        instance_count=1,
        training_started_at=T0,
        managed_spot=True,
    )
    estimate = running_cost(state, OWNER, T0 + HOUR, SPOT_CONFIG)
    assert estimate is not None and estimate.estimated and estimate.team == "ProdExp2"
    assert estimate.usd == pytest.approx(12.0)  # spot price for a running managed spot job
    on_demand = running_cost(state, OWNER, T0 + HOUR, CONFIG)  # no spot price: on demand, an upper bound
    assert on_demand is not None and on_demand.usd == pytest.approx(37.688)


def test_an_unpriced_instance_type_is_counted_in_hours_not_dollars() -> None:
    cost = attempt_cost(final(instance_type="ml.g5.xlarge", billable_seconds=3600), OWNER, CONFIG)
    assert cost is not None and cost.usd is None
    (row,) = usage_rows([cost], UsageGroup.TEAM)
    assert (row.usd, row.unpriced_instance_hours) == (0.0, 2.0)


def job(share: str | None, priority: int | None, arn: str = "arn:job/j") -> JobState:
    return JobState(arn, JobStatus.RUNNING, "", share_identifier=share, scheduling_priority=priority)


@pytest.mark.parametrize(
    ("state", "submitted", "owner"),
    [
        (job("ProdExp1", 10), None, ("ProdExp1", "LOWPRI")),
        (job("ProdExp1HIGHPRI", 90), None, ("ProdExp1", "HIGHPRI")),
        (job("ProdExp2", 50), "ProdExp1", ("ProdExp2", "MIDPRI")),
        (job(None, None), "ProdExp2", ("ProdExp2", None)),
        (job(None, None), "Nobody", None),
        (job(None, None), None, None),
        (job("Stranger", 90), None, None),
    ],
    ids=[
        "a LOWPRI job of a team's share is the team's LOWPRI",
        "a tier's own identifier names the tier",
        "the share decides, not what the submit path recorded",
        "a job without a share (CPU FIFO) is the team the submit path recorded, without a tier",
        "a recorded team the config does not name is nobody",
        "a job without a share or a recorded team is nobody",
        "a share the config maps to no team is nobody",
    ],
)
def test_an_attempt_belongs_to_its_batch_jobs_share_never_to_its_tags(
    state: JobState, submitted: str | None, owner: tuple[str, str | None] | None
) -> None:
    found = cost_owner(state, CONFIG, submitted)
    assert (None if found is None else (found.team, found.tier)) == owner


@pytest.mark.parametrize(
    ("start", "end", "parts"),
    [
        ("2026-01-31T12:00", "2026-02-02T12:00", {"2026-01": 225.0, "2026-02": 675.0}),
        ("2026-03-10T00:00", "2026-03-11T00:00", {"2026-03": 900.0}),
        ("2025-12-31T12:00", "2026-02-01T12:00", {"2025-12": 12.0, "2026-01": 744.0, "2026-02": 12.0}),
        (None, "2026-03-10T00:00", {"2026-03": 900.0}),
    ],
    ids=[
        "noon 31 January to noon 2 February: a quarter in January",
        "inside one month: all of it there",
        "across three months: by the hours in each",
        "never started: all in the month it ended",
    ],
)
def test_a_cost_is_spread_over_its_billed_interval_by_month(
    start: str | None, end: str, parts: dict[str, float]
) -> None:
    def ms(text: str) -> int:
        return int(datetime.fromisoformat(text + "+00:00").timestamp() * 1000)

    total = sum(parts.values())
    assert spread_by_month(total, ms(start) if start else None, ms(end)) == pytest.approx(parts)
    assert sum(spread_by_month(total, ms(start) if start else None, ms(end)).values()) == total


def cost(
    arn: str,
    usd_hours: float,
    *,
    team: str = "ProdExp1",
    tier: str = "LOWPRI",
    at: int = T0,
    job: str | None = None,
    source: BillableSource = BillableSource.REPORTED,
) -> AttemptCost:
    return AttemptCost(arn, team, tier, "ml.p4d.24xlarge", 1, usd_hours * 3600, 10.0, at, source, job_arn=job)


def test_a_batch_jobs_cost_is_the_sum_over_its_attempts_each_counted_once() -> None:
    attempts = [cost("a1", 1), cost("a2", 2), cost("a2", 2)]
    assert job_cost_usd(attempts) == 30.0


def test_usage_rows_group_by_tier_user_day_and_filter_by_team_and_since() -> None:
    costs = [
        cost("a", 1, job="job-1"),
        cost("b", 2, tier="HIGHPRI", job="job-2", at=T0 + 86_400_000),
        cost("c", 4, team="ProdExp2"),
        cost("d", 0.5, job="job-1", source=BillableSource.RUNNING, at=T0 + 86_400_000),
    ]
    by_tier = usage_rows(costs, UsageGroup.TIER, team="ProdExp1")
    assert [(r.key, r.usd, r.attempts) for r in by_tier] == [("HIGHPRI", 20.0, 1), ("LOWPRI", 15.0, 2)]
    assert by_tier[1].estimated_usd == 5.0
    users = {"job-1": "arn:aws:iam::111122223333:role/alice"}
    by_user = usage_rows(costs, UsageGroup.USER, team="ProdExp1", users=users)
    assert [(r.key, r.usd) for r in by_user] == [
        ("arn:aws:iam::111122223333:role/alice", 15.0),
        ("unknown", 20.0),
    ]
    by_day = usage_rows(costs, UsageGroup.DAY, since_ms=T0 + 1)
    assert [(r.team, r.key, r.usd) for r in by_day] == [("ProdExp1", "2026-03-17", 25.0)]


def test_cost_metric_dimensions_name_the_team_and_the_share_it_spent_under() -> None:
    high = attempt_cost(final(billable_seconds=60), CostOwner("ProdExp1", "HIGHPRI", "j"), CONFIG)
    assert high is not None
    assert cost_dimensions(high, CONFIG) == {"Team": "ProdExp1", "Share": "ProdExp1HIGHPRI"}
