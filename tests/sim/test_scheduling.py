"""Scheduling rules: FIFO, fair share (weights, reservation, priority), queue priority, blocking."""

from __future__ import annotations

import pytest
from gpusim.model import DISPATCHED


def dispatched_order(sim) -> list[str]:
    return [name for name, status in sim.batch_trace() if status == "SCHEDULED"]


def holding(sim, share: str) -> int:
    return sum(j.count for j in sim.model.jobs.values() if j.share == share and j.status in DISPATCHED)


@pytest.mark.parametrize(
    ("weights", "expected_ratio"),
    [({"A": 0.125, "B": 1.0}, 8.0), ({"A": 1.0, "B": 1.0}, 1.0), ({"A": 1.0, "B": 3.0}, 3.0)],
    ids=[
        "a weightFactor of 0.125 gets about 8x the instances of weight 1 over a long run",
        "equal weights split the capacity evenly",
        "weight 1 against 3 gets about 3x the instances",
    ],
)
def test_weights_split_instances_over_a_long_run(make_sim, weights, expected_ratio) -> None:
    # GIVEN two shares that are backlogged the whole time on 72 instances, a capacity every ratio
    # here divides into whole instances (8:1 is 64+8, 1:1 is 36+36, 3:1 is 54+18)
    # https://docs.aws.amazon.com/batch/latest/userguide/fair-share-scheduling.html: "jobs that use a
    # share identifier with a weight factor of 0.125 (1/8) are assigned eight times the compute
    # resources of jobs that use a share identifier with a weight factor of 1"
    sim = make_sim()
    sim.env(limits={"NUM_INSTANCES": 72})
    sim.fair_queue(weights=weights, shareDecaySeconds=600)
    for i in range(3000):
        sim.submit(f"a{i}", shareIdentifier="A", duration=600)
        sim.submit(f"b{i}", shareIdentifier="B", duration=600)
    # WHEN a long stretch runs
    sim.run(until=20000)
    held = sim.model.share_instance_seconds(sim.model.queues["q"])
    # THEN the instance-seconds follow the inverse weights
    assert held["A"] / held["B"] == pytest.approx(expected_ratio, rel=0.02)


def test_three_shares_arriving_together_leave_an_eighth_reserved(make_sim) -> None:
    sim = make_sim()
    sim.env(limits={"NUM_INSTANCES": 8})
    sim.fair_queue(computeReservation=50)
    for share in "ABC":
        for i in range(8):
            sim.submit(f"{share}{i}", shareIdentifier=share, duration=10**6)
    sim.run(until=1)
    assert [holding(sim, s) for s in "ABC"] == [3, 2, 2]


@pytest.mark.parametrize(
    ("shares", "held"),
    [("A", 4), ("AB", 6), ("ABC", 7)],
    ids=[
        "computeReservation 50 with one active share keeps 50 percent free",
        "computeReservation 50 with two active shares keeps 25 percent free",
        "computeReservation 50 with three active shares keeps 12.5 percent free",
    ],
)
def test_compute_reservation_by_active_shares(make_sim, shares: str, held: int) -> None:
    sim = make_sim()
    sim.env(limits={"NUM_INSTANCES": 8})
    sim.fair_queue(computeReservation=50)
    for step, share in enumerate(shares):
        for i in range(8):
            sim.submit(f"{share}{i}", shareIdentifier=share, duration=10**6)
        sim.run(until=step + 1)
    assert sum(holding(sim, s) for s in shares) == held
    assert holding(sim, shares[-1]) >= 1  # the newcomer gets the capacity the reservation released


def test_priority_orders_jobs_within_a_share(make_sim) -> None:
    # GIVEN a busy instance, then LOWPRI, MIDPRI and HIGHPRI jobs in that order
    sim = make_sim()
    sim.env(limits={"NUM_INSTANCES": 1})
    sim.fair_queue()
    sim.submit("blocker", shareIdentifier="A")
    sim.run(until=1)
    for name, prio in (("low", 10), ("mid", 50), ("high", 90)):
        sim.submit(name, shareIdentifier="A", schedulingPriority=prio)
    sim.run()
    # THEN HIGHPRI runs first though it came last
    assert dispatched_order(sim) == ["blocker", "high", "mid", "low"]


