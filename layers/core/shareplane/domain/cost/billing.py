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

An attempt's cost belongs to the Batch job that ran it (``CostOwner``): the team and tier its share
maps to in the config (a CPU FIFO job, which has no share, the team the submit path recorded), never
the training job's tags, which whoever creates a training job writes. A training job no Batch job of
shareplane links is nobody's: it is not costed, and counted (``UnownedTrainingJobs``).

Months: an attempt's cost is spread over its billed interval [TrainingStartTime, TrainingEndTime] in
proportion to time (``spread_by_month``), so a job from noon on 31 January to noon on 2 February
books a quarter of its cost in January; with managed spot the billed amount is less than the
interval's, and it is spread the same way. A running attempt accrues the same way over
[TrainingStartTime, now].

Each attempt's cost is recorded once, under its training job's ARN (the store's ``COST`` item), so a
duplicated or reordered event never costs an attempt twice.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum

from ..config.shares import SharesConfig, Tier
from ..jobs.lifecycle import JobState
from ..jobs.training import TrainingJobState

#: EMF dimensions of the cost metrics: the team and the share identifier it was spent under.
COST_METRIC_DIMENSIONS = ("Team", "Share")
#: Each cost metric and its dimensions (the dashboard test checks the template against it).
COST_METRICS = {
    "CostUsd": COST_METRIC_DIMENSIONS,
    "BillableInstanceSeconds": COST_METRIC_DIMENSIONS,
    # Gauges of the scheduled watch, per budgeted team: the month's spend and forecast against budget.
    "BudgetUsedPercent": COST_METRIC_DIMENSIONS,
    "BudgetForecastPercent": COST_METRIC_DIMENSIONS,
    # A training job whose final state was recorded with no Batch job of shareplane linking it (Reason
    # no_link), or linked to a job whose share the config maps to no team (share_of_no_team): not costed.
    "UnownedTrainingJobs": ("Reason",),
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
    #: Epoch ms the billed interval starts at (TrainingStartTime); None: it never started.
    started_at: int | None = None

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

    def by_month(self) -> dict[str, float]:
        """USD per UTC month, the cost spread over [started_at, at] by time (``spread_by_month``)."""
        return spread_by_month(self.usd or 0.0, self.started_at, self.at)

    def within(self, start_ms: int) -> float:
        """The fraction of the cost that falls at or after ``start_ms`` (spread over its interval by time)."""
        begin = self.started_at if self.started_at is not None else self.at
        if self.at <= begin:
            return 1.0 if self.at >= start_ms else 0.0
        return min(1.0, max(0.0, (self.at - max(begin, start_ms)) / (self.at - begin)))


def month_of(at_ms: float) -> str:
    """The UTC calendar month (``YYYY-MM``) of an epoch-ms time: the month budgets are counted in."""
    return datetime.fromtimestamp(at_ms / 1000, tz=UTC).strftime("%Y-%m")


def next_month_ms(at_ms: int) -> int:
    """Epoch ms of the first instant of the UTC month after the one ``at_ms`` is in."""
    moment = datetime.fromtimestamp(at_ms / 1000, tz=UTC)
    year, month = (moment.year + 1, 1) if moment.month == 12 else (moment.year, moment.month + 1)
    return int(datetime(year, month, 1, tzinfo=UTC).timestamp() * 1000)


def spread_by_month(usd: float, start_ms: int | None, end_ms: int) -> dict[str, float]:
    """``usd`` split over the UTC months of [start_ms, end_ms] in proportion to the time in each.

    Without an interval (never started, or a zero-length one) it is all in the month of ``end_ms``.
    The last month takes what rounding left, so the parts add up to ``usd`` exactly.
    """
    if start_ms is None or end_ms <= start_ms:
        return {month_of(end_ms): usd}
    parts: dict[str, float] = {}
    cursor, span, given = start_ms, end_ms - start_ms, 0.0
    while True:
        boundary = next_month_ms(cursor)
        if boundary >= end_ms:
            parts[month_of(cursor)] = round(usd - given, 6)
            return parts
        part = round(usd * (boundary - cursor) / span, 6)
        parts[month_of(cursor)] = part
        given += part
        cursor = boundary


@dataclass(frozen=True)
class CostOwner:
    """Who pays for an attempt: the team (and tier) of the Batch job that ran it."""

    team: str
    tier: str | None
    job_arn: str


def cost_owner(job: JobState, config: SharesConfig, submitted_team: str | None = None) -> CostOwner | None:
    """The team and tier an attempt of ``job`` is charged to; None: no team of the config (do not charge).

    As the failure path reads a job's team: its share (identifier or quota share) through the
    config's mapping, the tier from the identifier in the team_tier layout, else from its priority. A
    job without a share (CPU FIFO) belongs to the team the submit path recorded with it
    (``submitted_team``), and has no tier. Never the training job's tags.
    """
    share = job.share
    if share and share != "none":
        team = config.team_for_share(share)
        tier = config.job_tier(share, job.scheduling_priority) if team else None
    else:
        team = submitted_team if submitted_team in config.teams else None
        tier = None
    if team is None:
        return None
    return CostOwner(team, tier.value if tier else None, job.job_arn)


def attempt_cost(state: TrainingJobState, owner: CostOwner, config: SharesConfig) -> AttemptCost | None:
    """The cost of a training job that has ended, charged to ``owner``; None while it has not ended.

    Billed seconds are BillableTimeInSeconds, bounded by TrainingEndTime - TrainingStartTime when
    both are known (SageMaker bills nothing outside that interval, so a larger figure is not billable
    time); without it, the interval itself (on-demand billing); without a start, nothing.
    """
    if not state.status.is_final:
        return None
    started, ended = state.training_started_at, state.training_ended_at
    interval = max(0, ended - started) / 1000 if started is not None and ended is not None else None
    if state.billable_seconds is not None:
        billable, source = float(state.billable_seconds), BillableSource.REPORTED
        if interval is not None:
            billable = min(billable, interval)
    elif interval is not None:
        billable, source = interval, BillableSource.TRAINING_TIMES
    else:
        billable, source = 0.0, BillableSource.NOT_STARTED
    return AttemptCost(
        training_job_arn=state.training_job_arn,
        team=owner.team,
        tier=owner.tier,
        instance_type=state.instance_type,
        instance_count=state.instance_count or 1,
        billable_seconds=billable,
        usd_per_hour=config.on_demand_price(state.instance_type),
        at=ended or started or state.created_at or 0,
        source=source,
        managed_spot=state.managed_spot,
        job_arn=owner.job_arn,
        started_at=started if ended is not None else None,
    )


def running_cost(
    state: TrainingJobState, owner: CostOwner | None, now_ms: int, config: SharesConfig
) -> AttemptCost | None:
    """What a training job still running at ``now_ms`` has accrued since its training started.

    None if it ended or never started. ``owner`` None: an estimate of nobody's (the CLI's story of one
    job shows it; no team's month counts it).
    """
    if state.status.is_final or state.training_started_at is None:
        return None
    price = config.prices.get(state.instance_type or "")
    per_hour = price.on_demand_usd_per_hour if price else None
    if price and state.managed_spot and price.spot_usd_per_hour is not None:
        per_hour = price.spot_usd_per_hour
    started = min(state.training_started_at, now_ms)
    return AttemptCost(
        training_job_arn=state.training_job_arn,
        team=owner.team if owner else None,
        tier=owner.tier if owner else None,
        instance_type=state.instance_type,
        instance_count=state.instance_count or 1,
        billable_seconds=(now_ms - started) / 1000,
        usd_per_hour=per_hour,
        at=now_ms,
        source=BillableSource.RUNNING,
        managed_spot=state.managed_spot,
        job_arn=owner.job_arn if owner else None,
        started_at=started,
    )


@dataclass(frozen=True)
class OpenAttempt:
    """A training job the table holds as not final, with the Batch job a link names (None: none yet)."""

    training: TrainingJobState
    job: JobState | None


def team_months(costs: Iterable[AttemptCost], month: str) -> dict[str, float]:
    """USD per team in ``month`` of these costs (each training job once), spread over their intervals."""
    totals: dict[str, float] = defaultdict(float)
    for cost in {c.training_job_arn: c for c in costs}.values():
        if cost.team is not None:
            totals[cost.team] += cost.by_month().get(month, 0.0)
    return dict(totals)


def job_cost_usd(costs: Iterable[AttemptCost]) -> float:
    """A Batch job's cost: the sum over its attempts, each training job counted once."""
    by_attempt = {c.training_job_arn: c for c in costs}
    return round(sum(c.usd or 0.0 for c in by_attempt.values()), 6)


@dataclass(frozen=True)
class CostMetricEvent:
    """A cost measurement for the metrics sink, under the dimensions ``COST_METRICS`` gives its name."""

    name: str
    value: float
    unit: str

    @property
    def dimensions(self) -> tuple[str, ...]:
        return COST_METRICS[self.name]


#: The Reason dimension of UnownedTrainingJobs: no Batch job of shareplane links the training job.
UNOWNED_NO_LINK = "no_link"
#: ... or the Batch job that ran it is of a share the config maps to no team.
UNOWNED_SHARE_OF_NO_TEAM = "share_of_no_team"


def unowned_metric() -> CostMetricEvent:
    """One training job costed to nobody (emitted under its Reason dimension)."""
    return CostMetricEvent("UnownedTrainingJobs", 1, "Count")


def cost_metrics(cost: AttemptCost) -> list[CostMetricEvent]:
    """CostUsd (when priced) and BillableInstanceSeconds of one finished attempt."""
    events = [
        CostMetricEvent("BillableInstanceSeconds", cost.billable_seconds * cost.instance_count, "Seconds")
    ]
    if cost.usd is not None:
        events.insert(0, CostMetricEvent("CostUsd", cost.usd, "None"))
    return events


def cost_dimensions(cost: AttemptCost, config: SharesConfig) -> dict[str, str]:
    """Team and share identifier of an attempt's cost (``none`` when it names no configured team)."""
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
    """The chargeback report: costs (of ``team``) after ``since_ms``, summed per team and key.

    An attempt that started before ``since_ms`` and ended after it counts with the part of its cost
    after ``since_ms`` (its billed interval split by time, as budgets split months). ``users`` maps a
    Batch job's ARN to its uploader's principal (``--by user``); an attempt whose job has none is
    ``unknown``. Each training job counts once, whatever ``costs`` repeats.
    """
    unique = {c.training_job_arn: c for c in costs}
    sums: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0])
    for cost in unique.values():
        # The part of the attempt's billed interval at or after since_ms, as budgets count months.
        part = cost.within(since_ms) if since_ms else 1.0
        if cost.at < since_ms or (team is not None and cost.team != team):
            continue
        row = sums[(cost.team or "none", _key(cost, by, users or {}))]
        if cost.usd is None:
            row[3] += cost.billable_instance_hours * part
        else:
            row[0] += cost.usd * part
            row[1] += cost.usd * part if cost.estimated else 0.0
        row[2] += cost.billable_instance_hours * part
        row[4] += 1
    return [
        UsageRow(t, k, round(v[0], 2), round(v[1], 2), round(v[2], 3), round(v[3], 3), int(v[4]))
        for (t, k), v in sorted(sums.items())
    ]


def with_job(cost: AttemptCost, job_arn: str | None) -> AttemptCost:
    """The cost with the Batch job it belongs to (when a link names it and the cost does not)."""
    return cost if cost.job_arn or not job_arn else replace(cost, job_arn=job_arn)
