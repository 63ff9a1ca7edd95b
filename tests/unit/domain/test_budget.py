"""Budgets: config validation, month bounds, burn-rate forecast and what enforcement admits."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from shareplane.domain.config.shares import BudgetConfig, BudgetEnforcement, SharesConfig, Tier
from shareplane.domain.cost.budget import Admission, admission, budget_status, crossed, month_bounds
from shareplane.domain.cost.budget_alerts import budget_alert
from shareplane.domain.errors import ConfigError

from tests.conftest import REPO

RAW = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())


def config(**budgets: Any) -> SharesConfig:
    return SharesConfig.model_validate({**RAW, "budgets": budgets})


def test_a_budget_for_an_unknown_team_or_with_unordered_thresholds_is_refused_naming_the_field() -> None:
    with pytest.raises(ConfigError) as unknown:
        config(Nobody={"monthly_usd": 10})
    assert unknown.value.field == "budgets.Nobody" and "ProdExp1" in unknown.value.fix
    with pytest.raises(ConfigError) as unordered:
        config(ProdExp1={"monthly_usd": 10, "alert_thresholds": [1.0, 0.8]})
    assert unordered.value.field == "budgets.alert_thresholds"


def test_the_forecast_extrapolates_the_months_burn_rate() -> None:
    budget = BudgetConfig(monthly_usd=3000)
    # February 2026 has 28 days; at noon on the 8th, 7.5 days are gone
    now = datetime(2026, 2, 8, 12, tzinfo=UTC).timestamp()
    status = budget_status("ProdExp1", budget, 750.0, now)
    assert status.month == "2026-02"
    assert status.forecast_usd == pytest.approx(750 * 28 / 7.5)
    assert (status.used, status.over) == (0.25, False)
    assert month_bounds("2026-12")[1] == datetime(2027, 1, 1, tzinfo=UTC)


def test_crossed_thresholds_and_the_alert_they_make() -> None:
    cfg = config(ProdExp2={"monthly_usd": 100, "alert_thresholds": [0.5, 0.8, 1.0]})
    budget = cfg.budgets["ProdExp2"]
    status = budget_status("ProdExp2", budget, 80.0, datetime(2026, 3, 20, tzinfo=UTC).timestamp())
    assert crossed(status, budget) == [0.5, 0.8]
    alert = budget_alert(status, 0.8, cfg)
    assert alert.attributes == {
        "severity": "warning",
        "team": "ProdExp2",
        "tier": "none",
        "share": "ProdExp2",
        "kind": "budget",
        "queue": "none",
    }
    assert alert.dedupe_key == "ALERT#budget:ProdExp2:2026-03:80#budget"
    assert len(alert.subject) <= 100


@pytest.mark.parametrize(
    ("enforcement", "spent", "tier", "expected"),
    [
        (BudgetEnforcement.REFUSE_LOWPRI, 100, Tier.LOWPRI, Admission.REFUSE),
        (BudgetEnforcement.REFUSE_LOWPRI, 100, Tier.MIDPRI, Admission.ALLOW),
        (BudgetEnforcement.REFUSE_LOWPRI, 99.99, Tier.LOWPRI, Admission.ALLOW),
        (BudgetEnforcement.DEMOTE_TO_LOWPRI, 150, Tier.HIGHPRI, Admission.DEMOTE),
        (BudgetEnforcement.DEMOTE_TO_LOWPRI, 150, Tier.LOWPRI, Admission.ALLOW),
        (BudgetEnforcement.NONE, 1e6, Tier.LOWPRI, Admission.ALLOW),
    ],
)
def test_admission_acts_only_on_an_over_budget_teams_new_jobs_as_its_enforcement_says(
    enforcement: BudgetEnforcement, spent: float, tier: Tier, expected: Admission
) -> None:
    budget = BudgetConfig(monthly_usd=100, enforcement=enforcement)
    status = budget_status("ProdExp1", budget, spent, datetime(2026, 3, 5, tzinfo=UTC).timestamp())
    assert admission(status, budget, tier) is expected
