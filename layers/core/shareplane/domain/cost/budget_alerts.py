"""The budget alert: one per team, month and threshold, routed by team and kind like every alert.

Apart from ``budget.py`` so that the submit path, which only asks ``admission``, does not load the
alert and failure modules at cold start.
"""

from __future__ import annotations

from ..alerts.alert import Alert, subject_line, worded
from ..alerts.kinds import AlertKind
from ..config.failure_rules import Severity
from ..config.shares import BudgetEnforcement, SharesConfig
from .budget import BudgetStatus

#: What each enforcement does once the budget is spent (the fix's middle).
_ENFORCED = {
    BudgetEnforcement.NONE: "nothing is enforced",
    BudgetEnforcement.REFUSE_LOWPRI: "once it is spent, new LOWPRI drops are refused",
    BudgetEnforcement.DEMOTE_TO_LOWPRI: "once it is spent, new HIGHPRI and MIDPRI drops go in at LOWPRI",
}


def budget_alert(status: BudgetStatus, threshold: float, config: SharesConfig) -> Alert:
    """The alert for one threshold: attributes (team, kind ``budget``, severity) for filter policies."""
    percent = round(threshold * 100)
    share = config.teams[status.team].share
    enforcement = config.budgets[status.team].enforcement
    facts = {
        "percent": percent,
        "month": status.month,
        "team": status.team,
        "enforced": _ENFORCED[enforcement],
    }
    severity, headline, fix = worded(AlertKind.BUDGET, facts, "spent" if threshold >= 1 else "nearing")
    severity = severity or Severity.WARNING
    body = {
        **status.as_dict(),
        "threshold": threshold,
        "enforcement": enforcement.value,
        "reason": f"{status.team} spent {status.spent_usd:,.2f} USD{_accrued(status)} of its "
        f"{status.monthly_usd:,.2f} USD budget for {status.month} ({status.used:.0%}); at this burn rate "
        f"the month ends near {status.forecast_usd:,.2f} USD",
        "fix": fix,
    }
    subject = subject_line(f"[{severity.value}]", f"{status.team}:", headline)
    return Alert(
        AlertKind.BUDGET,
        severity,
        share,
        "none",
        subject,
        body,
        f"budget:{status.team}:{status.month}:{percent}",
        team=status.team,
    )


def _accrued(status: BudgetStatus) -> str:
    return f" ({status.accrued_usd:,.2f} of it accrued by running jobs)" if status.accrued_usd > 0 else ""
