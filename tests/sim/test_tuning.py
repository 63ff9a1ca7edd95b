"""Tuning the rebalancer on one part of a trace: the split, the grid, the selection rule, the CLI."""

from __future__ import annotations

import json

import pytest
from gpusim.trace import TraceJob
from gpusim.tuning import (
    GRID,
    CandidateScore,
    WindowScore,
    can_step_down,
    candidate_grid,
    select,
    split_trace,
    tune_rebalance,
    tuning_windows,
)
from gpusim.whatif.config import RebalanceRun, SharesMapping, WhatIfConfig
from gpusim.whatif.scenario import build_scenario
from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane.domain.errors import ConfigError, InvalidInputError
from shareplane_cli.main import app
from typer.testing import CliRunner

from tests.fakes.rebalance_world import shares_config
from tests.properties import examples
from tests.sim.traces import synthetic_trace, write_csv

SMALL_CONFIG = WhatIfConfig(shares=SharesMapping(top_k=3))


# ---------------------------------------------------------------------------------------------------
# Split
# ---------------------------------------------------------------------------------------------------
def test_the_split_is_by_job_count_and_each_part_starts_at_zero() -> None:
    # GIVEN a trace whose first "week" holds two jobs and the rest many (as Philly's first weeks do)
    sparse = [TraceJob(0.0, 60, 1, "a"), TraceJob(600_000.0, 60, 1, "b")]
    dense = [TraceJob(700_000.0 + 10 * i, 60, 1, "a" if i % 2 else "b") for i in range(8)]
    # WHEN it is split in half
    split = split_trace(sparse + dense, 0.5)
    # THEN each part has five jobs, not one week each, and starts at 0
    assert len(split.tuning) == len(split.held_out) == 5
    assert split.tuning[0].submit == 0 and split.held_out[0].submit == 0
    assert split.split_at == 700_030.0
    assert [j.submit for j in split.held_out] == [0.0, 10.0, 20.0, 30.0, 40.0]


@settings(max_examples=examples(40), deadline=None)
@given(
    submits=st.lists(st.integers(0, 10_000), min_size=2, max_size=60),
    fraction=st.floats(0.05, 0.95),
)
def test_the_split_keeps_every_job_once_in_submit_order(submits: list[int], fraction: float) -> None:
    trace = [TraceJob(float(s), 60.0, 1 + n % 3, f"t{n % 4}") for n, s in enumerate(submits)]
    cut = int(len(trace) * fraction)
    if cut < 1 or cut >= len(trace):
        with pytest.raises(InvalidInputError):
            split_trace(trace, fraction)
        return
    split = split_trace(trace, fraction)
    assert len(split.tuning) == cut and len(split.tuning) + len(split.held_out) == len(trace)
    ordered = sorted(trace, key=lambda j: j.submit)
    # Durations, GPUs and teams go through untouched; only the clock origin moves.
    assert [(j.duration, j.gpus, j.team) for j in split.tuning + split.held_out] == [
        (j.duration, j.gpus, j.team) for j in ordered
    ]
    assert all(b.submit >= a.submit for a, b in zip(split.held_out, split.held_out[1:], strict=False))
    assert split.tuning[-1].submit + ordered[0].submit <= split.split_at + ordered[0].submit


@pytest.mark.parametrize(
    ("fraction", "jobs"),
    [(0.0, 10), (1.0, 10), (0.5, 1), (0.05, 10)],
    ids=["nothing to tune on", "nothing held out", "one job cannot be split", "a part rounds to no jobs"],
)
def test_a_split_that_leaves_a_part_empty_is_refused(fraction: float, jobs: int) -> None:
    with pytest.raises(InvalidInputError):
        split_trace([TraceJob(float(i), 60, 1, "a") for i in range(jobs)], fraction)


def test_each_half_is_sized_for_the_target_load_on_its_own() -> None:
    split = split_trace(synthetic_trace(count=200), 0.5)
    for part in (split.tuning, split.held_out):
        scenario = build_scenario(part, SMALL_CONFIG, seed=0)
        assert scenario.offered_load <= SMALL_CONFIG.target_load
        smaller = build_scenario(part, SMALL_CONFIG, scenario.capacity_gpus - 1, seed=0)
        assert smaller.offered_load > SMALL_CONFIG.target_load


def test_the_tuning_windows_are_the_part_and_its_two_halves() -> None:
    part = split_trace(synthetic_trace(count=100), 0.5).tuning
    whole, first, second = tuning_windows(part)
    assert len(whole) == 50 and (len(first), len(second)) == (25, 25)
    assert tuning_windows(part[:3]) == [part[:3]]


# ---------------------------------------------------------------------------------------------------
# Grid and selection
# ---------------------------------------------------------------------------------------------------
def test_the_grid_is_seeded_distinct_and_keeps_what_it_does_not_vary() -> None:
    base = RebalanceRun(wait_window_minutes=45)
    grid = candidate_grid(base, 8, seed=1)
    assert grid == candidate_grid(base, 8, seed=1) != candidate_grid(base, 8, seed=2)
    assert len({c.model_dump_json() for c in grid}) == 8
    assert all(
        c.wait_window_minutes == 45 and c.rules.weight_factor_max == base.rules.weight_factor_max
        for c in grid
    )
    assert all(c.rules.slo_boost_factor in GRID["slo_boost_factor"] for c in grid)
    everything = candidate_grid(base, 10_000)
    assert all(can_step_down(c.rules.max_step, c.rules.deadband) for c in everything)
    assert len(everything) == 144  # 192 combinations less the 48 whose deadband blocks a step down