def test_update_service_job_reorders_within_a_share(make_sim) -> None:
    sim = make_sim()
    sim.env(limits={"NUM_INSTANCES": 1})
    sim.fair_queue()
    sim.submit("blocker", shareIdentifier="A")
    sim.run(until=1)
    first = sim.submit("first", shareIdentifier="A", schedulingPriority=5)
    second = sim.submit("second", shareIdentifier="A", schedulingPriority=5)
    sim.batch.update_service_job(jobId=second, schedulingPriority=6)
    sim.run()
    assert dispatched_order(sim) == ["blocker", "second", "first"]
    assert sim.job(first)["schedulingPriority"] == 5


def test_fifo_queue_runs_in_submission_order_whatever_the_priority(make_sim) -> None:
    sim = make_sim()
    sim.env(limits={"NUM_INSTANCES": 1})
    sim.queue()
    for name, prio in (("a", 1), ("b", 99), ("c", 50)):
        sim.submit(name, schedulingPriority=prio)
    sim.run()
    assert dispatched_order(sim) == ["a", "b", "c"]


def test_higher_priority_queue_is_dispatched_first_on_a_shared_environment(make_sim) -> None:
    sim = make_sim()
    sim.env(limits={"NUM_INSTANCES": 1})
    sim.queue("low", priority=1)
    sim.queue("high", priority=10)
    sim.submit("l1", queue="low")
    sim.submit("h1", queue="high")
    sim.submit("l2", queue="low")
    sim.submit("h2", queue="high")
    sim.run()
    assert dispatched_order(sim) == ["h1", "h2", "l1", "l2"]


@pytest.mark.parametrize(
    ("hol", "small_waits"),
    [(True, True), (False, False)],
    ids=[
        "with head-of-line blocking a job that does not fit holds back the ones behind it",
        "without head-of-line blocking a smaller job behind it goes ahead",
    ],
)
def test_head_of_line_blocking_switch(make_sim, hol: bool, small_waits: bool) -> None:
    sim = make_sim(head_of_line_blocking=hol)
    sim.env(limits={"NUM_INSTANCES": 4})
    sim.queue()
    sim.submit("big-running", count=3)
    sim.run(until=1)
    big = sim.submit("big-waiting", count=2)
    small = sim.submit("small", count=1)
    sim.run(until=2)
    assert sim.status(big) == "RUNNABLE"
    assert (sim.status(small) == "RUNNABLE") is small_waits


def test_fair_share_never_preempts(make_sim) -> None:
    # GIVEN share B holds all capacity WHEN a favoured share A arrives THEN B's jobs run to the end
    sim = make_sim()
    sim.env(limits={"NUM_INSTANCES": 2})
    sim.fair_queue(weights={"A": 0.01, "B": 100})
    b = [sim.submit(f"b{i}", shareIdentifier="B", duration=500) for i in range(2)]
    sim.run(until=5)
    a = sim.submit("a0", shareIdentifier="A")
    sim.run(until=400)
    assert [sim.status(j) for j in b] == ["RUNNING", "RUNNING"]
    assert sim.status(a) == "RUNNABLE"
    sim.run()
    assert ("b0", "RUNNABLE") not in sim.batch_trace()[2:]
    assert sim.status(a) == "SUCCEEDED"


def test_fair_share_is_work_conserving(make_sim) -> None:
    sim = make_sim()
    sim.env(limits={"NUM_INSTANCES": 4})
    sim.fair_queue(weights={"A": 999, "B": 0.0001})
    for i in range(6):
        sim.submit(f"a{i}", shareIdentifier="A", duration=10**5)
    sim.run(until=1)
    assert holding(sim, "A") == 4


def test_usage_weighting_by_instances_is_a_switch(make_sim) -> None:
    # GIVEN A runs one 4-instance job and B one 1-instance job; then one instance frees up
    def next_share(by_instances: bool) -> str:
        sim = make_sim(usage_by_instances=by_instances)
        sim.env(limits={"NUM_INSTANCES": 6})
        sim.fair_queue()
        sim.submit("a-big", shareIdentifier="A", count=4, duration=10**5)
        sim.submit("b-small", shareIdentifier="B", count=1, duration=10**5)
        sim.submit("filler", shareIdentifier="C", count=1, duration=1000)
        sim.run(until=100)
        sim.submit("a-next", shareIdentifier="A")
        sim.submit("b-next", shareIdentifier="B")
        sim.run(until=1100)
        return next(n for n, s in sim.batch_trace() if s == "SCHEDULED" and n.endswith("-next"))

    # THEN by instances the lighter user B goes next; by job count A (which started first) ties and wins
    assert next_share(True) == "b-next"
    assert next_share(False) == "a-next"
