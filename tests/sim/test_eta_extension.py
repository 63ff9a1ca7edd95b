"""The world keeps submitting: the backtest replays the trace followed by copies of itself, so every
predicted job starts before the extended trace's last submission."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from gpusim.forecast import backtest as backtest_module
from gpusim.forecast.backtest import backtest, copies_for_horizon, evaluate
from gpusim.whatif.config import Policy, WhatIfConfig
from gpusim.whatif.run import PolicyRun
from gpusim.whatif.scenario import ScenarioJob, build_scenario, extend_scenario, scenario_of
from shareplane.domain.errors import InvalidInputError
from shareplane.domain.forecast.start_forecast import ForecastSettings

from tests.sim.traces import synthetic_trace

HOUR = 3600.0
#: A 2-hour horizon: one copy of a 10-hour trace reaches it.
SHORT = ForecastSettings(samples=4, arrival_lookback_seconds=HOUR, horizon_seconds=2 * HOUR)


def _job(name: str, submit: float, units: int, duration: float) -> ScenarioJob:
    return ScenarioJob(name, submit, duration, units, share=0, tier=2, priority=1)


@pytest.fixture(scope="module")
def burst_at_the_end():
    """Four units; a light job an hour for 9 hours, then 12 jobs of the whole capacity for an hour each
    at the last submission: in the trace alone they start only once submissions have stopped."""
    light = [_job(f"light{n}", n * HOUR, 1, 600.0) for n in range(10)]
    burst = [_job(f"burst{n}", 10 * HOUR, 4, HOUR) for n in range(12)]
    return scenario_of([*light, *burst], WhatIfConfig(), shares=["alpha"], entitlements=[4])


def test_a_copy_keeps_every_attribute_under_a_new_name_shifted_by_the_span(burst_at_the_end) -> None:
    scenario = burst_at_the_end
    extended = extend_scenario(scenario, 2)
    span = scenario.window
    assert span == 10 * HOUR
    assert len(extended.jobs) == 3 * len(scenario.jobs)
    assert len({j.name for j in extended.jobs}) == len(extended.jobs)
    by_name = {j.name: j for j in extended.jobs}
    for job in scenario.jobs:
        assert by_name[job.name] == job
        for k in (1, 2):
            assert by_name[f"{job.name}-copy{k}"] == replace(
                job, name=f"{job.name}-copy{k}", submit=job.submit + k * span
            )
    submits = [j.submit for j in extended.jobs]
    assert submits == sorted(submits) and submits[-1] == scenario.jobs[-1].submit + 2 * span
    assert extended.window == 3 * span
    assert (extended.shares, extended.entitlements, extended.capacity_gpus, extended.team_share) == (
        scenario.shares,
        scenario.entitlements,
        scenario.capacity_gpus,
        scenario.team_share,
    )
    # The rate is the trace's: the same offered GPUs.
    assert extended.offered_gpus == scenario.offered_gpus
    assert extend_scenario(scenario, 0) is scenario


def test_the_copies_are_the_fewest_that_reach_the_horizon_past_the_last_submission(burst_at_the_end) -> None:
    assert copies_for_horizon(burst_at_the_end, 2 * HOUR) == 1
    assert copies_for_horizon(burst_at_the_end, 10 * HOUR) == 1
    assert copies_for_horizon(burst_at_the_end, 10 * HOUR + 1) == 2
    assert copies_for_horizon(burst_at_the_end, 30 * 86400.0) == 72
    with pytest.raises(InvalidInputError):
        copies_for_horizon(burst_at_the_end, math.inf)


def test_predictions_are_made_only_at_the_original_traces_submissions() -> None:
    scenario = build_scenario(synthetic_trace(count=60), WhatIfConfig(), 64, seed=3)
    result = backtest(scenario, Policy.FAIRSHARE, sample=1000, settings=SHORT)
    assert result.extension.copies >= 1
    assert sorted(p.job for p in result.predictions) == sorted(j.name for j in scenario.jobs)
    submitted = {j.name: j.submit for j in scenario.jobs}
    assert all(p.submitted_at == submitted[p.job] for p in result.predictions)
    assert result.extension.original_last_arrival == scenario.jobs[-1].submit
    assert (
        result.extension.last_arrival == scenario.jobs[-1].submit + result.extension.copies * scenario.window
    )


def test_jobs_waiting_at_the_traces_end_start_in_the_copies_and_none_after_the_last_arrival(
    burst_at_the_end,
) -> None:
    # GIVEN the burst at the trace's end, predicted at its submission, with a 2-hour horizon
    scenario = burst_at_the_end
    burst = [j for j in scenario.jobs if j.name.startswith("burst")]
    # WHEN the backtest replays it extended
    result = evaluate(backtest(scenario, Policy.FAIRSHARE, jobs=burst, settings=SHORT))
    summary = result.summary()
    # THEN one copy (the horizon's) left the burst's last jobs waiting at its last submission (12
    # one-hour jobs one after another outlast a 10-hour copy): a second was appended, and every
    # measured start fell in the copies, none after the extended trace's last submission
    assert summary["copies_appended"] == 2 and not summary["extension_bound_hit"]
    assert summary["measured"] == 11  # the first of the burst starts at once
    assert summary["starts_in_appended_copies"] == 11
    assert summary["started_after_last_arrival"] == 0
    last = result.extension.last_arrival
    assert last is not None and all(
        p.actual_start is not None and p.actual_start <= last for p in result.predictions
    )
    # The replay measured is a plain replay of the same extended trace.
    plain = PolicyRun(extend_scenario(scenario, 2), Policy.FAIRSHARE).replay()
    assert result.result.wait_seconds == plain.wait_seconds
    assert result.result.jobs == plain.jobs == 3 * len(scenario.jobs)


def test_the_rounds_adding_copies_are_bounded_and_say_when_the_bound_was_hit(
    burst_at_the_end, monkeypatch
) -> None:
    burst = [j for j in burst_at_the_end.jobs if j.name.startswith("burst")]
    monkeypatch.setattr(backtest_module, "MAX_EXTRA_ROUNDS", 0)
    summary = evaluate(backtest(burst_at_the_end, Policy.FAIRSHARE, jobs=burst, settings=SHORT)).summary()
    assert summary["copies_appended"] == 1 and summary["extension_bound_hit"]
    assert summary["started_after_last_arrival"] > 0
