"""Workloads: the Philly trace loader, seeded synthetic jobs, and the replay summary."""

from __future__ import annotations

import pytest
from gpusim.trace import NAMED_TRACES
from gpusim.workload import Replay, instances_for, load_philly, synthetic
from shareplane.domain.errors import InvalidInputError

TRACE = NAMED_TRACES["philly"]


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
    assert instances_for(gpus) == instances


def test_philly_trace_loads_with_times_from_the_first_submission() -> None:
    jobs = load_philly(TRACE, limit=100)
    assert len(jobs) == 100
    assert jobs[0].submit == 0 and jobs[0].instances == 1 and jobs[0].share == "7f04ca"
    assert jobs[0].duration == 2240194.0
    assert all(a.submit <= b.submit for a, b in zip(jobs, jobs[1:], strict=False))


def test_a_missing_trace_fails_with_a_clear_message(tmp_path) -> None:
    with pytest.raises(InvalidInputError) as err:
        load_philly(tmp_path / "nope.csv")
    assert err.value.field == "trace" and "does not exist" in err.value.problem


def test_synthetic_workloads_are_seeded() -> None:
    a = synthetic(3, 50, {"A": 1.0, "B": 2.0}, priorities=((1, 1.0), (9, 1.0)))
    assert a == synthetic(3, 50, {"A": 1.0, "B": 2.0}, priorities=((1, 1.0), (9, 1.0)))
    assert a != synthetic(4, 50, {"A": 1.0, "B": 2.0}, priorities=((1, 1.0), (9, 1.0)))
    assert {j.share for j in a} == {"A", "B"} and {j.priority for j in a} == {1, 9}


@pytest.mark.parametrize("mode", ["fairshare", "fifo"], ids=["a fair-share replay", "a FIFO replay"])
def test_replay_finishes_every_job_and_never_exceeds_capacity(mode: str) -> None:
    replay = Replay(capacity=8, mode=mode, weights={"A": 0.5})
    jobs = synthetic(1, 300, {"A": 1.0, "B": 1.0}, mean_interarrival=30)
    peak = []
    replay.model.subscribe(
        lambda e: peak.append(replay.model.environments["replay"].in_use.get("NUM_INSTANCES", 0))
    )
    replay.feed(jobs)
    summary = replay.run()
    assert summary.jobs == summary.finished == 300
    assert max(peak) <= 8
    assert 0 < summary.utilization <= 1
    assert summary.wait_p50 <= summary.wait_p95


def test_philly_prefix_replays_in_fair_share() -> None:
    replay = Replay(capacity=50)
    replay.feed(load_philly(TRACE, limit=2000))
    summary = replay.run()
    assert summary.finished == 2000
    assert len(summary.share_instance_hours) > 3


def test_the_shipped_trace_loads_by_name_and_every_loader_agrees() -> None:
    from gpusim.trace import load_trace

    by_name = load_trace("philly")
    assert len(by_name) == 51998
    replay = load_philly("philly", limit=10)
    assert [(j.submit, j.duration, j.share) for j in replay] == [
        (t.submit, t.duration, t.team) for t in by_name[:10]
    ]
