"""Rebalancer settings chosen on the first half of the Philly trace, judged on the second half.

The claims it checks: `shareplane tune-rebalance` (seeded grid, seed 0) chooses on the first half of
the jobs exactly the settings config/whatif.yaml ships (so the shipped settings are the ones this
method picks, not hand-fitted), and on the held-out second half the worst team's entitlement ratio
with those settings is at least fixed weights'. Each half is sized for the configured target load on
its own. Both halves print side by side: utilization, worst team ratio, wait p95 by tier.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from gpusim.trace import NAMED_TRACES, load_trace
from gpusim.tuning import DEFAULT_GRID_SIZE, describe, tune_rebalance
from gpusim.whatif.config import TIERS, load_whatif_config

REPO = Path(__file__).resolve().parents[2]
TRACE = NAMED_TRACES["philly"]
CONFIG = REPO / "config" / "whatif.yaml"
SEED = 0


@pytest.mark.bench
def test_settings_tuned_on_the_first_half_hold_on_the_second() -> None:
    config = load_whatif_config(CONFIG)
    started = time.perf_counter()
    report = tune_rebalance(load_trace(TRACE), config, grid_size=DEFAULT_GRID_SIZE, seed=SEED)
    wall = time.perf_counter() - started
    print(f"\nsplit at day {report.split.split_at / 86400:.1f} (by job count); {wall:.0f} s wall")
    header = f"{'half':<9} {'jobs':>6} {'GPUs':>5} {'policy':<20} {'util':>6} {'worst':>6}"
    print(header + "".join(f" {t.value + ' p95 h':>13}" for t in TIERS))
    for name, half in (("tuning", report.tuning), ("held-out", report.held_out)):
        sc = half.scenario
        for result in (half.fixed, half.rebalanced):
            print(
                f"{name:<9} {len(sc.jobs):>6} {sc.capacity_gpus:>5} {result.policy.value:<20} "
                f"{result.utilization:>6.4f} {result.worst_team_entitlement_ratio:>6.4f}"
                + "".join(f" {result.wait_seconds[t.value]['p95'] / 3600:>13.2f}" for t in TIERS)
            )
    for candidate in report.choice.candidates:
        gains = " ".join(f"{w.gain:+.4f}" for w in candidate.windows)
        print(f"  score {candidate.score:+.4f} (windows {gains})  {describe(candidate.run)}")
    chosen = report.choice.chosen
    assert chosen is not None, "no candidate kept utilization within bounds on the tuning half"
    print(f"chosen: {describe(chosen.run)}")
    assert describe(chosen.run) == describe(config.rebalance), "config/whatif.yaml ships other settings"
    held = report.held_out
    assert held.rebalanced.finished == held.fixed.finished == len(held.scenario.jobs)
    assert held.rebalanced.worst_team_entitlement_ratio >= held.fixed.worst_team_entitlement_ratio
    assert held.fixed.utilization - held.rebalanced.utilization <= 0.01
