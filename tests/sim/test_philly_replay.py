"""The shipped Philly trace through the one loader and the one replay: whole capacity units, times
from the first arrival, every job finished and the cluster never over its capacity."""

from __future__ import annotations

import pytest
from gpusim.trace import NAMED_TRACES, load_trace
from gpusim.whatif.config import Policy, WhatIfConfig
from gpusim.whatif.run import PolicyRun
from gpusim.whatif.scenario import build_scenario, units_for
from shareplane.domain.errors import InvalidInputError

from tests.sim.test_whatif import SMALL_CONFIG
from tests.sim.traces import synthetic_trace

TRACE = NAMED_TRACES["philly"]
GPUS_PER_INSTANCE = 8


@pytest.mark.parametrize(
    ("gpus", "instances"),
    [(0, 1), (1, 1), (8, 1), (9, 2), (16, 2), (64, 8)],
    ids=[
        "zero GPUs still take one instance",
        "one GPU takes one instance",
        "eight GPUs fill one instance",
        "nine GPUs need two",
        "sixteen GPUs take two",
        "sixty-four GPUs take eight",
    ],
)
def test_gpus_map_to_whole_instances(gpus: int, instances: int) -> None:
    assert units_for(gpus, GPUS_PER_INSTANCE) == instances


def test_philly_trace_loads_with_times_from_the_first_submission() -> None:
    jobs = load_trace(TRACE)[:100]
    assert len(jobs) == 100
    assert (
        jobs[0].submit == 0 and units_for(jobs[0].gpus, GPUS_PER_INSTANCE) == 1 and jobs[0].team == "7f04ca"
    )
    assert jobs[0].duration == 2240194.0
    assert all(a.submit <= b.submit for a, b in zip(jobs, jobs[1:], strict=False))


def test_a_missing_trace_fails_with_a_clear_message(tmp_path) -> None:
    with pytest.raises(InvalidInputError) as err:
        load_trace(tmp_path / "nope.csv")
    assert err.value.field == "trace" and "does not exist" in err.value.problem


def test_synthetic_traces_are_seeded() -> None:
    a = synthetic_trace(3, 50)
    assert a == synthetic_trace(3, 50)
    assert a != synthetic_trace(4, 50)
    assert {j.team for j in a} == {"alpha", "beta", "gamma", "delta"}


@pytest.mark.parametrize("policy", list(Policy), ids=lambda p: f"under {p.value}")
def test_a_replay_finishes_every_job_and_never_exceeds_capacity(policy: Policy) -> None:
    scenario = build_scenario(synthetic_trace(1, 300), SMALL_CONFIG, seed=1)
    run = PolicyRun(scenario, policy, seed=1)
    peak = []
    run.model.subscribe(lambda e: peak.append(sum(run.model.environments["whatif"].in_use.values())))
    result = run.replay()
    assert result.jobs == result.finished == 300
    assert 0 < max(peak) <= scenario.capacity_units
    assert 0 < result.utilization <= 1
    for waits in result.wait_seconds.values():
        assert waits["p50"] <= waits["p95"]


def test_philly_prefix_replays_in_fair_share() -> None:
    # 50 p4d-like instances, jobs in whole instances
    config = WhatIfConfig(gpus_per_unit=GPUS_PER_INSTANCE)
    scenario = build_scenario(load_trace(TRACE)[:2000], config, 50 * GPUS_PER_INSTANCE, seed=0)
    result = PolicyRun(scenario, Policy.FAIRSHARE).replay()
    assert result.finished == 2000
    assert sum(1 for hours in result.gpu_hours.values() if hours > 0) > 3


def test_the_shipped_trace_loads_by_name_and_by_path_alike() -> None:
    by_name = load_trace("philly")
    assert len(by_name) == 51998
    assert by_name[:10] == load_trace(TRACE, "philly-csv")[:10]