@pytest.mark.parametrize(
    ("max_step", "deadband", "expected"),
    [(0.25, 0.05, True), (0.25, 0.2, False), (0.25, 0.3, False), (1.0, 0.2, True), (1.0, 0.5, False)],
    ids=[
        "a narrow deadband lets a quarter step down",
        "a deadband equal to the largest decrease (0.25 / 1.25) drops it after rounding",
        "a wider one drops it outright",
        "a doubling step steps down by half, past a 0.2 deadband",
        "but not past a 0.5 one",
    ],
)
def test_a_candidate_must_be_able_to_step_a_weight_down(
    max_step: float, deadband: float, expected: bool
) -> None:
    assert can_step_down(max_step, deadband) is expected


def scored(name: float, gains: list[float], losses: list[float]) -> CandidateScore:
    """A candidate told apart by its interval, with given gains and utilization losses per window."""
    windows = tuple(WindowScore(1.0 + g, 1.0, 0.9 - loss, 0.9) for g, loss in zip(gains, losses, strict=True))
    return CandidateScore(RebalanceRun(interval_minutes=name), windows)


@pytest.mark.parametrize(
    ("candidates", "chosen"),
    [
        ([scored(1, [0.02, 0.01, 0.0], [0, 0, 0]), scored(2, [0.05, -0.01, 0.04], [0, 0, 0])], 1),
        ([scored(1, [0.01, 0.01, 0.01], [0, 0, 0]), scored(2, [0.01, 0.02, 0.01], [0, 0, 0])], 1),
        ([scored(1, [0.05, 0.05, 0.05], [0, 0.02, 0]), scored(2, [0.01, 0.01, 0.01], [0, 0.005, 0])], 2),
        ([scored(1, [0.05, 0.05, 0.05], [0.02, 0, 0])], None),
        ([scored(1, [-0.02, -0.01, -0.03], [0, 0, 0]), scored(2, [-0.01, -0.01, -0.01], [0, 0, 0])], 2),
    ],
    ids=[
        "the best worst-window gain wins over the best single window",
        "a tie keeps the earlier, gentler candidate",
        "a candidate costing more than the utilization bound in any window is out",
        "no eligible candidate means no choice",
        "with only losses, the smallest loss is chosen (and the report shows the loss)",
    ],
)
def test_selection_takes_the_best_worst_window_gain(
    candidates: list[CandidateScore], chosen: float | None
) -> None:
    pick = select(candidates, 0.01)
    assert (None if pick is None else pick.run.interval_minutes) == chosen


# ---------------------------------------------------------------------------------------------------
# The whole loop and the CLI on a small synthetic trace
# ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_report():
    return tune_rebalance(synthetic_trace(count=240), SMALL_CONFIG, grid_size=2, seed=3)


def test_tuning_reports_both_halves_with_the_chosen_settings(small_report) -> None:
    report = small_report
    assert len(report.tuning.scenario.jobs) == len(report.held_out.scenario.jobs) == 120
    assert len(report.choice.candidates) == 2
    assert all(len(c.windows) == 3 for c in report.choice.candidates)
    assert report.choice.chosen is select(report.choice.candidates, report.choice.max_utilization_loss)
    chosen = report.choice.chosen
    assert chosen is not None and report.held_out.rebalanced.policy.value == "fairshare+rebalance"
    assert report.target_met == (
        report.held_out.rebalanced.worst_team_entitlement_ratio
        >= report.held_out.fixed.worst_team_entitlement_ratio
    )
    out = report.to_json()
    assert set(out) == {"chosen", "target_met", "tuning", "held_out", "candidates"}
    assert set(out["held_out"]) >= {"fairshare", "fairshare+rebalance", "capacity_gpus", "jobs"}


def test_tuning_is_deterministic(small_report) -> None:
    again = tune_rebalance(synthetic_trace(count=240), SMALL_CONFIG, grid_size=2, seed=3)
    assert again.to_json() == small_report.to_json()


def test_the_cli_tunes_and_prints_json(tmp_path) -> None:
    trace = write_csv(tmp_path / "t.csv", synthetic_trace(count=120))
    result = CliRunner().invoke(app, ["tune-rebalance", "--trace", str(trace), "--grid", "1", "-o", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["tuning"]["jobs"] == out["held_out"]["jobs"] == 60
    table = CliRunner().invoke(app, ["tune-rebalance", "--trace", str(trace), "--grid", "1"])
    assert table.exit_code == 0 and "held-out" in table.stdout and "worst team ratio" in table.stdout


def test_the_cli_refuses_a_bad_split(tmp_path) -> None:
    trace = write_csv(tmp_path / "t.csv", synthetic_trace(count=20))
    result = CliRunner().invoke(app, ["tune-rebalance", "--trace", str(trace), "--split", "1.5"])
    assert result.exit_code == 2 and "--split" in result.output


@pytest.mark.parametrize(
    "build",
    [
        lambda rules: shares_config(rebalance=rules),
        lambda rules: WhatIfConfig.model_validate({"rebalance": {"rules": rules}}),
    ],
    ids=["the Lambda's shares config", "the what-if config"],
)
def test_a_config_whose_weights_could_never_step_down_is_refused(build) -> None:
    with pytest.raises(ConfigError, match="deadband"):
        build({"max_step": 0.25, "deadband": 0.2})
    build({"max_step": 0.25, "deadband": 0.19})
