"""Budget alerts from the scheduled watch: each threshold once a month, whatever the ticks' order or repeats."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane.domain.config.shares import SharesConfig
from shareplane.service.watch_jobs import watch

from tests.conftest import REPO
from tests.fakes.failure_world import World
from tests.properties import examples


def budget_config(**budget: Any) -> SharesConfig:
    data = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())
    data["budgets"] = {"ProdExp1": {"monthly_usd": 1000, "alert_thresholds": [0.5, 0.8, 1.0], **budget}}
    return SharesConfig.model_validate(data)


def published(world: World) -> list[dict[str, Any]]:
    return [{"subject": s, "message": m, "attributes": a} for s, m, a in world.alerts.sent]


def at(day: int, month: int = 3) -> float:
    return datetime(2026, month, day, tzinfo=UTC).timestamp()


def test_thresholds_reached_alert_once_with_team_kind_and_severity_attributes() -> None:
    world = World(config=budget_config())
    world.store.spend[("ProdExp1", "2026-03")] = 850.0
    # WHEN the watch runs three times in the month
    for day in (10, 10, 12):
        report = watch(world.ports, at(day))
    # THEN 50% and 80% alerted once each, as warnings naming the team and the budget kind
    sent = published(world)
    assert [s["attributes"]["kind"] for s in sent] == ["budget", "budget"]
    assert {s["attributes"]["team"] for s in sent} == {"ProdExp1"}
    assert {s["attributes"]["severity"] for s in sent} == {"warning"}
    assert "50% of the 2026-03 budget" in sent[0]["subject"] and "80%" in sent[1]["subject"]
    # ... the body forecasts the month from its burn rate (11 of 31 days gone on the 12th)
    assert sent[0]["message"]["forecast_usd"] == pytest.approx(850 * 31 / 9, abs=0.01)  # sent on the 10th
    assert report.budgets["ProdExp1"]["forecast_usd"] == pytest.approx(850 * 31 / 11, abs=0.01)
    assert "shareplane usage --team ProdExp1" in sent[0]["message"]["fix"]
    # AND the gauges are published per team and share
    used = world.metrics.named("BudgetUsedPercent")
    assert used[-1] == (85.0, {"Team": "ProdExp1", "Share": "ProdExp1"})
    # WHEN the budget is spent THEN the 100% alert is critical; a new month alerts afresh
    world.store.spend[("ProdExp1", "2026-03")] = 1000.0
    watch(world.ports, at(20))
    assert published(world)[-1]["attributes"]["severity"] == "critical"
    world.store.spend[("ProdExp1", "2026-04")] = 600.0
    watch(world.ports, at(2, month=4))
    assert [s["subject"].split(": ")[-1] for s in published(world)[3:]] == ["50% of the 2026-04 budget spent"]


@settings(max_examples=examples(60), deadline=None)
@given(ticks=st.lists(st.sampled_from([at(5), at(17), at(28), at(3, 4), at(29, 4)]), min_size=1, max_size=12))
def test_each_threshold_alerts_once_a_month_under_repeated_and_reordered_ticks(ticks: list[float]) -> None:
    world = World(config=budget_config())
    world.store.spend[("ProdExp1", "2026-03")] = 900.0  # 50% and 80% reached
    world.store.spend[("ProdExp1", "2026-04")] = 1200.0  # all three
    for now in ticks:
        watch(world.ports, now)
    months = {datetime.fromtimestamp(t, UTC).strftime("%Y-%m") for t in ticks}
    expected = {("2026-03", 50), ("2026-03", 80)} & {(m, p) for m in months for p in (50, 80)}
    if "2026-04" in months:
        expected |= {("2026-04", 50), ("2026-04", 80), ("2026-04", 100)}
    sent = [s["message"] for s in published(world)]
    assert sorted((m["month"], round(m["threshold"] * 100)) for m in sent) == sorted(expected)


def test_a_team_without_a_budget_is_never_alerted_on_cost() -> None:
    data = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())
    world = World(config=SharesConfig.model_validate({**data, "budgets": {}}))
    world.store.spend[("ProdExp1", "2026-03")] = 1e9
    report = watch(world.ports, at(10))
    assert published(world) == [] and report.budgets == {}


def test_a_running_job_counts_in_the_month_and_alerts_before_anything_is_billed() -> None:
    # GIVEN nothing billed, and ProdExp1's job on 8 ml.p4d.24xlarge training since 00:00 on 10 March
    from shareplane.domain.jobs.training import TrainingJobStatus
    from shareplane.service.record_state import record_observation

    from tests.cost_world import Attempt, Job, batch_events, training_events

    world = World(config=budget_config())
    start, now = int(at(10) * 1000), at(10) + 3 * 3600
    attempt = Attempt("AWSBatchbig-a0", start, start + 72 * 3_600_000, 8, TrainingJobStatus.COMPLETED, 0)
    job = Job("big", "ProdExp1", 10, (attempt,))
    for event in [*batch_events(job, int(now * 1000)), *training_events(attempt, int(now * 1000))]:
        record_observation(event, world.store, world.metrics, world.config)
    # WHEN the watch runs three hours in
    report = watch(world.ports, now)
    # THEN the month holds what the job accrued (3 h x 8 x 37.688 = 904.51 USD), and 50% and 80% alerted
    assert report.budgets["ProdExp1"]["billed_usd"] == 0.0
    assert report.budgets["ProdExp1"]["accrued_usd"] == pytest.approx(3 * 8 * 37.688, abs=0.01)
    budget = [s for s in published(world) if s["attributes"]["kind"] == "budget"]
    assert sorted(round(s["message"]["threshold"] * 100) for s in budget) == [50, 80]
    assert "accrued by running jobs" in budget[0]["message"]["reason"]
