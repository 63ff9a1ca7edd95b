"""Simulator speed: jobs replayed per second on the Philly trace (10k/20k/52k prefixes), fair-share.

The replay is the what-if's (``PolicyRun``, meter included), the one every caller uses. Its target is
a ratio within one run: the replay stays near-linear, its time growing at most 1.5 times as fast as the
number of jobs from the 10k prefix to the whole trace (a quadratic pass would grow 5.2 x 5.2 = 27 times).
"""

from __future__ import annotations

import time

import pytest
from gpusim.trace import load_trace
from gpusim.whatif.config import Policy, WhatIfConfig
from gpusim.whatif.run import PolicyRun
from gpusim.whatif.scenario import build_scenario

GPUS_PER_INSTANCE = 8
CAPACITY = 300  # instances (2,400 GPUs), about the size of the Philly cluster
MAX_GROWTH_OVER_LINEAR = 1.5


@pytest.mark.bench
def test_philly_replay_throughput() -> None:
    trace = load_trace("philly")
    config = WhatIfConfig(gpus_per_unit=GPUS_PER_INSTANCE)
    rows = []
    for size in (10_000, 20_000, len(trace)):
        run = PolicyRun(
            build_scenario(trace[:size], config, CAPACITY * GPUS_PER_INSTANCE, seed=0), Policy.FAIRSHARE
        )
        start = time.perf_counter()
        result = run.replay()
        elapsed = time.perf_counter() - start
        assert result.finished == size
        rows.append((size, elapsed, size / elapsed, result.utilization))
    print(f"\n{'jobs':>7} {'seconds':>8} {'jobs/s':>8} {'time growth':>12} {'job growth':>11} {'util':>5}")
    base_jobs, base_time = rows[0][0], rows[0][1]
    for size, elapsed, rate, util in rows:
        print(
            f"{size:>7} {elapsed:>8.2f} {rate:>8.0f} {elapsed / base_time:>12.2f} {size / base_jobs:>11.2f} "
            f"{util:>5.2f}"
        )
    growth = [(elapsed / base_time) / (size / base_jobs) for size, elapsed, _, _ in rows[1:]]
    assert max(growth) <= MAX_GROWTH_OVER_LINEAR, (
        f"replay time grew {max(growth):.2f}x faster than the jobs (target <= {MAX_GROWTH_OVER_LINEAR})"
    )
