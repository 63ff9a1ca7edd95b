"""The what-if report's per-share usage series agree with the run's own totals.

GIVEN every policy on a seeded synthetic trace WHEN the meter spreads each share's held GPUs over the
report buckets THEN, bucket by bucket, the shares add up to the utilization series, and each share's
series integrates to the GPU-hours it received.
"""

from __future__ import annotations

import pytest
from gpusim.whatif.config import Policy, SharesMapping, WhatIfConfig
from gpusim.whatif.run import run_whatif
from gpusim.whatif.scenario import build_scenario

from tests.sim.traces import synthetic_trace


@pytest.fixture(scope="module")
def result():
    config = WhatIfConfig(shares=SharesMapping(top_k=3), target_load=1.3, report_buckets=50)
    return run_whatif(build_scenario(synthetic_trace(count=200), config, seed=5), list(Policy), seed=5)


@pytest.mark.parametrize("policy", [p.value for p in Policy], ids=lambda p: f"under {p}")
def test_the_shares_add_up_to_the_utilization_in_every_bucket(result, policy: str) -> None:
    r, sc = result.results[policy], result.scenario
    assert set(r.share_usage_series) == set(sc.shares)
    assert all(len(s) == len(r.utilization_series) == 50 for s in r.share_usage_series.values())
    for k, utilization in enumerate(r.utilization_series):
        held = sum(series[k] for series in r.share_usage_series.values())
        assert held == pytest.approx(utilization * sc.capacity_gpus, rel=1e-9, abs=1e-9)
    assert max(max(s) for s in r.share_usage_series.values()) > 0


@pytest.mark.parametrize("policy", [p.value for p in Policy], ids=lambda p: f"under {p}")
def test_each_series_integrates_to_the_gpu_hours_the_share_received(result, policy: str) -> None:
    r, sc = result.results[policy], result.scenario
    bucket_hours = sc.window / len(r.utilization_series) / 3600
    for share, series in r.share_usage_series.items():
        assert sum(series) * bucket_hours == pytest.approx(r.gpu_hours[share], rel=1e-9, abs=1e-6)
