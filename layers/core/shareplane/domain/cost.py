"""What jobs cost: each SageMaker training job (an attempt of a Batch job) costed once, by billable time.

SageMaker bills a training job for ``BillableTimeInSeconds`` per instance (DescribeTrainingJob,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeTrainingJob.html: "Multiply
BillableTimeInSeconds by the number of instances (InstanceCount) in your training cluster to get the
total compute time SageMaker bills you"). Billing runs from ``TrainingStartTime`` ("You are billed for
the time interval between this time and the value of TrainingEndTime"), so the provisioning before it
is not billed; with managed spot training the billable time is less than ``TrainingTimeInSeconds`` by
the spot saving. So:

- a finished attempt costs billable seconds x instance count x the on-demand price; no spot price on
  top, the saving is in the billable time already;
- a running attempt is an estimate: the time since its training started x instances x the price (the
  spot price for a managed spot job when the config has one, else on-demand, an upper bound);
- a Batch job's cost is the sum over its attempts (``job_cost_usd``).

Each attempt's cost is recorded once, under its training job's ARN (the store's ``COST`` item), so a
duplicated or reordered event never costs an attempt twice.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum

from .config import SharesConfig, Tier
from .tags import TEAM_TAG, TIER_TAG
from .training import TrainingJobObservation, TrainingJobState

#: EMF dimensions of the cost metrics: the team and the share identifier it was spent under.
COST_METRIC_DIMENSIONS = ("Team", "Share")
#: Each cost metric and its dimensions (the dashboard test checks the template against it).
COST_METRICS = {
    "CostUsd": COST_METRIC_DIMENSIONS,
    "BillableInstanceSeconds": COST_METRIC_DIMENSIONS,
    # Gauges of the scheduled watch, per budgeted team: the month's spend and forecast against budget.
    "BudgetUsedPercent": COST_METRIC_DIMENSIONS,
    "BudgetForecastPercent": COST_METRIC_DIMENSIONS,
}


class BillableSource(StrEnum):
    """Where an attempt's billable seconds came from."""

    #: DescribeTrainingJob's BillableTimeInSeconds, as SageMaker reports it for an ended job.
    REPORTED = "reported"
    #: An ended job whose event lacks it: TrainingEndTime - TrainingStartTime (on-demand billing).
    TRAINING_TIMES = "training_times"
    #: Ended before training started (stopped or failed while provisioning): nothing is billed.
    NOT_STARTED = "not_started"
    #: Still running: an estimate up to the time asked about.
    RUNNING = "running"


@dataclass(frozen=True)
class AttemptCost:
    """The cost of one training job: one attempt of one Batch service job."""

    training_job_arn: str
    team: str | None
    tier: str | None
    instance_type: str | None
    instance_count: int
    billable_seconds: float
    #: The price per instance-hour applied; None: the config prices no such type (hours only).
    usd_per_hour: float | None
    #: Epoch ms the cost is dated at: the training job's end (or the time of a running estimate).
    at: int
    source: BillableSource
    managed_spot: bool = False
    #: The Batch job the attempt belongs to, when known.
    job_arn: str | None = None

    @property
    def billable_instance_hours(self) -> float:
        return self.billable_seconds * self.instance_count / 3600

    @property
    def usd(self) -> float | None:
        if self.usd_per_hour is None:
            return None
        return round(self.billable_instance_hours * self.usd_per_hour, 6)

    @property
    def estimated(self) -> bool:
        return self.source is BillableSource.RUNNING

    @property
    def month(self) -> str:
        return month_of(self.at)

    @property
    def day(self) -> str:
        return datetime.fromtimestamp(self.at / 1000, tz=UTC).strftime("%Y-%m-%d")


def month_of(at_ms: float) -> str:
    """The UTC calendar month (``YYYY-MM``) of an epoch-ms time: the month budgets are counted in."""
    return datetime.fromtimestamp(at_ms / 1000, tz=UTC).strftime("%Y-%m")


def _owner(tags: Mapping[str, str]) -> tuple[str | None, str | None]:
    # The submit path tags every training job it sends through Batch with its team and tier.
    return tags.get(TEAM_TAG), tags.get(TIER_TAG)


def attempt_cost(obs: TrainingJobObservation, config: SharesConfig) -> AttemptCost | None:
    """The cost of a training job that has ended, from its final event; None while it has not ended."""
    if not obs.status.is_final:
        return None
    started, ended = obs.training_started_at, obs.training_ended_at
    if obs.billable_seconds is not None:
        billable, source = float(obs.billable_seconds), BillableSource.REPORTED
    elif started is not None and ended is not None:
        billable, source = max(0, ended - started) / 1000, BillableSource.TRAINING_TIMES
    else:
        billable, source = 0.0, BillableSource.NOT_STARTED
    team, tier = _owner(obs.tags)
    return AttemptCost(
        training_job_arn=obs.training_job_arn,
        team=team,
        tier=tier,
        instance_type=obs.instance_type,
        instance_count=obs.instance_count or 1,
        billable_seconds=billable,
        usd_per_hour=config.on_demand_price(obs.instance_type),
        at=ended or obs.last_modified_at or started or obs.created_at or 0,
        source=source,
        managed_spot=obs.managed_spot,
    )


