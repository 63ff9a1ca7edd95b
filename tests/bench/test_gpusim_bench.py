"""Simulator speed: jobs replayed per second on the Philly trace (10k/20k/52k prefixes), fair-share mode."""

from __future__ import annotations

import time

import pytest
from gpusim.trace import NAMED_TRACES
from gpusim.workload import Replay, load_philly

TRACE = NAMED_TRACES["philly"]
CAPACITY = 300  # instances (2,400 GPUs), about the size of the Philly cluster


@pytest.mark.bench
def test_philly_replay_throughput() -> None:
    jobs = load_philly(TRACE)
    rows = []
    for size in (10_000, 20_000, len(jobs)):
        replay = Replay(capacity=CAPACITY, share_decay_seconds=3600)
        replay.feed(jobs[:size])
        start = time.perf_counter()
        summary = replay.run()
        elapsed = time.perf_counter() - start
        assert summary.finished == size
        rows.append((size, elapsed, size / elapsed, summary.utilization))
    print(f"\n{'jobs':>7} {'seconds':>8} {'jobs/s':>8} {'time growth':>12} {'job growth':>11} {'util':>5}")
    base_jobs, base_time = rows[0][0], rows[0][1]
    for size, elapsed, rate, util in rows:
        print(
            f"{size:>7} {elapsed:>8.2f} {rate:>8.0f} {elapsed / base_time:>12.2f} {size / base_jobs:>11.2f} "
            f"{util:>5.2f}"
        )
