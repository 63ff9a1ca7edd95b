"""Budgets per team per month: where a team stands, its burn-rate forecast, alerts, and admission.

A team's spend in a month is what its finished attempts were billed in it plus what its running
attempts have accrued in it (``domain/cost/billing.py``: each attempt's cost spread over its billed interval
by time, in UTC calendar months; each finished one recorded once). The forecast extrapolates the month's burn
rate: spend so far / the part of the month gone x the whole month. Each alert threshold alerts once a
month (``budget_alerts.py``: its dedupe key names the team, the month and the threshold).
Enforcement acts only on new drops, at submission; queued and running work is never moved or stopped.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from ..config.shares import BudgetConfig, BudgetEnforcement, Tier
from .billing import month_of


def month_bounds(month: str) -> tuple[datetime, datetime]:
    """(first instant, first instant of the next month) of a ``YYYY-MM`` month, in UTC."""
    year, number = (int(part) for part in month.split("-"))
    start = datetime(year, number, 1, tzinfo=UTC)
    days = calendar.monthrange(year, number)[1]
    return start, datetime.fromtimestamp(start.timestamp() + days * 86400, tz=UTC)


@dataclass(frozen=True)
class BudgetStatus:
    """One team's month: spent so far, its budget and the month's forecast at the current burn rate."""

    team: str
    month: str
    spent_usd: float
    monthly_usd: float
    #: The part of the month gone at the time the status was taken (0..1).
    elapsed: float
    #: The part of ``spent_usd`` that running attempts have accrued (not billed yet).
    accrued_usd: float = 0.0

    @property
    def used(self) -> float:
        """Spend as a fraction of the budget."""
        return self.spent_usd / self.monthly_usd

    @property
    def forecast_usd(self) -> float:
        """The month's spend if the burn rate so far holds; spend alone before any time has passed."""
        return self.spent_usd / self.elapsed if self.elapsed > 0 else self.spent_usd

    @property
    def over(self) -> bool:
        return self.spent_usd >= self.monthly_usd

    def as_dict(self) -> dict[str, object]:
        return {
            "team": self.team,
            "month": self.month,
            "spent_usd": round(self.spent_usd, 2),
            "billed_usd": round(self.spent_usd - self.accrued_usd, 2),
            "accrued_usd": round(self.accrued_usd, 2),
            "monthly_usd": self.monthly_usd,
            "used": round(self.used, 4),
            "forecast_usd": round(self.forecast_usd, 2),
            "month_elapsed": round(self.elapsed, 4),
        }


def budget_status(
    team: str, budget: BudgetConfig, billed_usd: float, now: float, accrued_usd: float = 0.0
) -> BudgetStatus:
    """Where ``team`` stands in the month of ``now`` (epoch seconds): billed plus accrued in it."""
    month = month_of(now * 1000)
    start, end = month_bounds(month)
    elapsed = (now - start.timestamp()) / (end.timestamp() - start.timestamp())
    spent = billed_usd + accrued_usd
    return BudgetStatus(team, month, spent, budget.monthly_usd, min(1.0, max(0.0, elapsed)), accrued_usd)


def crossed(status: BudgetStatus, budget: BudgetConfig) -> list[float]:
    """The alert thresholds the month's spend has reached."""
    return [t for t in budget.alert_thresholds if status.used >= t]


class Admission(StrEnum):
    """What a budget does to one new job at submission."""

    ALLOW = "allow"
    REFUSE = "refuse"
    DEMOTE = "demote"


def admission(status: BudgetStatus | None, budget: BudgetConfig | None, tier: Tier | None) -> Admission:
    """Whether an over-budget team's new job goes in as asked, is refused, or goes in at LOWPRI."""
    if status is None or budget is None or not status.over or tier is None:
        return Admission.ALLOW
    if budget.enforcement is BudgetEnforcement.REFUSE_LOWPRI and tier is Tier.LOWPRI:
        return Admission.REFUSE
    if budget.enforcement is BudgetEnforcement.DEMOTE_TO_LOWPRI and tier is not Tier.LOWPRI:
        return Admission.DEMOTE
    return Admission.ALLOW


def refusal_message(status: BudgetStatus) -> tuple[str, str]:
    """(problem, fix) of a LOWPRI job refused because its team is over budget."""
    problem = (
        f"{status.team} has spent {status.spent_usd:,.2f} USD{_running(status)} of its "
        f"{status.monthly_usd:,.2f} USD budget for {status.month}; new LOWPRI jobs are refused while the "
        "team is over it (jobs already queued or running are not touched)"
    )
    fix = (
        "drop it again next month, submit it as MIDPRI or HIGHPRI if it cannot wait, or ask the platform "
        f"team to raise budgets.{status.team}.monthly_usd; `shareplane usage --team {status.team} "
        "--since month --by user` shows who spent the budget"
    )
    return problem, fix


def _running(status: BudgetStatus) -> str:
    return f" (running jobs included: {status.accrued_usd:,.2f} USD)" if status.accrued_usd > 0 else ""


def demotion_note(status: BudgetStatus, asked: Tier) -> str:
    """What the answer says of a job that went in at LOWPRI instead of ``asked``."""
    return (
        f"submitted at LOWPRI instead of {asked.value}: {status.team} has spent "
        f"{status.spent_usd:,.2f} USD of its {status.monthly_usd:,.2f} USD budget for {status.month}"
    )
