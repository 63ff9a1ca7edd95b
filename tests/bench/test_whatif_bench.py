"""What-if on the full Philly trace near capacity: the four policies side by side, and their speed.

The claims it checks, with config/whatif.yaml as shipped: fair-share with rebalancing reaches at
least 95% of the work-conserving bound; rebalancing raises the worst team's entitlement ratio over
fair-share with fixed weights while costing at most one point of utilization. Static partitions are
measured on the same run. Speed is printed as jobs replayed per second.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
from gpusim.trace import NAMED_TRACES, load_trace
from gpusim.whatif.config import Policy, load_whatif_config
from gpusim.whatif.run import run_policy
from gpusim.whatif.scenario import build_scenario, offered_gpus

REPO = Path(__file__).resolve().parents[2]
TRACE = NAMED_TRACES["philly"]
CONFIG = REPO / "config" / "whatif.yaml"
TARGET_LOAD = 0.95
SEED = 0


@pytest.mark.bench
def test_whatif_policies_on_the_full_philly_trace() -> None:
    trace = load_trace(TRACE)
    offered = offered_gpus(trace)
    capacity = math.ceil(offered / TARGET_LOAD)
    scenario = build_scenario(trace, load_whatif_config(CONFIG), capacity, SEED)
    print(
        f"\n{len(trace)} jobs; offered {offered:.1f} GPUs (GPU-time / span); capacity {capacity} GPUs "
        f"-> offered load {offered / capacity:.3f}; shares "
        + ", ".join(f"{s}={e}" for s, e in zip(scenario.shares, scenario.entitlements, strict=True))
    )
    started = time.perf_counter()
    results = {p: run_policy(scenario, p, SEED) for p in Policy}
    total = time.perf_counter() - started
    print(
        f"{'policy':<21} {'util':>6} {'bound':>6} {'u/bound':>7} {'worst':>6} {'jain':>6} "
        f"{'lostGPUh':>9} {'HI p95 h':>8} {'LO p50 h':>8} {'plans':>6} {'sec':>5} {'jobs/s':>7}"
    )
    for p, r in results.items():
        print(
            f"{p.value:<21} {r.utilization:>6.3f} {r.work_conserving_bound:>6.3f} "
            f"{r.utilization / r.work_conserving_bound:>7.3f} {r.worst_team_entitlement_ratio:>6.3f} "
            f"{r.jain_index:>6.3f} {r.preemption_gpu_hours_lost:>9.0f} "
            f"{r.wait_seconds['HIGHPRI']['p95'] / 3600:>8.1f} {r.wait_seconds['LOWPRI']['p50'] / 3600:>8.1f} "
            f"{r.applied_plans:>6} {r.wall_seconds:>5.1f} {r.jobs / r.wall_seconds:>7.0f}"
        )
    print(f"four policies: {total:.1f} s wall, {4 * len(trace) / total:.0f} jobs/s")
    fair, rebalanced = results[Policy.FAIRSHARE], results[Policy.REBALANCE]
    assert all(r.finished == len(trace) for r in results.values())
    assert rebalanced.utilization >= 0.95 * rebalanced.work_conserving_bound
    assert rebalanced.worst_team_entitlement_ratio > fair.worst_team_entitlement_ratio
    assert fair.utilization - rebalanced.utilization <= 0.01
    assert results[Policy.STATIC].utilization <= fair.utilization
