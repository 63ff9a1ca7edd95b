"""The rebalancer's design and settings chosen on the first half of the Philly trace, judged on the second.

The claims it checks: `shareplane tune-rebalance` (two designs, a seeded grid of 16 settings each,
seed 0) chooses on the first half of the jobs exactly the design and settings config/whatif.yaml
ships (so the shipped settings are the ones this method picks, not hand-fitted), and the mode
config/shares.yaml ships is the one the held-out half supports: ``apply`` only if the choice is at
least as fair as ``fairshare+reclaim`` there on the worst team's ratio and the disparity, within a
point of its utilization and keeping HIGHPRI's SLO; ``advisory`` otherwise. Every half prints side by
side (the held-out half under seeds 1 and 2 too).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from gpusim.trace import NAMED_TRACES, load_trace
from gpusim.tuning import DEFAULT_GRID_SIZE, describe, tune_rebalance
from gpusim.whatif.config import load_whatif_config
from shareplane_cli.commands.tune_rebalance import print_tuning
from shareplane_cli.config_file import load_config

REPO = Path(__file__).resolve().parents[2]
TRACE = NAMED_TRACES["philly"]
CONFIG = REPO / "config" / "whatif.yaml"
SHARES = REPO / "config" / "shares.yaml"
SEED = 0


@pytest.mark.bench
def test_the_design_chosen_on_the_first_half_and_the_shipped_mode_hold_on_the_second() -> None:
    config = load_whatif_config(CONFIG)
    started = time.perf_counter()
    report = tune_rebalance(load_trace(TRACE), config, grid_size=DEFAULT_GRID_SIZE, seed=SEED)
    print(f"\n{time.perf_counter() - started:.0f} s wall")
    print_tuning(report)
    for candidate in report.choice.candidates:
        gains = " ".join(f"{w.gain:+.4f}" for w in candidate.windows)
        print(f"  score {candidate.score:+.4f} (windows {gains})  {describe(candidate.run)}")
    chosen = report.choice.chosen
    assert chosen is not None, "no candidate kept utilization and HIGHPRI within bounds on the tuning half"
    assert describe(chosen.run) == describe(config.rebalance), "config/whatif.yaml ships other settings"
    shipped = load_config(SHARES).rebalance
    assert shipped.mode.value == report.default_mode, (
        "config/shares.yaml ships a mode the held-out half refutes"
    )
    assert shipped.design is chosen.run.rules.design, "config/shares.yaml ships another design"
    held = report.held_out
    assert held.baseline.finished == len(held.scenario.jobs)
    assert all(r.finished == len(held.scenario.jobs) for r in held.designs.values())
