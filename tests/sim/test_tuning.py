"""Tuning the rebalancer on one part of a trace: the split, the grid, the selection rule, the CLI."""

from __future__ import annotations

import json

import pytest
from gpusim.trace import TraceJob
from gpusim.tuning import (
    GRIDS,
    CandidateScore,
    Measures,
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
from shareplane.domain.config.shares import RebalanceDesign
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
def test_the_grid_is_seeded_distinct_per_design_and_keeps_what_it_does_not_vary() -> None:
    base = RebalanceRun(wait_window_minutes=45)
    grid = candidate_grid(base, 8, seed=1)
    assert grid == candidate_grid(base, 8, seed=1) != candidate_grid(base, 8, seed=2)
    assert len({c.model_dump_json() for c in grid}) == 24
    assert [c.rules.design for c in grid] == [d for d in RebalanceDesign for _ in range(8)]
    assert all(
        c.wait_window_minutes == 45 and c.rules.weight_factor_max == base.rules.weight_factor_max
        for c in grid
    )
    assert all(c.rules.slo_boost_factor in GRIDS[c.rules.design]["slo_boost_factor"] for c in grid)
    everything = candidate_grid(base, 10_000)
    assert all(can_step_down(c.rules.max_step, c.rules.deadband) for c in everything)
    # demand_targets: 192 combinations less the 48 whose deadband blocks a step down; each credit design
    # 128 less 32.
    assert len(everything) == 144 + 96 + 96
    # Credits remember longer than fair share's own one-week decay.
    credits = [c for c in everything if c.rules.design.weighs_credits]
    assert min(c.rules.ledger_half_life_seconds for c in credits) > 7 * 86400


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


def measures(worst: float = 1.0, disparity: float | None = 1.5, utilization: float = 0.9, p95: float = 0.0):
    return Measures(worst, disparity, utilization, p95, 1.0 if p95 <= 900 else 0.5)


BASE = measures()


def scored(name: float, gains: list[float], losses: list[float]) -> CandidateScore:
    """A candidate told apart by its interval, gaining ``g`` on both measures and losing utilization."""
    windows = tuple(
        WindowScore(measures(1.0 + g, 1.5 / (1 + g), 0.9 - loss), BASE, 900.0)
        for g, loss in zip(gains, losses, strict=True)
    )
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


@pytest.mark.parametrize(
    ("candidate", "gain"),
    [
        (measures(worst=1.1, disparity=1.5), 0.0),
        (measures(worst=1.1, disparity=1.6), 1.5 / 1.6 - 1),
        (measures(worst=0.95, disparity=1.2), 0.95 - 1),
        (measures(worst=1.05, disparity=1.25), 0.05),
        (measures(worst=1.2, disparity=None), -1.0),
    ],
    ids=[
        "a better worst team with the same disparity gains nothing",
        "a better worst team with a wider disparity loses",
        "a narrower disparity with a worse-off worst team loses",
        "better on both gains the smaller improvement",
        "a team left with nothing is a full loss",
    ],
)
def test_a_window_gains_only_what_both_measures_gain(candidate: Measures, gain: float) -> None:
    assert WindowScore(candidate, BASE, 900.0).gain == pytest.approx(gain)


@pytest.mark.parametrize(
    ("baseline_p95", "candidate", "kept"),
    [
        (600.0, Measures(1, 1, 0.9, 800.0, 0.97), True),
        (600.0, Measures(1, 1, 0.9, 1000.0, 0.94), False),
        (3600.0, Measures(1, 1, 0.9, 7200.0, 0.495), True),
        (3600.0, Measures(1, 1, 0.9, 3000.0, 0.48), False),
    ],
    ids=[
        "within the SLO where the baseline is",
        "past the SLO where the baseline is within it",
        "where the baseline misses it, a point of attainment may go",
        "but not two",
    ],
)
def test_highpri_must_keep_its_slo(baseline_p95: float, candidate: Measures, kept: bool) -> None:
    baseline = Measures(1, 1, 0.9, baseline_p95, 0.5 if baseline_p95 > 900 else 0.96)
    assert WindowScore(candidate, baseline, 900.0).highpri_kept is kept


# ---------------------------------------------------------------------------------------------------
# The whole loop and the CLI on a small synthetic trace
# ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_report():
    return tune_rebalance(synthetic_trace(count=240), SMALL_CONFIG, grid_size=2, seed=3)


def test_tuning_reports_the_baseline_and_each_design_on_both_halves_and_more_seeds(small_report) -> None:
    report = small_report
    assert len(report.tuning.scenario.jobs) == len(report.held_out.scenario.jobs) == 120
    assert len(report.choice.candidates) == 6  # two per design
    assert all(len(c.windows) == 3 for c in report.choice.candidates)
    assert report.choice.chosen is select(report.choice.candidates, report.choice.max_utilization_loss)
    for half in (report.tuning, report.held_out, *report.other_seeds):
        assert half.baseline.policy.value == "fairshare+reclaim"
        assert set(half.designs) == set(RebalanceDesign)
        assert {r.policy.value for r in half.designs.values()} == {"fairshare+reclaim+rebalance"}
    assert [h.seed for h in report.other_seeds] == [1, 2]
    assert report.default_mode == ("apply" if report.target_met else "advisory")
    out = report.to_json()
    assert set(out) == {
        "chosen",
        "per_design",
        "target_met",
        "default_mode",
        "tuning",
        "held_out",
        "held_out_other_seeds",
        "candidates",
    }
    assert set(out["held_out"]) >= {
        "fairshare+reclaim",
        "fairshare+reclaim+rebalance (credits)",
        "fairshare+reclaim+rebalance (demand_targets)",
        "fairshare+reclaim+rebalance (owed_credits)",
        "capacity_gpus",
        "jobs",
    }


def test_apply_needs_the_choice_to_beat_the_baseline_on_the_held_out_half_under_every_seed(
    small_report,
) -> None:
    report = small_report
    held_out_halves = (report.held_out, *report.other_seeds)
    chosen = report.choice.chosen
    assert report.target_met == (
        chosen is not None
        and chosen.score > 0
        and all(h.beaten_by(chosen.run.rules.design, 0.01) for h in held_out_halves)
    )
    held = report.held_out
    for d, result in held.designs.items():
        fairer = result.worst_team_entitlement_ratio >= held.baseline.worst_team_entitlement_ratio and (
            result.disparity or float("inf")
        ) <= (held.baseline.disparity or float("inf"))
        if not fairer:
            assert not held.beaten_by(d, 0.01)


def test_tuning_is_deterministic(small_report) -> None:
    again = tune_rebalance(synthetic_trace(count=240), SMALL_CONFIG, grid_size=2, seed=3)
    assert again.to_json() == small_report.to_json()


def test_the_cli_tunes_and_prints_json(tmp_path) -> None:
    trace = write_csv(tmp_path / "t.csv", synthetic_trace(count=120))
    result = CliRunner().invoke(app, ["tune-rebalance", "--trace", str(trace), "--grid", "1", "-o", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["tuning"]["jobs"] == out["held_out"]["jobs"] == 60
    assert out["default_mode"] in {"apply", "advisory"}
    table = CliRunner().invoke(
        app, ["tune-rebalance", "--trace", str(trace), "--grid", "1", "--report-seed", "4"]
    )
    assert table.exit_code == 0, table.output
    assert "held-out" in table.stdout and "worst team ratio" in table.stdout and "disparity" in table.stdout
    assert "seed 4" in table.stdout and "rebalance mode" in table.stdout


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