def running_cost(state: TrainingJobState, now_ms: int, config: SharesConfig) -> AttemptCost | None:
    """An estimate of a training job still running at ``now_ms``; None if it ended or never started."""
    if state.status.is_final or state.training_started_at is None:
        return None
    price = config.prices.get(state.instance_type or "")
    per_hour = price.on_demand_usd_per_hour if price else None
    if price and state.managed_spot and price.spot_usd_per_hour is not None:
        per_hour = price.spot_usd_per_hour
    team, tier = _owner(state.tags)
    return AttemptCost(
        training_job_arn=state.training_job_arn,
        team=team,
        tier=tier,
        instance_type=state.instance_type,
        instance_count=state.instance_count or 1,
        billable_seconds=max(0, now_ms - state.training_started_at) / 1000,
        usd_per_hour=per_hour,
        at=now_ms,
        source=BillableSource.RUNNING,
        managed_spot=state.managed_spot,
    )


def job_cost_usd(costs: Iterable[AttemptCost]) -> float:
    """A Batch job's cost: the sum over its attempts, each training job counted once."""
    by_attempt = {c.training_job_arn: c for c in costs}
    return round(sum(c.usd or 0.0 for c in by_attempt.values()), 6)


@dataclass(frozen=True)
class CostMetricEvent:
    """A cost measurement for the metrics sink, under the team and share it was spent by."""

    name: str
    value: float
    unit: str

    @property
    def dimensions(self) -> tuple[str, ...]:
        return COST_METRIC_DIMENSIONS


def cost_metrics(cost: AttemptCost) -> list[CostMetricEvent]:
    """CostUsd (when priced) and BillableInstanceSeconds of one finished attempt."""
    events = [
        CostMetricEvent("BillableInstanceSeconds", cost.billable_seconds * cost.instance_count, "Seconds")
    ]
    if cost.usd is not None:
        events.insert(0, CostMetricEvent("CostUsd", cost.usd, "None"))
    return events


def cost_dimensions(cost: AttemptCost, config: SharesConfig) -> dict[str, str]:
    """Team and share identifier of an attempt's cost (``none`` when its tags name no configured team)."""
    team = cost.team
    if team is None or team not in config.teams:
        return {"Team": "none", "Share": "none"}
    tier = Tier(cost.tier) if cost.tier is not None and cost.tier in config.tiers else None
    return {"Team": team, "Share": config.share_for(team, tier)}


class UsageGroup(StrEnum):
    """What a chargeback report groups a team's cost by (``shareplane usage --by``)."""

    TEAM = "team"
    TIER = "tier"
    USER = "user"
    DAY = "day"
    INSTANCE_TYPE = "instance-type"


@dataclass(frozen=True)
class UsageRow:
    """One line of a chargeback report: a team's cost under one key of the grouping."""

    team: str
    key: str
    usd: float
    #: The part of ``usd`` that estimates attempts still running.
    estimated_usd: float
    billable_instance_hours: float
    #: Hours of instance types the config has no price for (not in ``usd``).
    unpriced_instance_hours: float
    attempts: int


def _key(cost: AttemptCost, by: UsageGroup, users: Mapping[str, str]) -> str:
    if by is UsageGroup.TEAM:
        return cost.team or "none"
    if by is UsageGroup.TIER:
        return cost.tier or "none"
    if by is UsageGroup.USER:
        return users.get(cost.job_arn or "", "unknown")
    if by is UsageGroup.DAY:
        return cost.day
    return cost.instance_type or "none"


def usage_rows(
    costs: Iterable[AttemptCost],
    by: UsageGroup,
    *,
    since_ms: int = 0,
    team: str | None = None,
    users: Mapping[str, str] | None = None,
) -> list[UsageRow]:
    """The chargeback report: costs dated at or after ``since_ms`` (of ``team``), summed per team and key.

    ``users`` maps a Batch job's ARN to its uploader's principal (``--by user``); an attempt whose job
    has none is ``unknown``. Each training job counts once, whatever ``costs`` repeats.
    """
    unique = {c.training_job_arn: c for c in costs}
    sums: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0])
    for cost in unique.values():
        if cost.at < since_ms or (team is not None and cost.team != team):
            continue
        row = sums[(cost.team or "none", _key(cost, by, users or {}))]
        if cost.usd is None:
            row[3] += cost.billable_instance_hours
        else:
            row[0] += cost.usd
            row[1] += cost.usd if cost.estimated else 0.0
        row[2] += cost.billable_instance_hours
        row[4] += 1
    return [
        UsageRow(t, k, round(v[0], 2), round(v[1], 2), round(v[2], 3), round(v[3], 3), int(v[4]))
        for (t, k), v in sorted(sums.items())
    ]


def with_job(cost: AttemptCost, job_arn: str | None) -> AttemptCost:
    """The cost with the Batch job it belongs to (when a link names it and the cost does not)."""
    return cost if cost.job_arn or not job_arn else replace(cost, job_arn=job_arn)
